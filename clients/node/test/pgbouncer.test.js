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
