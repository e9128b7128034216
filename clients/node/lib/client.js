'use strict';

const pg = require('pg');

const QUEUE_POLICY = {
  maxAttempts: 'max_attempts',
  leaseDuration: 'lease_duration',
  maxRuntime: 'max_runtime',
  backoffBase: 'backoff_base',
  backoffMax: 'backoff_max',
  retention: 'retention',
};

/** Seconds as an interval literal for PostgreSQL; null stays null. */
function interval(seconds) {
  if (seconds === undefined || seconds === null) return null;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
    throw new TypeError(`expected seconds, got ${seconds}`);
  }
  return `${seconds} seconds`;
}

/** A Date, or seconds from now, as a Date; null stays null. */
function runAtDate(runAt, now = Date.now()) {
  if (runAt === undefined || runAt === null) return null;
  if (runAt instanceof Date) return runAt;
  if (typeof runAt === 'number') return new Date(now + runAt * 1000);
  throw new TypeError('runAt: a Date or seconds from now');
}

/** The SQL parameters of jq_enqueue for one job. */
function enqueueParams(queue, payload, options = {}) {
  const known = new Set(['priority', 'runAt', 'maxAttempts', 'idempotencyKey', 'client']);
  for (const k of Object.keys(options)) {
    if (!known.has(k)) throw new TypeError(`unknown enqueue option: ${k}`);
  }
  return [
    queue,
    JSON.stringify(payload),
    options.priority ?? 0,
    runAtDate(options.runAt),
    options.maxAttempts ?? null,
    options.idempotencyKey ?? null,
  ];
}

/**
 * Enqueues jobs.  new Client({ connectionString }) keeps a small pg.Pool;
 * pass { client } in the options of enqueue/enqueueMany to enqueue in your
 * own transaction on your own pg client: the job exists if and only if that
 * transaction commits.
 */
class Client {
  constructor({ connectionString, max = 4, ...poolOptions } = {}) {
    this.pool = new pg.Pool({ connectionString, max, ...poolOptions });
    // An idle pooled connection that dies must not crash the process.
    this.pool.on('error', () => {});
  }

  _db(options) {
    return (options && options.client) || this.pool;
  }

  /** Add one job; resolves to its id (a Number). */
  async enqueue(queue, payload, options = {}) {
    const res = await this._db(options).query(
      'SELECT jobqueue.jq_enqueue($1, $2::jsonb, priority => $3, run_at => $4, ' +
        'max_attempts => $5, idempotency_key => $6) AS id',
      enqueueParams(queue, payload, options),
    );
    return Number(res.rows[0].id);
  }

  /** Add one job per payload in one statement; resolves to the ids in order. */
  async enqueueMany(queue, payloads, options = {}) {
    const res = await this._db(options).query(
      'SELECT id FROM jobqueue.jq_enqueue_many($1, $2::jsonb[], priority => $3, run_at => $4) AS id',
      [queue, payloads.map((p) => JSON.stringify(p)), options.priority ?? 0, runAtDate(options.runAt)],
    );
    return res.rows.map((r) => Number(r.id));
  }

  /** jq_create_queue; intervals in seconds.  An existing queue is left as it is. */
  async createQueue(queue, policy = {}, options = {}) {
    const names = [];
    const params = [queue];
    for (const [k, v] of Object.entries(policy)) {
      const col = QUEUE_POLICY[k];
      if (!col) throw new TypeError(`unknown queue setting: ${k}`);
      if (v === undefined || v === null) continue;
      params.push(k === 'maxAttempts' ? v : interval(v));
      names.push(`${col} => $${params.length}${k === 'maxAttempts' ? '' : '::interval'}`);
    }
    await this._db(options).query(
      `SELECT jobqueue.jq_create_queue($1${names.map((n) => ', ' + n).join('')})`,
      params,
    );
  }

  async end() {
    await this.pool.end();
  }
}

module.exports = { Client, enqueueParams, interval, runAtDate };
