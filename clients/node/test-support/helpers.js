'use strict';
// Shared by the tests in test/: the test server (JQ_TEST_DSN, and
// JQ_TEST_BOUNCER_DSN for PgBouncer), queues, and polling waits.
const crypto = require('crypto');
const pg = require('pg');
const { Client } = require('..');

const DSN = process.env.JQ_TEST_DSN;
const BOUNCER_DSN = process.env.JQ_TEST_BOUNCER_DSN;
const noServer = DSN ? false : 'JQ_TEST_DSN is not set (scripts/test_clients.sh sets it)';
const noBouncer = BOUNCER_DSN ? false : 'JQ_TEST_BOUNCER_DSN is not set';

let pool = null;
function db() {
  if (!pool) {
    pool = new pg.Pool({ connectionString: DSN, max: 3 });
    pool.on('error', () => {});
  }
  return pool;
}

async function q1(sql, params = []) {
  const res = await db().query(sql, params);
  return res.rows.length ? Object.values(res.rows[0])[0] : null;
}

/** A new queue with a unique name: 2 s lease, 50-200 ms backoff unless told. */
async function makeQueue(prefix = 'node', policy = {}) {
  const name = `${prefix}-${crypto.randomBytes(5).toString('hex')}`;
  const c = new Client({ connectionString: DSN });
  await c.createQueue(name, { leaseDuration: 2, backoffBase: 0.05, backoffMax: 0.2, ...policy });
  await c.end();
  return name;
}

async function statusCounts(queue) {
  const res = await db().query(
    'SELECT status::text AS s, count(*)::int AS n FROM jobqueue.jobs WHERE queue_name = $1 GROUP BY 1',
    [queue],
  );
  return Object.fromEntries(res.rows.map((r) => [r.s, r.n]));
}

/** Poll cond() (sync or async) until it is truthy; throw after timeout ms. */
async function waitFor(cond, what = 'a condition', timeout = 60000) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function sameCounts(a, b) {
  return JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
}

async function closeDb() {
  if (pool) await pool.end();
  pool = null;
}

module.exports = { DSN, BOUNCER_DSN, noServer, noBouncer, db, q1, makeQueue, statusCounts, waitFor, sameCounts, closeDb };
