'use strict';
// The JSON API against a real server, as each kind of role.
const { test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const http = require('http');
const h = require('../test-support/helpers');

let dash;
before(async () => {
  if (h.noServer) return;
  await h.setupRoles();
  dash = await h.startDashboard();
});
after(async () => {
  if (dash) await dash.stop();
  await h.closeSql();
});

const opts = { skip: h.noServer };

test('a bad password is 401 with the server\'s message, and sets no session', opts, async () => {
  const a = new h.Agent(dash.url);
  const r = await a.post('/api/login', { user: h.ROLES.admin[0], password: 'wrong' });
  assert.equal(r.status, 401);
  assert.match(r.body.error, /password authentication failed/);
  assert.equal(a.cookie, null);
  const again = await a.get('/api/queues');
  assert.equal(again.status, 401);
});

test('the session cookie is HttpOnly and SameSite=Strict; the connection is named', opts, async () => {
  const a = new h.Agent(dash.url);
  await a.login('admin');
  assert.match(a.setCookie, /HttpOnly/);
  assert.match(a.setCookie, /SameSite=Strict/);
  const rows = await h.sql(`SELECT count(*)::int AS n FROM pg_stat_activity
                            WHERE usename = $1 AND application_name = 'jobqueue-dashboard'`, [h.ROLES.admin[0]]);
  assert.ok(rows[0].n >= 1);
});

test('a monitor sees queues and jobs but gets 403 with the database\'s message on retry, cancel and pause', opts, async () => {
  const { q, ids } = await h.makeQueue('mon', { dead: 2, ready: 1 });
  const a = new h.Agent(dash.url);
  const login = await a.login('monitor');
  assert.equal(login.body.privileges.retry, false);
  assert.equal(login.body.privileges.pause, false);
  const queues = await a.get('/api/queues');
  assert.equal(queues.status, 200);
  const row = queues.body.queues.find((x) => x.queue_name === q);
  assert.equal(row.dead, 2);
  assert.equal(row.ready, 1);
  const jobs = await a.get(`/api/jobs?queue=${q}&status=dead`);
  assert.equal(jobs.status, 200, jobs.text);
  assert.deepEqual(jobs.body.jobs.map((j) => Number(j.id)).sort(), [...ids].sort());
  assert.equal(jobs.body.jobs[0].last_error_code, 'HTTP_503');

  for (const [p, fn] of [[`/api/jobs/${ids[0]}/retry`, 'jq_retry'], [`/api/jobs/${ids[0]}/cancel`, 'jq_cancel'],
    [`/api/queues/${q}/pause`, 'jq_pause_queue'], [`/api/queues/${q}/retry-dead`, 'jq_retry_dead']]) {
    const r = await a.post(p);
    assert.equal(r.status, 403, `${p}: ${r.text}`);
    assert.equal(r.body.sqlstate, '42501');
    assert.match(r.body.error, new RegExp(`permission denied for function ${fn}`));
  }
  const still = await h.sql('SELECT status::text FROM jobqueue.jobs WHERE id = $1', [ids[0]]);
  assert.equal(still[0].status, 'dead');
  const paused = await h.sql('SELECT paused FROM jobqueue.queues WHERE queue_name = $1', [q]);
  assert.equal(paused[0].paused, false);
});

test('an admin replays a dead job, and it is pending afterwards', opts, async () => {
  const { q, ids } = await h.makeQueue('adm', { dead: 1 });
  const a = new h.Agent(dash.url);
  await a.login('admin');
  const before = await a.get(`/api/jobs/${ids[0]}`);
  assert.equal(before.body.job.status, 'dead');
  const r = await a.post(`/api/jobs/${ids[0]}/retry`, { queue: q });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.retried, true);
  const after = await a.get(`/api/jobs/${ids[0]}`);
  assert.equal(after.body.job.status, 'pending');
  const db = await h.sql('SELECT status::text, errors -> -1 ->> \'by\' AS by FROM jobqueue.jobs WHERE id = $1', [ids[0]]);
  assert.deepEqual(db[0], { status: 'pending', by: h.ROLES.admin[0] }, 'the replay ran as the logged-in role');
  // the overview's shared copy of queue_stats is read again for the queue named
  await h.waitFor(async () => {
    const row = (await a.get('/api/queues')).body.queues.find((x) => x.queue_name === q);
    return row && row.dead === 0 && row.ready === 1;
  }, 'the overview to show the replay');
});

test('an admin replays a group of dead letters by error code and pauses and resumes a queue', opts, async () => {
  const { q } = await h.makeQueue('grp', { dead: 3, code: 'SMTP_TIMEOUT' });
  const a = new h.Agent(dash.url);
  await a.login('admin');
  const groups = await a.get(`/api/dead-letters?queue=${q}`);
  assert.equal(groups.status, 200, groups.text);
  assert.equal(groups.body.groups.length, 1);
  assert.equal(groups.body.groups[0].error_code, 'SMTP_TIMEOUT');
  assert.equal(Number(groups.body.groups[0].count), 3);
  const other = await a.post(`/api/queues/${q}/retry-dead`, { error_code: 'NOT_THIS', max_jobs: 10 });
  assert.equal(other.body.replayed, 0);
  const r = await a.post(`/api/queues/${q}/retry-dead`, { error_code: 'SMTP_TIMEOUT', max_jobs: 2 });
  assert.equal(r.body.replayed, 2);
  const left = await h.sql(`SELECT count(*)::int AS n FROM jobqueue.jobs WHERE queue_name = $1 AND status = 'dead'`, [q]);
  assert.equal(left[0].n, 1);
  assert.equal((await a.post(`/api/queues/${q}/pause`)).status, 200);
  assert.equal((await h.sql('SELECT paused FROM jobqueue.queues WHERE queue_name = $1', [q]))[0].paused, true);
  assert.equal((await a.post(`/api/queues/${q}/resume`)).status, 200);
  assert.equal((await h.sql('SELECT paused FROM jobqueue.queues WHERE queue_name = $1', [q]))[0].paused, false);
});

test('POSTs without the CSRF token, with a wrong one or from another origin are refused', opts, async () => {
  const { ids } = await h.makeQueue('csrf', { dead: 1 });
  const a = new h.Agent(dash.url);
  await a.login('admin');
  const none = await a.post(`/api/jobs/${ids[0]}/retry`, {}, { csrf: false });
  assert.equal(none.status, 403);
  assert.match(none.body.error, /CSRF/);
  const wrong = await a.post(`/api/jobs/${ids[0]}/retry`, {}, { csrf: false, headers: { 'X-CSRF-Token': 'x'.repeat(43) } });
  assert.equal(wrong.status, 403);
  const foreign = await a.post(`/api/jobs/${ids[0]}/retry`, {}, { headers: { Origin: 'http://evil.example' } });
  assert.equal(foreign.status, 403);
  const logout = await a.post('/api/logout', {}, { csrf: false });
  assert.equal(logout.status, 403);
  const db = await h.sql('SELECT status::text FROM jobqueue.jobs WHERE id = $1', [ids[0]]);
  assert.equal(db[0].status, 'dead', 'nothing changed');
});

test('logout ends the session and closes its connection', opts, async () => {
  const a = new h.Agent(dash.url);
  await a.login('admin');
  const cookie = a.cookie;
  assert.equal((await a.post('/api/logout')).status, 200);
  a.cookie = cookie;
  assert.equal((await a.get('/api/queues')).status, 401);
});

test('a role without grants logs in and gets 403 with the database\'s message', opts, async () => {
  const a = new h.Agent(dash.url);
  const login = await a.login('nobody');
  assert.equal(login.body.privileges.queue_stats, false);
  const r = await a.get('/api/queues');
  assert.equal(r.status, 403);
  assert.match(r.body.error, /permission denied for schema jobqueue/);
});

test('hostile parameters are refused before any query', opts, async () => {
  const a = new h.Agent(dash.url);
  await a.login('admin');
  for (const p of ["/api/jobs?queue=x';DROP TABLE t;--", '/api/jobs?queue=q&status=nope', '/api/jobs?queue=q&limit=100000',
    '/api/jobs?queue=q&before_id=-1', '/api/jobs/1e3', '/api/jobs?queue=q&bogus=1', '/api/queues/%E0%A4%A']) {
    const r = await a.get(p);
    assert.equal(r.status, 400, `${p}: ${r.text}`);
  }
  const notJson = await a.request('POST', '/api/jobs/1/retry', { headers: { 'Content-Type': 'text/plain', 'X-CSRF-Token': a.csrf } });
  assert.ok([200, 400, 415].includes(notJson.status));
  const form = await fetch(`${dash.url}/api/jobs/1/retry`, {
    method: 'POST', headers: { Cookie: a.cookie, 'X-CSRF-Token': a.csrf, 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'a=1' });
  assert.equal(form.status, 415);
});

test('the event stream tells a session about a replay made by another', opts, async () => {
  const { q, ids } = await h.makeQueue('sse', { dead: 1 });
  const watcher = new h.Agent(dash.url);
  await watcher.login('monitor');
  const actor = new h.Agent(dash.url);
  await actor.login('admin');
  const got = new Promise((resolve, reject) => {
    const req = http.get(`${dash.url}/api/events`, { headers: { Cookie: watcher.cookie } }, (res) => {
      assert.equal(res.headers['content-type'], 'text/event-stream; charset=utf-8');
      let buf = '';
      res.on('data', (d) => {
        buf += d;
        if (buf.includes('event: hello') && !req.asked) {
          req.asked = true;
          actor.post(`/api/jobs/${ids[0]}/retry`).catch(reject);
        }
        const m = /event: change\ndata: (.*)\n/.exec(buf);
        if (m && (JSON.parse(m[1]).queues === null || JSON.parse(m[1]).queues.includes(q))) {
          req.destroy();
          resolve(JSON.parse(m[1]));
        }
      });
    });
    req.on('error', () => {});
  });
  const ev = await got;
  assert.ok(ev.source);
});

test('the static pages carry a script-only-from-self policy', opts, async () => {
  const r = await fetch(`${dash.url}/`);
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-security-policy'), /script-src 'self'/);
  const html = await r.text();
  assert.doesNotMatch(html, /https?:\/\//, 'no external fonts, scripts or styles');
});

test('it refuses a non-loopback address without TLS, and a DSN with a user in it', opts, async () => {
  const r = await h.runDashboard(['--listen', '0.0.0.0:0', '--dsn', h.DSN]);
  assert.notEqual(r.code, 0);
  assert.match(r.out, /refusing to listen on 0\.0\.0\.0 without TLS/);
  const u = await h.runDashboard(['--listen', '127.0.0.1:0', '--dsn', 'postgresql://bob:pw@127.0.0.1/x']);
  assert.notEqual(u.code, 0);
  assert.match(u.out, /must not contain a user or a password/);
});
