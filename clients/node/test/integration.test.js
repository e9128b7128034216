'use strict';
// Against the real server (JQ_TEST_DSN): producer and worker.
const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const pg = require('pg');
const { Client, Worker, PermanentError, RetryLater } = require('..');
const { DSN, noServer, db, q1, makeQueue, statusCounts, waitFor, sameCounts, closeDb } = require('../test-support/helpers');

after(closeDb);

const quiet = { debug() {}, info() {}, warn() {}, error: console.error };

test('enqueue in the caller\'s transaction', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  const conn = new pg.Client({ connectionString: DSN });
  await conn.connect();
  await conn.query('BEGIN');
  const id = await client.enqueue(q, { order: 42 }, { client: conn });
  const ids = await client.enqueueMany(q, [{ n: 1 }, { n: 2 }], { client: conn });
  assert.ok(id > 0 && ids.length === 2);
  await conn.query('ROLLBACK');
  assert.deepEqual(await statusCounts(q), {}); // rolled back: no job
  await conn.query('BEGIN');
  const kept = await client.enqueue(q, { order: 43 }, { client: conn });
  await conn.query('COMMIT');
  await conn.end();
  assert.equal(Number(await q1('SELECT id FROM jobqueue.jobs WHERE queue_name = $1', [q])), kept);
  await client.end();
});

test('enqueue options', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  const a = await client.enqueue(q, { a: 1 }, { priority: 7, runAt: 3600, maxAttempts: 2, idempotencyKey: 'key-1' });
  assert.equal(await client.enqueue(q, { a: 2 }, { idempotencyKey: 'key-1' }), a);
  const ids = await client.enqueueMany(q, [0, 1, 2, 3, 4].map((i) => ({ i })), { priority: 3 });
  assert.deepEqual(ids, [...ids].sort((x, y) => x - y));
  const row = (await db().query(
    "SELECT priority, max_attempts, idempotency_key, payload, available_at > now() + interval '3500 s' AS later FROM jobqueue.jobs WHERE id = $1",
    [a],
  )).rows[0];
  assert.deepEqual(row, { priority: 7, max_attempts: 2, idempotency_key: 'key-1', payload: { a: 1 }, later: true });
  const res = await db().query('SELECT (payload->>\'i\')::int AS i FROM jobqueue.jobs WHERE id = ANY($1) ORDER BY id', [ids]);
  assert.deepEqual(res.rows.map((r) => r.i), [0, 1, 2, 3, 4]);
  await assert.rejects(client.enqueue('no-such-queue-xyz', {}), { code: '42704' });
  await client.end();
});

test('a worker drains 2,000 jobs: retries, a permanent failure, heartbeats, a lost lease', { skip: noServer }, async () => {
  const q = await makeQueue('node', { maxAttempts: 5, leaseDuration: 2 });
  const payloads = [];
  for (let i = 0; i < 2000; i++) {
    let kind = 'ok';
    if (i % 100 === 50) kind = 'flaky';
    else if (i === 7) kind = 'permanent';
    else if (i === 11) kind = 'long';
    else if (i === 13) kind = 'lost';
    payloads.push({ n: i, kind });
  }
  const client = new Client({ connectionString: DSN });
  const ids = await client.enqueueMany(q, payloads);
  await client.end();
  const kind = new Map(ids.map((id, i) => [id, payloads[i].kind]));
  const of = (k) => ids.filter((id) => kind.get(id) === k);
  const [permanent] = of('permanent');
  const [long] = of('long');
  const [lost] = of('lost');
  const successes = new Map();
  const started = new Set();
  const told = new Map();

  const handler = async (job) => {
    started.add(job.id);
    const k = job.payload.kind;
    if (k === 'flaky' && job.attempt === 1) throw new Error('first attempt fails');
    if (k === 'permanent') throw new PermanentError('cannot be done', { code: 'BAD_PAYLOAD' });
    if (k === 'long') await new Promise((r) => setTimeout(r, 3500)); // past the 2 s lease
    if (k === 'lost') {
      await new Promise((resolve) => {
        const t = setTimeout(resolve, 30000);
        job.signal.addEventListener('abort', () => {
          clearTimeout(t);
          told.set(job.id, job.signal.reason);
          resolve();
        });
      });
      return;
    }
    successes.set(job.id, (successes.get(job.id) || 0) + 1);
  };
  const w = new Worker({ connectionString: DSN, queue: q, handler, concurrency: 4, batchSize: 10, pollInterval: 500, handleSignals: false, logger: quiet });
  await w.start();
  try {
    await waitFor(() => started.has(lost), 'the lost job to start');
    assert.equal(await q1('SELECT jobqueue.jq_cancel($1)', [lost]), true);
    await waitFor(() => told.has(lost), "the lost job's handler to be told");
    await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 1998, dead: 1, cancelled: 1 }), 'every job to be finished');
  } finally {
    await w.stop();
  }
  assert.equal(told.get(lost), 'lease lost');
  for (const id of ids) {
    if (['ok', 'flaky', 'long'].includes(kind.get(id))) assert.equal(successes.get(id), 1, `job ${id} succeeded once`);
  }
  assert.equal(successes.size, 1998);
  const rows = new Map((await db().query(
    'SELECT id, status::text AS status, attempt_count, last_error_code, errors FROM jobqueue.jobs WHERE queue_name = $1', [q],
  )).rows.map((r) => [Number(r.id), r]));
  for (const id of of('flaky')) {
    const r = rows.get(id);
    assert.deepEqual([r.status, r.attempt_count, r.last_error_code], ['succeeded', 2, 'Error']);
  }
  const p = rows.get(permanent);
  assert.deepEqual([p.status, p.attempt_count, p.last_error_code], ['dead', 1, 'BAD_PAYLOAD']);
  assert.equal(p.errors.at(-1).retryable, false);
  assert.deepEqual([rows.get(long).status, rows.get(long).attempt_count, rows.get(long).last_error_code], ['succeeded', 1, null]);
  assert.equal(rows.get(lost).status, 'cancelled');
  const s = w.stats;
  assert.deepEqual([s.completed, s.failed, s.lost, s.fenced, s.claimed], [1998, 21, 1, 1, 2020]);
  assert.ok(s.heartbeats >= 1);
});

test('results are stored; completions ride on the next claim', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  await client.enqueueMany(q, Array.from({ length: 300 }, (_, n) => ({ n })));
  await client.end();
  const calls = [];
  class Counting extends Worker {
    async _completeAndClaim(results, n, q) {
      calls.push([results.length, n]);
      return super._completeAndClaim(results, n, q);
    }
  }
  const handler = async (job) => (job.payload.n % 3 === 0 ? undefined : { double: 2 * job.payload.n });
  const w = new Counting({ connectionString: DSN, queue: q, handler, concurrency: 4, batchSize: 20, pollInterval: 200, handleSignals: false, logger: quiet });
  await w.start();
  try {
    await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 300 }), '300 jobs');
  } finally {
    await w.stop();
  }
  assert.deepEqual([w.stats.completed, w.stats.fenced], [300, 0]);
  assert.ok(calls.length > 0 && calls.every(([, n]) => n > 0));
  assert.ok(calls.reduce((a, [k]) => a + k, 0) >= 200, 'most completions rode on a claim');
  const res = await db().query("SELECT (payload->>'n')::int AS n, result FROM jobqueue.jobs WHERE queue_name = $1", [q]);
  assert.equal(res.rows.length, 300);
  for (const r of res.rows) assert.deepEqual(r.result, r.n % 3 === 0 ? null : { double: 2 * r.n });
});

test('a result too large fails only its job', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  const ids = await client.enqueueMany(q, Array.from({ length: 10 }, (_, i) => ({ big: i === 3 })));
  await client.end();
  const handler = async (job) => (job.payload.big ? { blob: 'x'.repeat(5000) } : { ok: true });
  const w = new Worker({
    connectionString: DSN, queue: q, handler, concurrency: 2, batchSize: 10, pollInterval: 200, handleSignals: false, logger: quiet,
    pgOptions: { options: '-c jobqueue.max_result_size=1000' },
  });
  await w.start();
  try {
    await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 9, dead: 1 }), 'the batch');
  } finally {
    await w.stop();
  }
  const rows = new Map((await db().query(
    'SELECT id, status::text AS status, last_error_code, result FROM jobqueue.jobs WHERE queue_name = $1', [q],
  )).rows.map((r) => [Number(r.id), r]));
  assert.deepEqual([rows.get(ids[3]).status, rows.get(ids[3]).last_error_code], ['dead', 'RESULT_TOO_LARGE']);
  for (const id of ids) {
    if (id !== ids[3]) assert.deepEqual([rows.get(id).status, rows.get(id).result], ['succeeded', { ok: true }]);
  }
  assert.deepEqual([w.stats.completed, w.stats.failed], [9, 1]);
});

test('RetryLater sets the retry delay', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  const id = await client.enqueue(q, {});
  await client.end();
  const w = new Worker({
    connectionString: DSN, queue: q, concurrency: 1, batchSize: 1, pollInterval: 200, handleSignals: false, logger: quiet,
    handler: async () => { throw new RetryLater('rate limited', { retryIn: 120, code: 'HTTP_429' }); },
  });
  await w.start();
  await waitFor(async () => (await q1('SELECT last_error_code FROM jobqueue.jobs WHERE id = $1', [id])) === 'HTTP_429', 'the failure');
  await w.stop();
  assert.equal(await q1("SELECT status::text || ':' || (available_at > now() + interval '100 s')::text FROM jobqueue.jobs WHERE id = $1", [id]), 'pending:true');
});

test('a worker reconnects after losing its connections', { skip: noServer }, async () => {
  const q = await makeQueue();
  const client = new Client({ connectionString: DSN });
  await client.enqueueMany(q, Array.from({ length: 50 }, (_, i) => ({ i })));
  const app = `jqtest-${q}`;
  const seen = new Set();
  const w = new Worker({
    connectionString: DSN, queue: q, concurrency: 2, batchSize: 5, pollInterval: 200, handleSignals: false, logger: quiet,
    reconnectBase: 50, reconnectMax: 200, pgOptions: { application_name: app },
    handler: async (job) => { seen.add(job.id); },
  });
  await w.start();
  try {
    await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 50 }), 'the first 50 jobs');
    await waitFor(async () => Number(await q1('SELECT count(*) FROM pg_stat_activity WHERE application_name = $1', [app])) === 2, 'both connections');
    assert.equal(Number(await q1('SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1', [app])), 2);
    await client.enqueueMany(q, Array.from({ length: 50 }, (_, i) => ({ i: 50 + i })));
    await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 100 }), 'the next 50 jobs');
    await waitFor(async () => Number(await q1('SELECT count(*) FROM pg_stat_activity WHERE application_name = $1', [app])) === 2, 'both connections to come back');
  } finally {
    await w.stop();
    await client.end();
  }
  assert.equal(seen.size, 100);
});

/** A worker process (test-support/worker_proc.js), its output collected. */
function proc(queue, concurrency, batch, shutdownMs) {
  const p = spawn(process.execPath, [path.join(__dirname, '..', 'test-support', 'worker_proc.js'), DSN, queue, concurrency, batch, shutdownMs], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = [];
  let buf = '';
  p.stdout.on('data', (d) => {
    buf += d;
    const parts = buf.split('\n');
    buf = parts.pop();
    lines.push(...parts);
  });
  const exited = new Promise((resolve) => p.on('exit', (code, signal) => resolve({ code, signal })));
  const ids = (word) => new Set(lines.filter((l) => l.startsWith(word + ' ')).map((l) => Number(l.split(' ')[1])));
  return { p, lines, exited, ids };
}

test('SIGTERM releases the unfinished jobs at once', { skip: noServer }, async () => {
  const q = await makeQueue('node', { leaseDuration: 60 }); // a release, not the reaper, must free them
  const client = new Client({ connectionString: DSN });
  const quick = [await client.enqueue(q, { sleep: 1.5 }, { priority: 10 }), await client.enqueue(q, { sleep: 1.5 }, { priority: 10 })];
  const slow = await client.enqueueMany(q, Array(10).fill({ sleep: 60 }));
  await client.end();
  const w = proc(q, 4, 4, 3000);
  try {
    await waitFor(async () => w.ids('start').size >= 4 && (await statusCounts(q)).running === 8, '4 running handlers and 4 waiting');
    const t0 = Date.now();
    w.p.kill('SIGTERM');
    assert.deepEqual(await w.exited, { code: 0, signal: null });
    assert.ok(Date.now() - t0 < 10000);
  } finally {
    w.p.kill('SIGKILL');
  }
  const started = w.ids('start');
  assert.deepEqual([...w.ids('done')].sort(), [...quick].sort());
  assert.deepEqual([...w.ids('cancelled')].sort(), [...started].filter((i) => !quick.includes(i)).sort());
  const rows = new Map((await db().query(
    'SELECT id, status::text AS status, attempt_count, lease_owner, available_at <= now() AS ready FROM jobqueue.jobs WHERE queue_name = $1', [q],
  )).rows.map((r) => [Number(r.id), r]));
  for (const id of quick) assert.equal(rows.get(id).status, 'succeeded');
  for (const id of slow) {
    const r = rows.get(id);
    assert.deepEqual([r.status, r.attempt_count, r.lease_owner, r.ready], ['pending', 0, null, true]);
  }
  const stats = JSON.parse(w.lines.find((l) => l.startsWith('stats ')).slice(6));
  assert.deepEqual([stats.released, stats.completed], [stats.claimed - 2, 2]);
});

test("a killed worker's jobs come back through the reaper and another worker does them", { skip: noServer }, async () => {
  const q = await makeQueue('node', { leaseDuration: 2 });
  const client = new Client({ connectionString: DSN });
  const ids = await client.enqueueMany(q, Array(6).fill({ sleep: 60 }));
  await client.end();
  const w = proc(q, 4, 2, 1000);
  let owner;
  try {
    await waitFor(async () => w.ids('start').size === 4 && (await statusCounts(q)).running === 6, '4 running handlers, 2 waiting');
    owner = w.lines.find((l) => l.startsWith('owner ')).split(' ')[1];
  } finally {
    w.p.kill('SIGKILL');
    await w.exited;
  }
  assert.equal(Number(await q1('SELECT count(*) FROM jobqueue.jobs WHERE queue_name = $1 AND lease_owner = $2', [q, owner])), 6);
  const done = [];
  const w2 = new Worker({ connectionString: DSN, queue: q, concurrency: 4, batchSize: 10, pollInterval: 200, handleSignals: false, logger: quiet, handler: async (job) => { done.push([job.id, job.attempt]); } });
  await w2.start();
  try {
    await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 6 }), 'the reaped jobs to be done by the second worker');
  } finally {
    await w2.stop();
  }
  assert.deepEqual(done.sort(), ids.map((i) => [i, 2]).sort());
  for (const r of (await db().query('SELECT errors FROM jobqueue.jobs WHERE queue_name = $1', [q])).rows) {
    assert.deepEqual(r.errors.map((e) => [e.code, e.owner]), [['LEASE_EXPIRED', owner]]);
  }
});

test('the five-minute start of the README runs', { skip: noServer }, () => {
  const root = path.join(__dirname, '..');
  const example = fs.readFileSync(path.join(root, 'examples', 'quickstart.js'), 'utf8').trim();
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  assert.ok(readme.includes(example), 'README.md contains examples/quickstart.js verbatim');
  const out = execFileSync(process.execPath, [path.join(root, 'examples', 'quickstart.js')], {
    env: { ...process.env, JOBQUEUE_DSN: DSN, NODE_PATH: path.join(root, '..') },
    timeout: 60000,
  }).toString();
  assert.match(out, /sent 3 e-mails/);
});

test('one worker serves several queues over its two connections', { skip: noServer }, async () => {
  const queues = [await makeQueue('nmulti'), await makeQueue('nmulti'), await makeQueue('nmulti')];
  const app = `jqtest-${queues[0]}`;
  const seen = new Map();
  const w = new Worker({
    connectionString: DSN, queue: queues, concurrency: 4, batchSize: 10, handleSignals: false, logger: quiet,
    pollInterval: 600000, // the notifications of each queue must wake it
    pgOptions: { application_name: app },
    handler: async (job) => {
      seen.set(job.id, job.queue);
      return { queue: job.queue };
    },
  });
  const client = new Client({ connectionString: DSN });
  await w.start();
  const ids = new Map();
  try {
    await waitFor(async () => Number(await q1("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND query ~ 'LISTEN'", [app])) === 1, 'the listener');
    for (const q of queues) for (const id of await client.enqueueMany(q, Array.from({ length: 100 }, (_, i) => ({ i })))) ids.set(id, q);
    for (const q of queues) await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 100 }), `the jobs of ${q}`);
    // Later jobs of one queue alone wake it too.
    const late = await client.enqueue(queues[2], { late: true });
    ids.set(late, queues[2]);
    await waitFor(async () => (await q1('SELECT status::text FROM jobqueue.jobs WHERE id = $1', [late])) === 'succeeded', 'the late job');
    assert.equal(Number(await q1('SELECT count(*) FROM pg_stat_activity WHERE application_name = $1', [app])), 2);
  } finally {
    await w.stop();
    await client.end();
  }
  assert.equal(seen.size, 301);
  for (const [id, q] of ids) assert.equal(seen.get(id), q);
  const owners = await db().query('SELECT DISTINCT lease_owner FROM jobqueue.jobs WHERE queue_name = ANY($1)', [queues]);
  assert.deepEqual(owners.rows.map((r) => r.lease_owner), [w.owner]);
  assert.deepEqual([w.stats.completed, w.stats.failed], [301, 0]);
});
