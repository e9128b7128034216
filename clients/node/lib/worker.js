'use strict';

const os = require('os');
const util = require('util');
const { performance } = require('perf_hooks');
const pg = require('pg');
const { Backoff } = require('./backoff');
const { classify } = require('./errors');
const { interval } = require('./client');

const CHANNEL = 'jobqueue';

// A claim returns its jobs as one JSON array of [id, payload, attempt,
// token] (in the order of the claim): one JSON.parse, instead of type
// parsers and a row object per job.  The lease comes once per claim: a claim
// gives all its jobs the same end (one start, the queue's lease), so its end
// and the seconds left (against clock_timestamp(): the claim of
// jq_complete_and_claim reads the clock after its completions) are not
// formatted and parsed again for every job; min() would take the earliest
// were they ever to differ.
const jobsJson = (call) =>
  'SELECT pg_catalog.json_agg(pg_catalog.json_build_array(c.id, c.payload, c.attempt, c.token) ORDER BY c.n)::text AS jobs, ' +
  'pg_catalog.min(c.lease_expires_at) AS expires, ' +
  "pg_catalog.date_part('epoch', pg_catalog.min(c.lease_expires_at) - pg_catalog.clock_timestamp()) AS remaining " +
  `FROM ${call} WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, n)`;

const SQL = {
  claim: jobsJson('jobqueue.jq_claim($1, $2, $3)'),
  completeAndClaim: jobsJson('jobqueue.jq_complete_and_claim($1, $2::bigint[], $3::bigint[], $4, $5, NULL, $6::jsonb[])'),
  completeMany: 'SELECT id FROM jobqueue.jq_complete_many($1::bigint[], $2::bigint[], $3::jsonb[]) AS id',
  fail:
    'SELECT jobqueue.jq_fail($1, $2, $3, $4, retryable => $5, retry_in => $6::interval)::text AS status',
  heartbeat:
    "SELECT pg_catalog.date_part('epoch', h - pg_catalog.now()) AS remaining " +
    'FROM jobqueue.jq_heartbeat($1, $2) AS h',
  release: 'SELECT jobqueue.jq_release($1, $2) AS ok',
};

const debuglog = util.debuglog('jobqueue');
/** The default logger: debug and info through NODE_DEBUG=jobqueue, warnings and errors on stderr. */
const defaultLogger = {
  debug: (...a) => debuglog(...a),
  info: (...a) => debuglog(...a),
  warn: (...a) => console.warn('jobqueue:', ...a),
  error: (...a) => console.error('jobqueue:', ...a),
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * A claimed job as the handler sees it.  Its AbortController is made when
 * the handler first looks at signal (most never do, and most jobs are never
 * aborted), and leaseExpiresAt's Date when first read.
 */
class Job {
  constructor(queue, id, payload, attempt, token, leaseExpiresAt) {
    this.id = id;
    this.payload = payload;
    this.attempt = attempt;
    this.token = token;
    this.queue = queue;
    this._expires = leaseExpiresAt;
    this._ctl = null;
    this._abortReason = undefined;
  }

  get leaseExpiresAt() {
    if (typeof this._expires === 'number') this._expires = new Date(this._expires);
    return this._expires;
  }

  set leaseExpiresAt(v) {
    this._expires = v;
  }

  /** An AbortSignal aborted (reason 'lease lost' or 'shutdown') when the worker can no longer report the job's result. */
  get signal() {
    if (!this._ctl) {
      this._ctl = new AbortController();
      if (this._abortReason !== undefined) this._ctl.abort(this._abortReason);
    }
    return this._ctl.signal;
  }

  get _aborted() {
    return this._abortReason !== undefined;
  }

  _abort(reason) {
    if (this._abortReason !== undefined) return;
    this._abortReason = reason;
    if (this._ctl) this._ctl.abort(reason);
  }
}

/**
 * Runs `handler(job)` for the jobs of one queue.  See README.md.
 *
 * job: { id, payload, attempt, token, leaseExpiresAt, queue, signal }, where
 * signal is an AbortSignal aborted (reason 'lease lost' or 'shutdown') when
 * the worker can no longer report the job's result.
 */
class Worker {
  constructor({
    connectionString,
    listenConnectionString,
    queue,
    handler,
    concurrency = 4,
    batchSize = 10,
    listen = true,
    pollInterval = 5000,
    heartbeatFraction = 1 / 3,
    shutdownTimeout = 30000,
    flushInterval = 50,
    owner,
    reconnectBase = 100,
    reconnectMax = 10000,
    handleSignals = true,
    logger = defaultLogger,
    pgOptions = {},
  } = {}) {
    if (!queue || typeof handler !== 'function') throw new TypeError('queue and handler are required');
    if (!(concurrency >= 1) || !(batchSize >= 1)) throw new RangeError('concurrency and batchSize must be at least 1');
    if (!(heartbeatFraction > 0 && heartbeatFraction < 1)) throw new RangeError('heartbeatFraction must be between 0 and 1');
    this.connectionString = connectionString;
    this.listenConnectionString = listenConnectionString || connectionString;
    this.queue = queue;
    this.handler = handler;
    this.concurrency = concurrency;
    this.batchSize = batchSize;
    this.listen = listen;
    this.pollInterval = pollInterval;
    this.heartbeatFraction = heartbeatFraction;
    this.shutdownTimeout = shutdownTimeout;
    this.flushInterval = flushInterval;
    this.owner = owner || `${os.hostname()}:${process.pid}:${queue}`;
    this.handleSignals = handleSignals;
    this.log = logger;
    this.pgOptions = pgOptions;
    this.reconnect = [reconnectBase, reconnectMax];
    this.stats = { claimed: 0, completed: 0, failed: 0, released: 0, fenced: 0, heartbeats: 0, lost: 0 };

    this._held = new Map(); // id -> job state: claimed and not yet reported
    this._ready = []; // claimed, not started
    this._running = 0;
    this._results = []; // { st, err } from finished handlers
    this._firstResult = 0; // when the oldest of them came
    this._claimNow = true;
    this._nextPoll = 0;
    this._stopping = false;
    this._stopAt = null;
    this._wakeFn = null;
    this._conn = null;
    this._listenConn = null;
    this._done = null;
    this._signalHandler = null;
  }

  /** Start working; resolves once the loop runs (it goes on in the background). */
  async start() {
    if (this._done) throw new Error('worker already started');
    if (this.handleSignals) {
      this._signalHandler = () => {
        this.stop().catch((e) => this.log.error('stop failed:', e));
      };
      process.once('SIGTERM', this._signalHandler);
      process.once('SIGINT', this._signalHandler);
    }
    this.log.info(`worker ${this.owner}: queue ${this.queue}, concurrency ${this.concurrency}, batch ${this.batchSize}`);
    if (this.listen) this._listenLoop();
    this.done = this._mainLoop()
      .catch((e) => {
        // Not a connection problem (those are retried): an SQL error such
        // as an unknown queue.  The worker stops; done rejects with it.
        this.log.error(`worker stopped by an error: ${e.message}`);
        this._stopping = true;
        throw e;
      })
      .finally(() => this._cleanup());
    this._done = this.done.catch(() => {});
  }

  /**
   * Stop claiming, let running handlers finish (up to shutdownTimeout ms),
   * release the rest, close the connections.  Resolves with the counters.
   */
  async stop() {
    this._stopping = true;
    this._wake();
    if (this._done) await this._done;
    return { ...this.stats };
  }

  _wake() {
    if (this._wakeFn) {
      const f = this._wakeFn;
      this._wakeFn = null;
      f();
    }
  }

  _waitWake(ms) {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this._wakeFn = null;
        resolve();
      }, Math.max(0, ms));
      this._wakeFn = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  async _cleanup() {
    if (this._signalHandler) {
      process.removeListener('SIGTERM', this._signalHandler);
      process.removeListener('SIGINT', this._signalHandler);
    }
    const conns = [this._conn, this._listenConn];
    this._conn = null;
    this._listenConn = null;
    await Promise.all(conns.filter(Boolean).map((c) => c.end().catch(() => {})));
    this.log.info(`worker ${this.owner} stopped: ${JSON.stringify(this.stats)}`);
  }

  async _connect(connectionString) {
    const c = new pg.Client({ connectionString, ...this.pgOptions });
    c.on('error', () => {}); // reported by the next query, which fails
    try {
      await c.connect();
    } catch (e) {
      c.end().catch(() => {});
      throw e;
    }
    return c;
  }

  // -- listener ---------------------------------------------------------

  async _listenLoop() {
    const backoff = new Backoff(...this.reconnect);
    while (!this._stopping) {
      let c = null;
      try {
        c = await this._connect(this.listenConnectionString);
        if (this._stopping) {
          await c.end();
          return;
        }
        this._listenConn = c;
        const lost = new Promise((resolve) => {
          c.on('error', resolve);
          c.on('end', () => resolve(new Error('connection ended')));
        });
        c.on('notification', (msg) => {
          if (msg.channel === CHANNEL && msg.payload === this.queue) this._notified();
        });
        await c.query(`LISTEN ${CHANNEL}`);
        backoff.reset();
        this._notified(); // anything sent while nobody listened
        const err = await lost;
        if (this._stopping) return;
        throw err;
      } catch (e) {
        if (this._listenConn === c) this._listenConn = null;
        if (c) c.end().catch(() => {});
        if (this._stopping) return;
        const d = backoff.next();
        this.log.warn(`listener connection lost (${e.message}); reconnecting in ${Math.round(d)} ms`);
        await sleep(d);
      }
    }
  }

  _notified() {
    this._claimNow = true;
    this._wake();
  }

  // -- handlers -----------------------------------------------------------

  _pump() {
    while (this._running < this.concurrency && this._ready.length && this._stopAt === null) {
      const st = this._ready.shift();
      this._running++;
      st.started = true;
      this._run(st);
    }
  }

  async _run(st) {
    let r;
    try {
      const value = await this.handler(st.job);
      // The result as JSON text (a value that is not JSON fails the job
      // like an error of the handler would).
      r = { st, err: null, result: value === undefined || value === null ? null : JSON.stringify(value) };
    } catch (err) {
      r = { st, err: err === null || err === undefined ? new Error(String(err)) : err };
    }
    this._running--;
    if (!this._results.length) this._firstResult = performance.now();
    this._results.push(r);
    // Wake the loop for the first result (it then sets its flush timer)
    // and when a batch is complete, not for each one.
    const n = this._results.length;
    if (n === 1 || n >= this.batchSize || n >= this._held.size || this._stopping) this._wake();
    this._pump(); // the next claimed job, without waiting for the loop
  }

  // -- the main loop --------------------------------------------------------

  async _mainLoop() {
    const backoff = new Backoff(...this.reconnect);
    for (;;) {
      const now = performance.now();
      if (this._stopping && this._stopAt === null) {
        this._stopAt = now + this.shutdownTimeout;
        this.log.info(`stopping: no more claims; ${this._held.size} jobs held, ${this.shutdownTimeout} ms to finish`);
      }
      if (this._stopAt !== null && this._held.size === 0) return; // nothing to finish or release
      try {
        if (!this._conn) {
          this._conn = await this._connect(this.connectionString);
          backoff.reset();
        }
        if (this._flushDue(now)) await this._flushResults(this._stopAt === null);
        await this._heartbeats(now);
        if (this._stopAt !== null) {
          await this._releaseUnstarted();
          if (this._held.size === 0) return;
          if (performance.now() >= this._stopAt) {
            await this._releaseAll();
            return;
          }
        } else {
          await this._maybeClaim(now);
          this._pump();
        }
      } catch (e) {
        if (!isConnectionError(e, this._conn)) throw e;
        const c = this._conn;
        this._conn = null;
        if (c) c.end().catch(() => {});
        const d = backoff.next();
        this.log.warn(`connection lost (${e.message}); ${this._held.size} jobs held; reconnecting in ${Math.round(d)} ms`);
        this._checkDeadlines(performance.now());
        if (this._stopAt !== null && performance.now() >= this._stopAt) {
          for (const st of this._held.values()) abort(st, 'shutdown');
          return;
        }
        await this._waitWake(this._stopAt === null ? d : Math.min(d, this._stopAt - performance.now()));
        continue;
      }
      this._checkDeadlines(performance.now());
      if (this._flushDue(performance.now())) continue;
      if (this._claimNow && this._stopAt === null && this._claimSize() > 0) continue;
      let until = this._stopAt === null ? this._nextPoll : this._stopAt;
      if (this._results.length) until = Math.min(until, this._firstResult + this.flushInterval);
      for (const st of this._held.values()) until = Math.min(until, st.nextHb, st.deadline);
      await this._waitWake(Math.min(until - performance.now(), this.pollInterval));
    }
  }

  /** Results are sent in batches: when batchSize of them are ready, every held job is finished, or the oldest waited flushInterval. */
  _flushDue(now) {
    const n = this._results.length;
    return n > 0 && (n >= this.batchSize || n >= this._held.size || this._stopAt !== null || now >= this._firstResult + this.flushInterval);
  }

  /**
   * Jobs to claim now: none while enough wait for a handler; a whole batch
   * once there is room; less only when the handlers would run out and no
   * results wait to be sent (those go with the next claim, within
   * flushInterval: a claim of its own would cost a round trip).
   * finishing: held jobs whose completion goes in the same call.
   */
  _claimSize(finishing = 0) {
    const ready = this._ready.length;
    if (ready >= this.concurrency) return 0;
    const room = this.batchSize + this.concurrency - (this._held.size - finishing);
    if (room < this.batchSize && (ready > 0 || (!finishing && this._results.length > 0))) return 0;
    return Math.max(0, Math.min(this.batchSize, room));
  }

  async _maybeClaim(now) {
    if (!this._claimNow && now < this._nextPoll) return;
    const n = this._claimSize();
    if (n <= 0) return;
    const res = await this._conn.query(SQL.claim, [this.queue, n, this.owner]);
    this._claimed(res.rows[0], n);
  }

  /** Take the jobs of a claim of n (jq_claim or jq_complete_and_claim): the row of jobsJson (jobs null when none came). */
  _claimed({ jobs, expires, remaining }, n) {
    this._claimNow = false;
    const t = performance.now();
    this._nextPoll = t + this.pollInterval;
    const rows = jobs === null ? [] : JSON.parse(jobs);
    const leaseMs = Math.max(1, remaining * 1000);
    const expiresMs = expires === null ? null : expires.getTime();
    for (const [id, payload, attempt, token] of rows) {
      const st = {
        job: new Job(this.queue, id, payload, attempt, token, expiresMs),
        deadline: t + leaseMs,
        nextHb: t + leaseMs * this.heartbeatFraction,
        started: false,
      };
      this._held.set(id, st);
      this._ready.push(st);
    }
    this.stats.claimed += rows.length;
    if (rows.length) this.log.debug(`claimed ${rows.length} jobs`);
    if (rows.length === n) this._claimNow = true;
  }

  /**
   * Send the results: failures with jq_fail, then the completions.  With
   * claim (and room for a claim) the completions and the next claim go in
   * one call, jq_complete_and_claim; else (and for jobs whose lease the
   * worker saw lost) jq_complete_many, which says which were refused.
   */
  async _flushResults(claim = false) {
    if (!this._results.length) return;
    let results = this._results;
    this._results = [];
    try {
      for (const r of results.filter((x) => x.err !== null)) {
        const { st, err } = r;
        const { code, message, retryable, retryIn } = classify(err);
        const res = await this._conn.query(SQL.fail, [st.job.id, st.job.token, code, message, retryable, interval(retryIn)]);
        results = results.filter((x) => x !== r);
        this._held.delete(st.job.id);
        const status = res.rows[0].status;
        if (status === null) {
          this.stats.fenced++;
          this.log.warn(`job ${st.job.id}: failure refused (lease lost): ${code}`);
        } else {
          this.stats.failed++;
          this.log.info(`job ${st.job.id} attempt ${st.job.attempt} failed (${code}: ${message}): now ${status}`);
        }
      }
      const lost = results.filter((r) => r.st.job._aborted);
      if (lost.length) {
        await this._completeMany(lost);
        results = results.filter((r) => !r.st.job._aborted);
      }
      if (!results.length) return;
      let n = 0;
      if (claim && (this._claimNow || performance.now() >= this._nextPoll)) n = this._claimSize(results.length);
      if (n > 0) await this._completeAndClaim(results, n);
      else await this._completeMany(results);
      results = [];
    } finally {
      if (results.length) this._results.unshift(...results); // not sent: for the next connection
    }
  }

  /** Complete with jq_complete_many, which returns the ids completed: the others were refused (fenced). */
  async _completeMany(results) {
    let res;
    try {
      res = await this._conn.query(SQL.completeMany, completionParams(results));
    } catch (e) {
      if (e.code !== '54000' || results.length === 1) throw e;
      return this._completeOneByOne(results);
    }
    const completed = new Set(res.rows.map((r) => Number(r.id)));
    for (const { st } of results) {
      this._held.delete(st.job.id);
      if (completed.has(st.job.id)) this.stats.completed++;
      else {
        this.stats.fenced++;
        this.log.warn(`job ${st.job.id}: completion refused (lease lost)`);
      }
    }
  }

  /**
   * Complete these jobs and claim up to n more, in one call.  The call does
   * not say which completions were refused (a job cancelled or reaped
   * without the worker seeing it): all count as completed.
   */
  async _completeAndClaim(results, n) {
    const [ids, tokens, values] = completionParams(results);
    let res;
    try {
      res = await this._conn.query(SQL.completeAndClaim, [this.queue, ids, tokens, n, this.owner, values]);
    } catch (e) {
      if (e.code !== '54000') throw e;
      return this._completeOneByOne(results);
    }
    for (const { st } of results) this._held.delete(st.job.id);
    this.stats.completed += results.length;
    this._claimed(res.rows[0], n);
  }

  /**
   * A result was larger than jobqueue.max_result_size (the call failed and
   * changed nothing): complete the jobs one at a time, and fail the ones
   * whose result is refused, permanently (it would be refused at every
   * attempt).
   */
  async _completeOneByOne(results) {
    for (const r of results) {
      try {
        await this._completeMany([r]);
      } catch (e) {
        if (e.code !== '54000') throw e;
        const { st } = r;
        const res = await this._conn.query(SQL.fail, [st.job.id, st.job.token, 'RESULT_TOO_LARGE', e.message, false, null]);
        this._held.delete(st.job.id);
        const status = res.rows[0].status;
        if (status === null) this.stats.fenced++;
        else this.stats.failed++;
        this.log.warn(`job ${st.job.id}: result too large; failed: ${status}`);
      }
    }
  }

  async _heartbeats(now) {
    for (const st of [...this._held.values()]) {
      if (st.nextHb > now || st.job._aborted) continue;
      const res = await this._conn.query(SQL.heartbeat, [st.job.id, st.job.token]);
      const t = performance.now();
      const remaining = res.rows.length ? res.rows[0].remaining : null;
      if (remaining === null) {
        this.stats.lost++;
        this.log.warn(`job ${st.job.id}: heartbeat refused, lease lost; aborting`);
        abort(st, 'lease lost');
      } else {
        this.stats.heartbeats++;
        const ms = Math.max(1, Number(remaining) * 1000);
        st.deadline = t + ms;
        st.nextHb = t + ms * this.heartbeatFraction;
      }
    }
  }

  _checkDeadlines(now) {
    for (const st of this._held.values()) {
      if (now >= st.deadline && !st.job._aborted) {
        this.stats.lost++;
        this.log.warn(`job ${st.job.id}: lease expired before a heartbeat got through; aborting`);
        abort(st, 'lease lost');
      }
    }
  }

  async _release(st) {
    const res = await this._conn.query(SQL.release, [st.job.id, st.job.token]);
    this._held.delete(st.job.id);
    if (res.rows[0].ok) this.stats.released++;
    else this.stats.fenced++;
  }

  async _releaseUnstarted() {
    while (this._ready.length) {
      await this._release(this._ready[0]);
      this._ready.shift();
    }
  }

  async _releaseAll() {
    await this._flushResults();
    for (const st of [...this._held.values()]) {
      abort(st, 'shutdown');
      this.log.warn(`job ${st.job.id} did not finish within the shutdown timeout; releasing`);
      await this._release(st);
    }
  }
}

/**
 * ids and tokens as array literals ('{1,2}'), and the results (null when
 * every one is null), of jq_complete_many / jq_complete_and_claim.
 */
function completionParams(results) {
  const ids = new Array(results.length);
  const tokens = new Array(results.length);
  const values = new Array(results.length);
  let any = false;
  for (let i = 0; i < results.length; i++) {
    const r = results[i];
    ids[i] = r.st.job.id;
    tokens[i] = r.st.job.token;
    values[i] = r.result === undefined ? null : r.result;
    if (values[i] !== null) any = true;
  }
  return [`{${ids.join(',')}}`, `{${tokens.join(',')}}`, any ? values : null];
}

function abort(st, reason) {
  st.job._abort(reason);
  st.nextHb = Infinity;
  st.deadline = Infinity;
}

/** A failure of the connection (as opposed to an SQL error): reconnect. */
function isConnectionError(e, conn) {
  if (!conn) return true;
  if (e && typeof e.code === 'string' && /^(08|57P0)/.test(e.code)) return true;
  if (e && typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return false; // an SQLSTATE
  return true; // ECONNRESET, "Connection terminated", ...
}

module.exports = { Worker, CHANNEL, defaultLogger };
