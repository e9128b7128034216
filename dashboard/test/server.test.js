'use strict';
// The process itself: the idle timeout, TLS, the start-up refusal, and the
// listening connection coming back after it was lost.  Each test starts a
// dashboard of its own with the options it needs.
const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const http = require('http');
const https = require('https');
const h = require('../test-support/helpers');

const opts = { skip: h.noServer };
const started = [];
async function start(args) {
  const d = await h.startDashboard(args);
  started.push(d);
  return d;
}
after(async () => {
  for (const d of started) await d.stop();
  await h.closeSql();
});

// Read an event stream until pick(event, data) returns something.
function watchEvents(url, cookie, pick, onHello, ca) {
  return new Promise((resolve, reject) => {
    const lib = url.startsWith('https:') ? https : http;
    const req = lib.get(`${url}/api/events`, { headers: { Cookie: cookie }, ca }, (res) => {
      let buf = '';
      res.on('data', (d) => {
        buf += d;
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev = /^event: (.*)$/m.exec(block);
          const data = /^data: (.*)$/m.exec(block);
          if (!ev || !data) continue;
          const parsed = JSON.parse(data[1]);
          if (ev[1] === 'hello' && onHello) Promise.resolve(onHello()).catch(reject);
          const got = pick(ev[1], parsed);
          if (got) {
            req.destroy();
            resolve(got);
            return;
          }
        }
      });
      res.on('end', () => reject(new Error('the event stream ended')));
    });
    req.on('error', () => {});
  });
}

test('a session idle past --idle-timeout is logged out: its stream hears why, then requests get 401', opts, async () => {
  await h.setupRoles();
  const dash = await start(['--idle-timeout', '2']);
  const a = new h.Agent(dash.url);
  await a.login('monitor');
  assert.equal((await a.get('/api/queues')).status, 200);
  assert.match(a.setCookie, /Max-Age=2\b/);
  // The stream does not count as use; the sweeper ends the session.
  const ended = await watchEvents(dash.url, a.cookie, (ev, data) => ev === 'logout' && data);
  assert.equal(ended.reason, 'idle timeout');
  const r = await a.get('/api/queues');
  assert.equal(r.status, 401);
  assert.match(r.headers.get('set-cookie'), /jqd_session=;.*Max-Age=0/);
});

test('with --tls-cert and --tls-key it serves HTTPS and the session cookie is Secure', opts, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'jqd-tls-'));
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1'],
  { stdio: 'ignore' });
  const ca = fs.readFileSync(cert);
  const dash = await start(['--tls-cert', cert, '--tls-key', key]);
  assert.match(dash.url, /^https:/);
  const call = (method, p, headers, body) => new Promise((resolve, reject) => {
    const req = https.request(dash.url + p, { method, ca, headers }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
  const [user, password] = h.ROLES.monitor;
  const login = await call('POST', '/api/login', { 'Content-Type': 'application/json' }, JSON.stringify({ user, password }));
  assert.equal(login.status, 200, login.text);
  const set = login.headers['set-cookie'][0];
  assert.match(set, /; Secure/);
  assert.match(set, /HttpOnly/);
  const queues = await call('GET', '/api/queues', { Cookie: set.split(';')[0] });
  assert.equal(queues.status, 200, queues.text);
  assert.ok(Array.isArray(JSON.parse(queues.text).queues));
  // plain HTTP on the TLS port gets no answer from the API
  const plain = await new Promise((resolve) => {
    http.get(dash.url.replace('https:', 'http:') + '/api/queues', (res) => resolve(res.statusCode))
      .on('error', () => resolve('refused'));
  });
  assert.notEqual(plain, 200);
  fs.rmSync(dir, { recursive: true, force: true });
});

test('a non-loopback address needs TLS or --insecure-no-tls', opts, async () => {
  for (const host of ['0.0.0.0:0', '[::]:0']) {
    const r = await h.runDashboard(['--listen', host, '--dsn', h.DSN]);
    assert.notEqual(r.code, 0, host);
    assert.match(r.out, /refusing to listen on .* without TLS/, host);
  }
  const d = await start(['--listen', '0.0.0.0:0', '--insecure-no-tls']);
  assert.ok(d.port > 0, 'told explicitly, it starts');
});

test('a lost listening connection comes back with backoff and live updates resume', opts, async () => {
  await h.setupRoles();
  const { q } = await h.makeQueue('relisten');
  const dash = await start([]);
  const actor = new h.Agent(dash.url);
  await actor.login('admin');
  const watcher = new h.Agent(dash.url);
  await watcher.login('monitor');
  assert.equal((await watcher.get('/api/me')).body.live, 'listen');
  // the dedicated listener: the dashboard's backend whose last statement was a LISTEN
  const [listener] = await h.waitFor(async () => {
    const rows = await h.sql(`SELECT pid FROM pg_stat_activity
                              WHERE application_name = 'jobqueue-dashboard' AND usename = $1
                                AND query LIKE 'LISTEN %'`, [h.ROLES.admin[0]]);
    return rows.length === 1 && rows;
  }, 'the listening connection');
  await h.sql('SELECT pg_terminate_backend($1)', [listener.pid]);
  await h.waitFor(async () => (await h.sql('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1',
    [listener.pid]))[0].n === 0, 'the listener to end');
  await h.waitFor(async () => (await watcher.get('/api/me')).body.live === 'listen', 'listening again');
  // A job enqueued outside the dashboard: only LISTEN hears of it as such.
  const ev = await watchEvents(dash.url, watcher.cookie,
    (e, data) => e === 'change' && data.source === 'listen' && data.queues && data.queues.includes(q) && data,
    () => h.sql("SELECT jobqueue.jq_enqueue($1, '{}')", [q]));
  assert.ok(ev.queues.includes(q));
  // both sessions still work
  assert.equal((await actor.get('/api/queues')).status, 200);
});

test('with --poll nothing LISTENs, and the pages still hear of changes from the counters', opts, async () => {
  await h.setupRoles();
  const { q } = await h.makeQueue('polled');
  const dash = await start(['--poll']);
  const watcher = new h.Agent(dash.url);
  await watcher.login('monitor');
  assert.match((await watcher.get('/api/me')).body.live, /^polling/);
  // enqueue until a counter sample has seen one (the samples are 1 s apart)
  let heard = false;
  const ev = await watchEvents(dash.url, watcher.cookie,
    (e, data) => e === 'change' && data.queues && data.queues.includes(q) && data,
    () => h.waitFor(async () => {
      await h.sql("SELECT jobqueue.jq_enqueue($1, '{}')", [q]);
      return heard;
    }, 'a counter sample to see the enqueue'));
  heard = true;
  assert.notEqual(ev.source, 'listen');
});
