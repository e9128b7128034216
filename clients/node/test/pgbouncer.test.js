'use strict';
// Through PgBouncer in transaction pooling mode (JQ_TEST_BOUNCER_DSN), with
// fewer server connections than clients: enqueue (also in a caller's
// transaction), claim, complete, fail, heartbeat and replay; LISTEN on a
// direct connection.
const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const pg = require('pg');
const { Client, Worker, PermanentError } = require('..');
const { DSN, BOUNCER_DSN, noBouncer, db, q1, makeQueue, waitFor, closeDb } = require('../test-support/helpers');

after(closeDb);

test('producer and workers through PgBouncer', { skip: noBouncer }, async () => {
  const q = await makeQueue('nbouncer', { leaseDuration: 2, maxAttempts: 2 });
  const client = new Client({ connectionString: BOUNCER_DSN });
  const conn = new pg.Client({ connectionString: BOUNCER_DSN });
  await conn.connect();
  await conn.query('BEGIN');
  await client.enqueue(q, { kind: 'rolled back' }, { client: conn });
  await conn.query('ROLLBACK');
  await conn.query('BEGIN');
  await client.enqueue(q, { kind: 'long' }, { client: conn });
  await conn.query('COMMIT');
  await conn.end();
  const ids = await client.enqueueMany(q, Array.from({ length: 300 }, (_, i) => ({ kind: i % 10 === 0 ? 'flaky' : 'ok' })));
  const deadId = await client.enqueue(q, { kind: 'permanent' });
  const runs = new Map();
  let replayed = false;
  const handler = async (job) => {
    runs.set(job.id, (runs.get(job.id) || 0) + 1);
    const k = job.payload.kind;
    if (k === 'flaky' && job.attempt === 1) throw new Error('once');
    if (k === 'permanent' && !replayed) throw new PermanentError('not yet');
    if (k === 'long') await new Promise((r) => setTimeout(r, 3000)); // heartbeats through the pooler
  };
  const quiet = { debug() {}, info() {}, warn() {}, error: console.error };
  const workers = Array.from({ length: 4 }, () => new Worker({
    connectionString: BOUNCER_DSN, listenConnectionString: DSN, queue: q, handler,
    concurrency: 4, batchSize: 10, pollInterval: 500, handleSignals: false, logger: quiet,
  }));
  for (const w of workers) await w.start();
  try {
    await waitFor(async () => (await q1('SELECT status::text FROM jobqueue.jobs WHERE id = $1', [deadId])) === 'dead', 'the permanent failure');
    replayed = true;
    const r = await client.pool.query('SELECT jobqueue.jq_retry($1) AS ok', [deadId]); // the replay, through the pooler
    assert.equal(r.rows[0].ok, true);
    await waitFor(async () => Number(await q1("SELECT count(*) FROM jobqueue.jobs WHERE queue_name = $1 AND status = 'succeeded'", [q])) === 302, 'every job to succeed');
  } finally {
    for (const w of workers) await w.stop();
    await client.end();
  }
  const sum = (k) => workers.reduce((a, w) => a + w.stats[k], 0);
  assert.ok(sum('heartbeats') >= 1);
  assert.equal(sum('fenced'), 0);
  assert.equal(sum('completed'), 302);
  ids.forEach((id, i) => assert.equal(runs.get(id), i % 10 === 0 ? 2 : 1));
  assert.equal(Number(await q1("SELECT count(*) FROM jobqueue.jobs WHERE queue_name = $1 AND payload->>'kind' = 'rolled back'", [q])), 0);
});

// job, schedules and wait through the pooler.  wait() looks by polling
// when it cannot listen: a listening connection whose server refuses it,
// and one through the pooler itself (a LISTEN there lands on whichever
// server connection the statement gets, so its notifications are not
// this client's).
test('job, schedules and wait through PgBouncer', { skip: noBouncer }, async () => {
  const q = await makeQueue('nbouncer-ops', { notifyFinished: true });
  const net = require('node:net');
  const closedPort = await new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
  const unreachable = new URL(DSN);
  unreachable.port = String(closedPort);
  const viaBouncer = new Client({ connectionString: BOUNCER_DSN, pollInterval: 100 });
  const noListen = new Client({ connectionString: BOUNCER_DSN, listenConnectionString: unreachable.href, pollInterval: 100 });
  try {
    // job
    const id = await viaBouncer.enqueue(q, { n: 1 }, { priority: 3 });
    const j = await viaBouncer.job(id);
    assert.equal(j.id, id);
    assert.equal(j.status, 'pending');
    assert.equal(j.priority, 3);
    assert.equal(j.queue, q);
    assert.equal(await viaBouncer.job(-1), null);

    // schedules
    const name = `${q}-nightly`;
    const next = await viaBouncer.schedule(name, q, '0 3 * * *', { s: 1 }, { timezone: 'Europe/Berlin', catchUp: 'all' });
    assert.ok(next instanceof Date);
    const s = (await viaBouncer.schedules()).find((x) => x.name === name);
    assert.ok(s, 'the schedule is listed');
    assert.equal(s.queue, q);
    assert.equal(s.timezone, 'Europe/Berlin');
    assert.equal(s.catchUp, 'all');
    assert.deepEqual(s.payload, { s: 1 });
    assert.equal(s.nextRunAt.getTime(), next.getTime());
    assert.equal(await viaBouncer.unschedule(name), true);
    assert.equal((await viaBouncer.schedules()).some((x) => x.name === name), false);

    // wait: both clients see the job finish, completed on a direct connection
    const waits = [viaBouncer.wait(id, { timeout: 60000 }), noListen.wait(id, { timeout: 60000 })];
    const done = await q1("SELECT jobqueue.jq_complete(id, token, '{\"by\": \"test\"}') FROM jobqueue.jq_claim($1, 1, 'test')", [q]);
    assert.equal(done, true);
    for (const w of await Promise.all(waits)) {
      assert.equal(w.id, id);
      assert.equal(w.status, 'succeeded');
      assert.deepEqual(w.result, { by: 'test' });
    }
    // the one that could not listen has no listening connection
    assert.equal(noListen._listener, null);
    // a timeout still ends a wait that only polls
    const other = await noListen.enqueue(q, { n: 2 });
    await assert.rejects(noListen.wait(other, { timeout: 300 }), (e) => e.name === 'TimeoutError' && e.jobId === other);
  } finally {
    await viaBouncer.end();
    await noListen.end();
  }
});
