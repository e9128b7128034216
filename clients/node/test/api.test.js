'use strict';
// The Client's calls against the real server (JQ_TEST_DSN): every SQL
// function a producer or operator uses, also inside a caller's transaction.
const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const pg = require('pg');
const { Client, Worker, PermanentError } = require('..');
const { DSN, noServer, db, q1, makeQueue, statusCounts, waitFor, sameCounts, closeDb } = require('../test-support/helpers');

after(closeDb);

const quiet = { debug() {}, info() {}, warn() {}, error: console.error };

async function queueRow(q) {
  return (await db().query(
    'SELECT max_attempts, extract(epoch FROM lease_duration)::int AS lease, extract(epoch FROM max_runtime)::int AS runtime, ' +
      'extract(epoch FROM backoff_base)::float8 AS base, extract(epoch FROM backoff_max)::int AS bmax, ' +
      'extract(epoch FROM retention)::int AS retention, paused, notify, notify_finished, group_concurrency, group_ordered, ' +
      'fairness, extract(epoch FROM priority_aging)::int AS aging, rate_limit, rate_burst FROM jobqueue.queues WHERE queue_name = $1',
    [q],
  )).rows[0];
}

/** A worker for q whose handler is h; stopped by the returned function. */
async function worker(q, handler, options = {}) {
  const w = new Worker({ connectionString: DSN, queue: q, handler, concurrency: 2, batchSize: 5, pollInterval: 200, handleSignals: false, logger: quiet, ...options });
  await w.start();
  return w;
}

test('createQueue and alterQueue take every setting of jq_create_queue and jq_alter_queue', { skip: noServer }, async () => {
  const client = new Client({ connectionString: DSN });
  const q = `napi-${process.pid}-${Date.now()}`;
  try {
    await client.createQueue(q, {
      maxAttempts: 3, leaseDuration: 45, maxRuntime: '2 hours', backoffBase: 1.5, backoffMax: 60, retention: 0,
      notifyFinished: true, groupConcurrency: 2, fairness: 'round_robin', priorityAging: 30, rateLimit: 2.5, rateBurst: 5,
    });
    assert.deepEqual(await queueRow(q), {
      max_attempts: 3, lease: 45, runtime: 7200, base: 1.5, bmax: 60, retention: 0, paused: false, notify: true,
      notify_finished: true, group_concurrency: 2, group_ordered: false, fairness: 'round_robin', aging: 30, rate_limit: 2.5, rate_burst: 5,
    });
    await client.alterQueue(q, { groupConcurrency: 0, groupOrdered: true, notify: false, notifyFinished: false, retention: 3600, priorityAging: 0, rateLimit: 0, maxAttempts: 9 });
    const r = await queueRow(q);
    assert.deepEqual(
      [r.group_concurrency, r.group_ordered, r.notify, r.notify_finished, r.retention, r.aging, r.rate_limit, r.max_attempts, r.lease],
      [null, true, false, false, 3600, null, null, 9, 45],
    );
    await client.pause(q);
    assert.equal((await queueRow(q)).paused, true);
    await client.resume(q);
    assert.equal((await queueRow(q)).paused, false);
    await assert.rejects(client.alterQueue(q, { fairness: 'random' }), { code: '22023' });
    await assert.rejects(client.alterQueue(q, { maxAttempt: 3 }), /unknown queue setting: maxAttempt/);
  } finally {
    await client.dropQueue(q, { force: true });
    assert.equal(await q1('SELECT count(*)::int FROM jobqueue.queues WHERE queue_name = $1', [q]), 0);
    await client.end();
  }
});

test('enqueue with groupKey and dependsOn; enqueueMany with groupKeys; job()', { skip: noServer }, async () => {
  const q = await makeQueue('napi', { groupConcurrency: 1 });
  const client = new Client({ connectionString: DSN });
  try {
    const first = await client.enqueue(q, { n: 1 }, { groupKey: 'tenant-a', priority: 4, maxAttempts: 2 });
    const second = await client.enqueue(q, { n: 2 }, { dependsOn: [first], groupKey: 'tenant-b' });
    const many = await client.enqueueMany(q, [{ n: 3 }, { n: 4 }], { groupKeys: ['tenant-a', null], dependsOn: [first, second] });
    const rows = new Map((await db().query(
      "SELECT id, status::text AS status, NULLIF(group_key, '') AS g FROM jobqueue.jobs WHERE queue_name = $1", [q],
    )).rows.map((r) => [Number(r.id), [r.status, r.g]]));
    assert.deepEqual(rows.get(first), ['pending', 'tenant-a']);
    assert.deepEqual(rows.get(second), ['waiting', 'tenant-b']);
    assert.deepEqual(rows.get(many[0]), ['waiting', 'tenant-a']);
    assert.deepEqual(rows.get(many[1]), ['waiting', null]);
    const j = await client.job(second);
    assert.deepEqual(
      [j.id, j.queue, j.status, j.attempt, j.maxAttempts, j.priority, j.result, j.progress, j.lastErrorCode, j.waitingFor, j.startedAt],
      [second, q, 'waiting', 0, 8, 0, null, null, null, [first], null],
    );
    assert.ok(j.createdAt instanceof Date && j.availableAt instanceof Date);
    assert.deepEqual((await client.job(first)).priority, 4);
    assert.equal(await client.job(first + 1e9), null);
    await assert.rejects(client.enqueue(q, {}, { dependsOn: [first + 1e9] }), { code: '23503' });
    await assert.rejects(client.enqueueMany(q, [{}], { groupKeys: ['a', 'b'] }), { code: '2202E' });
  } finally {
    await client.end();
  }
});

test('cancel and retry in the caller\'s transaction: a rollback undoes them', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  const conn = new pg.Client({ connectionString: DSN });
  await conn.connect();
  try {
    const id = await client.enqueue(q, {});
    await conn.query('BEGIN');
    assert.equal(await client.cancel(id, { client: conn }), true);
    assert.equal((await client.job(id, { client: conn })).status, 'cancelled');
    await conn.query('ROLLBACK');
    assert.equal((await client.job(id)).status, 'pending');
    assert.equal(await client.cancel(id), true);
    assert.equal(await client.cancel(id), false);
    await conn.query('BEGIN');
    assert.equal(await client.retry(id, { client: conn, runAt: 3600 }), true);
    await conn.query('ROLLBACK');
    assert.equal((await client.job(id)).status, 'cancelled');
    await conn.query('BEGIN');
    assert.equal(await client.retry(id, { client: conn, runAt: 3600 }), true);
    await conn.query('COMMIT');
    const j = await client.job(id);
    assert.equal(j.status, 'pending');
    assert.ok(j.availableAt.getTime() > Date.now() + 3000 * 1000);
    assert.equal(await client.retry(id), false); // pending: nothing to replay
  } finally {
    await conn.end();
    await client.end();
  }
});

test('deadJobs, jobs and retryDead: dead letters listed, paged and replayed by error code', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  const ids = await client.enqueueMany(q, Array.from({ length: 7 }, (_, i) => ({ code: i < 4 ? 'BAD_INPUT' : 'GONE' })));
  let fixed = false;
  const w = await worker(q, async (job) => {
    if (!fixed) throw new PermanentError('no', { code: job.payload.code });
    return { fixed: true };
  });
  try {
    await waitFor(async () => sameCounts(await statusCounts(q), { dead: 7 }), '7 dead jobs');
    // most recently dead first, in two pages that together hold every dead job once
    const dead = await client.deadJobs(q, { limit: 5 });
    assert.equal(dead.length, 5);
    const rest = await client.deadJobs(q, { limit: 5, ...Client.nextPage(dead) });
    assert.equal(rest.length, 2);
    const all = [...dead, ...rest];
    assert.deepEqual(all.map((j) => j.id).sort((a, b) => a - b), [...ids].sort((a, b) => a - b));
    for (let i = 1; i < all.length; i++) assert.ok(all[i - 1].finishedAt >= all[i].finishedAt, 'most recently finished first');
    const one = all.find((j) => j.payload.code === 'GONE');
    assert.deepEqual([one.status, one.lastErrorCode, one.lastErrorMessage], ['dead', 'GONE', 'no']);
    assert.deepEqual((await client.jobs(q, { errorCode: 'BAD_INPUT' })).map((j) => j.id).sort((a, b) => a - b),
      ids.slice(0, 4).sort((a, b) => a - b));
    fixed = true;
    assert.equal(await client.retryDead(q, { errorCode: 'BAD_INPUT', maxJobs: 3 }), 3);
    assert.equal(await client.retryDead(q, { errorCode: 'BAD_INPUT' }), 1);
    await waitFor(async () => sameCounts(await statusCounts(q), { dead: 3, succeeded: 4 }), 'the replayed jobs');
    assert.equal(await client.retryDead(q), 3);
    await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 7 }), 'every job');
    assert.deepEqual(await client.deadJobs(q), []);
  } finally {
    await w.stop();
    await client.end();
  }
});

test('wait: LISTEN where the queue announces, polling where it does not, a timeout, an unknown job', { skip: noServer }, async () => {
  const announcing = await makeQueue('napi', { notifyFinished: true });
  const silent = await makeQueue('napi');
  const historyless = await makeQueue('napi', { notifyFinished: true, retention: 0 });
  // An hour between looks: only a notification can end the first wait.
  const client = new Client({ connectionString: DSN, pollInterval: 3600 * 1000 });
  const release = new Map();
  const handler = async (job) => {
    await new Promise((r) => release.set(job.id, r));
    if (job.payload.fail) throw new PermanentError('failed on purpose', { code: 'ON_PURPOSE' });
    return { n: job.payload.n };
  };
  const ws = [await worker(announcing, handler), await worker(silent, handler), await worker(historyless, handler)];
  try {
    const a = await client.enqueue(announcing, { n: 1 });
    const dead = await client.enqueue(announcing, { fail: true });
    const waitA = client.wait(a);
    const waitDead = client.wait(dead, { timeout: 600000 });
    await waitFor(() => release.has(a) && release.has(dead), 'the handlers to start');
    assert.equal((await client.job(a)).status, 'running');
    release.get(a)();
    release.get(dead)();
    const done = await waitA;
    assert.deepEqual([done.id, done.status, done.result], [a, 'succeeded', { n: 1 }]);
    const d = await waitDead;
    assert.deepEqual([d.status, d.lastErrorCode], ['dead', 'ON_PURPOSE']);
    assert.equal((await client.wait(a)).status, 'succeeded'); // finished already

    // Without announcements: looks every pollInterval.
    const s = await client.enqueue(silent, { n: 2 });
    const waitS = client.wait(s, { pollInterval: 50 });
    await waitFor(() => release.has(s), 'the silent job to start');
    release.get(s)();
    assert.deepEqual((await waitS).result, { n: 2 });

    // A job of a queue that keeps no history is gone once it succeeds:
    // its announcement says how it ended.
    const h = await client.enqueue(historyless, { n: 3 });
    const waitH = client.wait(h);
    await waitFor(() => release.has(h), 'the historyless job to start');
    release.get(h)();
    assert.deepEqual(await waitH, { id: h, status: 'succeeded' });

    const pending = await client.enqueue(silent, { n: 4 }, { runAt: 3600 });
    await assert.rejects(client.wait(pending, { timeout: 100, pollInterval: 20 }), (e) => e.name === 'TimeoutError' && e.jobId === pending);
    await assert.rejects(client.wait(pending + 1e9), { code: 'JOB_NOT_FOUND' });
    assert.equal(client._waiters.size, 0);
  } finally {
    for (const r of release.values()) r();
    for (const w of ws) await w.stop();
    await client.end();
  }
});

test('setGroupLimit, groupLimits and groupStats', { skip: noServer }, async () => {
  const q = await makeQueue('napi', { groupConcurrency: 4 });
  const client = new Client({ connectionString: DSN });
  try {
    await client.setGroupLimit(q, 'a', { concurrency: 1, weight: 2.5 });
    await client.setGroupLimit(q, 'b', { rateLimit: 3, rateBurst: 5 });
    assert.deepEqual(await client.groupLimits(q), [
      { groupKey: 'a', concurrency: 1, rateLimit: null, rateBurst: null, weight: 2.5 },
      { groupKey: 'b', concurrency: null, rateLimit: 3, rateBurst: 5, weight: null },
    ]);
    await client.setGroupLimit(q, 'b');
    assert.deepEqual((await client.groupLimits(q)).map((g) => g.groupKey), ['a']);
    await client.enqueueMany(q, [{ i: 0 }, { i: 1 }, { i: 2 }], { groupKeys: ['a', 'a', 'c'] });
    assert.equal(await q1("SELECT count(*)::int FROM jobqueue.jq_claim($1, 10, 'n')", [q]), 2);
    const stats = Object.fromEntries((await client.groupStats(q)).map((g) => [g.groupKey, g]));
    assert.deepEqual([stats.a.ready, stats.a.running, stats.c.running, stats.a.usage], [1, 1, 1, null]);
    await assert.rejects(client.setGroupLimit(q, 'a', { concurrency: -1 }), { code: '22023' });
    await assert.rejects(client.setGroupLimit(q, 'a', { limit: 1 }), TypeError);
  } finally {
    await client.end();
  }
});

test('schedule, schedules and unschedule', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  const name = `n-${q}`;
  try {
    const next = await client.schedule(name, q, '0 3 * * *', { report: 'daily' }, { timezone: 'Europe/Berlin', priority: 5, catchUp: 'none' });
    assert.ok(next instanceof Date && next.getTime() > Date.now());
    const s = (await client.schedules()).find((x) => x.name === name);
    assert.deepEqual(
      [s.queue, s.cron, s.timezone, s.enabled, s.catchUp, s.priority, s.payload, s.nextRunAt.getTime(), s.lastRunAt, s.lastJobId],
      [q, '0 3 * * *', 'Europe/Berlin', true, 'none', 5, { report: 'daily' }, next.getTime(), null, null],
    );
    assert.equal(await client.schedule(name, q, '0 3 * * *', {}, { enabled: false }), null);
    assert.equal((await client.schedules()).find((x) => x.name === name).enabled, false);
    await assert.rejects(client.schedule(name, q, 'not cron'), { code: '22023' });
    assert.equal(await client.unschedule(name), true);
    assert.equal(await client.unschedule(name), false);
    assert.equal((await client.schedules()).find((x) => x.name === name), undefined);
  } finally {
    await client.end();
  }
});

test("a handler's failure: a warning with its stack trace by default, and the stack in the job's error history", { skip: noServer }, async () => {
  const q = await makeQueue('napi', { maxAttempts: 1 });
  const client = new Client({ connectionString: DSN });
  const id = await client.enqueue(q, { to: 'bob' });
  class MissingField extends Error {}
  function lookUpAddress(payload) {
    if (!payload.address) throw new MissingField('no address in the payload');
  }
  const warned = [];
  const warn = console.warn;
  console.warn = (...a) => warned.push(a.join(' '));
  let w;
  try {
    // No logger option: the default one.
    w = new Worker({ connectionString: DSN, queue: q, handleSignals: false, pollInterval: 200, handler: async (job) => lookUpAddress(job.payload) });
    await w.start();
    await waitFor(async () => (await client.job(id)).status === 'dead', 'the failure');
  } finally {
    if (w) await w.stop();
    console.warn = warn;
    await client.end();
  }
  const line = warned.find((l) => l.includes(`job ${id} `));
  assert.ok(line, warned.join('\n'));
  assert.match(line, new RegExp(`^jobqueue: job ${id} of queue ${q} failed \\(attempt 1\\): MissingField: no address in the payload\\n`));
  assert.match(line, /\n\s+at lookUpAddress \(.*api\.test\.js:\d+:\d+\)/);
  const e = (await db().query('SELECT errors FROM jobqueue.jobs WHERE id = $1', [id])).rows[0].errors.at(-1);
  assert.deepEqual([e.code, e.message], ['MissingField', 'no address in the payload']);
  assert.match(e.stack, /^Error: no address in the payload\n\s+at lookUpAddress \(.*api\.test\.js:\d+:\d+\)/);
});
