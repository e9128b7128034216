'use strict';
// What a worker does with each kind of error (README.md, "Errors"),
// against the real server (JQ_TEST_DSN): a result the server refuses fails
// only its job; a serialization failure is retried; what no retry can fix
// stops the worker at start with a clear message.
const { test, after } = require('node:test');
const assert = require('node:assert/strict');
const pg = require('pg');
const { Client, Worker, FatalError } = require('..');
const { DSN, noServer, db, q1, makeQueue, statusCounts, waitFor, sameCounts, closeDb } = require('../test-support/helpers');

after(closeDb);

/** A logger that keeps what it is given. */
function recorder() {
  const lines = { warn: [], error: [] };
  return {
    lines,
    logger: { debug() {}, info() {}, warn: (...a) => lines.warn.push(a.join(' ')), error: (...a) => lines.error.push(a.join(' ')) },
  };
}

/** A promise and its resolve function. */
function gate() {
  let open;
  const p = new Promise((r) => {
    open = r;
  });
  return { p, open };
}

/**
 * 20 jobs, one claim, one completion call: every handler waits until all
 * 20 have started, then they all finish at once.  The job at index
 * `poison` returns `bad`.
 */
async function poisonBatch(client, q, bad, poison, expect) {
  const ids = await client.enqueueMany(q, Array.from({ length: 20 }, (_, i) => ({ i, poison: i === poison, bad })));
  await waitFor(async () => sameCounts(await statusCounts(q), expect), `the batch (${bad})`, 30000);
  return ids;
}

test('a result jsonb refuses fails only its job; the other 19 of the batch complete and the worker goes on', { skip: noServer }, async () => {
  const q = await makeQueue('npoison', { leaseDuration: 30, maxAttempts: 3 });
  const client = new Client({ connectionString: DSN });
  const runs = new Map();
  let started = 0;
  let all = gate();
  const handler = async (job) => {
    runs.set(job.id, (runs.get(job.id) || 0) + 1);
    if (++started % 20 === 0) all.open();
    await all.p;
    if (job.payload.poison) return { text: job.payload.bad === 'nul' ? 'a\u0000b' : 'lone \ud800 surrogate' };
    return { i: job.payload.i };
  };
  const { lines, logger } = recorder();
  const calls = [];
  class Counting extends Worker {
    async _completeAndClaim(results, n, qq) {
      calls.push(results.length);
      return super._completeAndClaim(results, n, qq);
    }

    async _completeMany(results) {
      calls.push(results.length);
      return super._completeMany(results);
    }
  }
  const w = new Counting({ connectionString: DSN, queue: q, handler, concurrency: 20, batchSize: 20, pollInterval: 200, handleSignals: false, logger });
  let settled = false;
  await w.start();
  w.done.then(() => { settled = true; }, () => { settled = true; });
  const running = () => assert.equal(settled, false, 'the worker is still running');
  const batches = [];
  try {
    // "\u0000" (22P05, unsupported Unicode escape), then a lone surrogate
    // (22P02, invalid input syntax for type json).
    batches.push(await poisonBatch(client, q, 'nul', 5, { succeeded: 19, dead: 1 }));
    running();
    all = gate();
    batches.push(await poisonBatch(client, q, 'surrogate', 13, { succeeded: 38, dead: 2 }));
    running();
  } finally {
    await w.stop();
    await client.end();
  }
  assert.equal(settled, true);
  await assert.doesNotReject(w.done);
  const rows = new Map((await db().query(
    'SELECT id, status::text AS status, attempt_count, last_error_code, errors, result FROM jobqueue.jobs WHERE queue_name = $1', [q],
  )).rows.map((r) => [Number(r.id), r]));
  assert.equal(rows.size, 40);
  for (const [ids, poison, sqlstate] of [[batches[0], 5, '22P05'], [batches[1], 13, '22P02']]) {
    ids.forEach((id, i) => {
      const r = rows.get(id);
      assert.equal(runs.get(id), 1, `job ${id} ran once`);
      if (i === poison) {
        assert.deepEqual([r.status, r.attempt_count, r.last_error_code, r.result], ['dead', 1, 'RESULT_INVALID', null]);
        const e = r.errors.at(-1);
        assert.equal(e.retryable, false);
        assert.match(e.message, new RegExp(`\\(SQLSTATE ${sqlstate}\\)$`));
      } else {
        assert.deepEqual([r.status, r.result], ['succeeded', { i }]);
      }
    });
  }
  assert.deepEqual([w.stats.completed, w.stats.failed, w.stats.fenced], [38, 2, 0]);
  // Each batch: one call with its 20 results (refused), then one per job.
  assert.deepEqual(calls, [20, ...Array(20).fill(1), 20, ...Array(20).fill(1)]);
  assert.equal(lines.warn.filter((l) => /its result was refused/.test(l)).length, 2);
  assert.deepEqual(lines.error, []);
});

test('a serialization failure of the server (40001) is retried: the completion goes through, the job runs once', { skip: noServer }, async () => {
  const q = await makeQueue('nserial', { leaseDuration: 30 });
  const client = new Client({ connectionString: DSN });
  const [id] = await client.enqueueMany(q, [{ n: 1 }]);
  await client.end();
  const app = `jqtest-${q}`;
  const finish = gate();
  let runs = 0;
  const { lines, logger } = recorder();
  // Under REPEATABLE READ, an UPDATE of a row another transaction changed
  // and committed since the statement's snapshot fails with 40001.
  const w = new Worker({
    connectionString: DSN, queue: q, concurrency: 1, batchSize: 1, pollInterval: 200, handleSignals: false, logger,
    reconnectBase: 50, reconnectMax: 100,
    pgOptions: { application_name: app, options: '-c default_transaction_isolation=repeatable\\ read' },
    handler: async () => {
      runs++;
      await finish.p;
      return { ok: true };
    },
  });
  const other = new pg.Client({ connectionString: DSN });
  await other.connect();
  await w.start();
  try {
    await waitFor(async () => (await q1('SELECT status::text FROM jobqueue.jobs WHERE id = $1', [id])) === 'running' && runs === 1, 'the job to run');
    await other.query('BEGIN');
    await other.query("UPDATE jobqueue.jobs SET progress = '{\"touched\": true}' WHERE id = $1", [id]);
    finish.open();
    await waitFor(async () => Number(await q1(
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", [app],
    )) === 1, "the worker's completion to wait for the row");
    await other.query('COMMIT');
    await waitFor(async () => (await q1('SELECT status::text FROM jobqueue.jobs WHERE id = $1', [id])) === 'succeeded', 'the completion, retried');
  } finally {
    await other.end();
    await w.stop();
  }
  await assert.doesNotReject(w.done);
  assert.equal(runs, 1);
  assert.deepEqual(await q1('SELECT result FROM jobqueue.jobs WHERE id = $1', [id]), { ok: true });
  assert.ok(lines.warn.some((l) => /SQLSTATE 40001/.test(l)), lines.warn.join('\n'));
  assert.ok(w.stats.errors >= 1);
  assert.deepEqual([w.stats.completed, w.stats.fenced], [1, 0]);
});

for (const sqlstate of ['40P01', '57014', '55P03']) {
  test(`a transient error of the server (${sqlstate}) in the batch call is retried: every job succeeds at its first attempt`, { skip: noServer }, async () => {
    const q = await makeQueue(`n${sqlstate.toLowerCase()}`, { leaseDuration: 30 });
    const tag = `${q.replace(/[^a-z0-9]/g, '_')}`;
    // Once: a sequence's nextval is not undone by the error's rollback.
    await db().query(`CREATE SEQUENCE public.fail_once_${tag}`);
    await db().query(`CREATE FUNCTION public.fail_once_${tag}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.queue_name = '${q}' AND NEW.status = 'succeeded'
           AND pg_catalog.nextval('public.fail_once_${tag}') = 1 THEN
          RAISE EXCEPTION 'forced by the test' USING ERRCODE = '${sqlstate}';
        END IF;
        RETURN NEW;
      END $$`);
    await db().query(`CREATE TRIGGER fail_once_${tag} BEFORE UPDATE ON jobqueue.jobs FOR EACH ROW EXECUTE FUNCTION public.fail_once_${tag}()`);
    const { lines, logger } = recorder();
    const w = new Worker({
      connectionString: DSN, queue: q, concurrency: 10, batchSize: 10, pollInterval: 200, handleSignals: false, logger,
      reconnectBase: 50, reconnectMax: 100,
      handler: async () => ({ ok: true }),
    });
    try {
      const client = new Client({ connectionString: DSN });
      await client.enqueueMany(q, Array.from({ length: 10 }, (_, i) => ({ i })));
      await client.end();
      await w.start();
      await waitFor(async () => sameCounts(await statusCounts(q), { succeeded: 10 }), 'every job to succeed', 30000);
    } finally {
      await w.stop();
      await db().query(`DROP TRIGGER fail_once_${tag} ON jobqueue.jobs`);
      await db().query(`DROP FUNCTION public.fail_once_${tag}()`);
      await db().query(`DROP SEQUENCE public.fail_once_${tag}`);
    }
    await assert.doesNotReject(w.done);
    assert.equal(Number(await q1('SELECT max(attempt_count) FROM jobqueue.jobs WHERE queue_name = $1', [q])), 1);
    assert.ok(lines.warn.some((l) => new RegExp(`SQLSTATE ${sqlstate}`).test(l)), lines.warn.join('\n'));
    assert.equal(w.stats.completed, 10);
  });
}

/** The start of a worker that must fail: rejects with a FatalError, and done with the same. */
async function startFails(options, code, message) {
  const { lines, logger } = recorder();
  const w = new Worker({ queue: 'nobody', handler: async () => {}, handleSignals: false, logger, reconnectBase: 10, reconnectMax: 20, ...options });
  const err = await w.start().then(() => null, (e) => e);
  if (!err) await w.stop();
  assert.ok(err instanceof FatalError, `start rejects with a FatalError (${err})`);
  assert.equal(err.code, code);
  assert.match(err.message, message);
  await assert.rejects(w.done, (e) => e === err);
  assert.deepEqual(lines.error, [err.message]);
  return err;
}

test('a wrong password stops the worker at start with a clear message', { skip: noServer || !process.env.JQ_TEST_BADPW_DSN }, async () => {
  await startFails({ connectionString: process.env.JQ_TEST_BADPW_DSN }, '28P01', /cannot start.*authentication failed: check the user and password/);
  // The same for the listener's own connection.
  const q = await makeQueue();
  await startFails({ connectionString: DSN, listenConnectionString: process.env.JQ_TEST_BADPW_DSN, queue: q }, '28P01', /listener connection.*authentication failed/);
});

test('an unknown database stops the worker at start with a clear message', { skip: noServer || !process.env.JQ_TEST_NODB_DSN }, async () => {
  await startFails({ connectionString: process.env.JQ_TEST_NODB_DSN }, '3D000', /cannot start.*the database does not exist.*jq_no_such_database/);
});

test('a database without the extension stops the worker at start with a clear message', { skip: noServer || !process.env.JQ_TEST_NOEXT_DSN }, async () => {
  await startFails({ connectionString: process.env.JQ_TEST_NOEXT_DSN }, '42704', /cannot start: extension "jobqueue" is not installed in database "jqnoext" \(CREATE EXTENSION jobqueue\)/);
});

test('an unknown queue stops the worker at start with a clear message', { skip: noServer }, async () => {
  const q = await makeQueue();
  await startFails({ connectionString: DSN, queue: [q, 'no-such-queue-n'] }, '42704', /cannot start: an unknown queue.*no-such-queue-n/);
});
