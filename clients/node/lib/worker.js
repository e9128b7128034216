'use strict';

const os = require('os');
const util = require('util');
const { performance } = require('perf_hooks');
const pg = require('pg');
const { Backoff } = require('./backoff');
const { FatalError, classify, cutBytes, errorKind, fatalError } = require('./errors');
const { interval } = require('./client');
const { wrapHandler } = require('./tracing');

const CHANNEL = 'jobqueue';

// A claim returns its jobs as one JSON array of [id, payload, attempt,
// token, traceparent, tracestate, trace_origin] (in the order of the claim): one JSON.parse, instead of type
// parsers and a row object per job.  The lease comes once per claim: a claim
// gives all its jobs the same end (one start, the queue's lease), so its end
// and the seconds left (against clock_timestamp(): the claim of
// jq_complete_and_claim reads the clock after its completions) are not
// formatted and parsed again for every job; min() would take the earliest
// were they ever to differ.
const jobsJson = (call) =>
  'SELECT pg_catalog.json_agg(pg_catalog.json_build_array(c.id, c.payload, c.attempt, c.token, c.traceparent, c.tracestate, c.trace_origin) ORDER BY c.n)::text AS jobs, ' +
  'pg_catalog.min(c.lease_expires_at) AS expires, ' +
  "pg_catalog.date_part('epoch', pg_catalog.min(c.lease_expires_at) - pg_catalog.clock_timestamp()) AS remaining " +
  `FROM ${call} WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, traceparent, tracestate, trace_origin, n)`;

const SQL = {
  claim: jobsJson('jobqueue.jq_claim($1, $2, $3)'),
  completeAndClaim: jobsJson('jobqueue.jq_complete_and_claim($1, $2::bigint[], $3::bigint[], $4, $5, NULL, $6::jsonb[])'),
  // The calls that act on a job name its queue first: on Citus each is one
  // statement on the queue's shard (a call by id alone looks the queue up
  // on every shard first).
  completeMany: 'SELECT id FROM jobqueue.jq_complete_many($1::text, $2::bigint[], $3::bigint[], $4::jsonb[]) AS id',
  fail:
    'SELECT jobqueue.jq_fail($1::text, $2::bigint, $3::bigint, $4, $5, retryable => $6, retry_in => $7::interval, stack => $8)::text AS status',
  heartbeat:
    "SELECT pg_catalog.date_part('epoch', h - pg_catalog.now()) AS remaining " +
    'FROM jobqueue.jq_heartbeat($1::text, $2::bigint, $3::bigint) AS h',
  release: 'SELECT jobqueue.jq_release($1::text, $2::bigint, $3::bigint) AS ok',
  // At start: the extension in this database, and each queue (a call that
  // completes and claims nothing checks the queue, the owner and the
  // worker's rights).
  extension: "SELECT extversion FROM pg_catalog.pg_extension WHERE extname = 'jobqueue'",
  checkQueue: 'SELECT count(*) AS n FROM jobqueue.jq_complete_and_claim($1, $2::bigint[], $2::bigint[], 0, $3)',
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
  constructor(queue, id, payload, attempt, token, leaseExpiresAt, traceparent = null, tracestate = null, traceOrigin = null) {
    this.id = id;
    /** The W3C trace context its producer recorded (jobqueue.traceparent), or null. */
    this.traceparent = traceparent;
    this.tracestate = tracestate;
    /** The traceparent of the job or schedule it came from (a dependency, a replay), or null. */
    this.traceOrigin = traceOrigin;
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
 * Runs `handler(job)` for the jobs of one queue or several.  See README.md.
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
    onJob,
    tracing = true,
    pgOptions = {},
  } = {}) {
    const queues = Array.isArray(queue) ? [...new Set(queue)] : [queue];
    if (!queues.length || !queues.every((q) => typeof q === 'string' && q) || typeof handler !== 'function') {
      throw new TypeError('queue (a name or a list of names) and handler are required');
    }
    if (!(concurrency >= 1) || !(batchSize >= 1)) throw new RangeError('concurrency and batchSize must be at least 1');
    if (!(heartbeatFraction > 0 && heartbeatFraction < 1)) throw new RangeError('heartbeatFraction must be between 0 and 1');
    this.connectionString = connectionString;
    this.listenConnectionString = listenConnectionString || connectionString;
    this.queues = queues;
    this.queue = queues.length === 1 ? queues[0] : queues;
    this.handler = handler;
    this.concurrency = concurrency;
    this.batchSize = batchSize;
    this.listen = listen;
    this.pollInterval = pollInterval;
    this.heartbeatFraction = heartbeatFraction;
    this.shutdownTimeout = shutdownTimeout;
    this.flushInterval = flushInterval;
    this.owner = owner || cutBytes(`${os.hostname()}:${process.pid}:${queues.join(',')}`, 256);
    this.handleSignals = handleSignals;
    this.log = logger;
    this.pgOptions = pgOptions;
    this.reconnect = [reconnectBase, reconnectMax];
    this.stats = { claimed: 0, completed: 0, failed: 0, released: 0, fenced: 0, heartbeats: 0, lost: 0, errors: 0 };

    this._handle = wrapHandler(handler, onJob, tracing);
    // Per queue: claim at once (a notification came, or its last claim was
    // full), else at the next poll.  Claims take the queues in turn.
    this._q = queues.map((name) => ({ name, claimNow: true, nextPoll: 0 }));
    this._byName = new Map(this._q.map((q) => [q.name, q]));
    this._turn = 0;
    this._held = new Map(); // id -> job state: claimed and not yet reported
    this._ready = []; // claimed, not started
    this._running = 0;
    this._results = []; // { st, result } or { st, err: classify(...) } from finished handlers
    this._firstResult = 0; // when the oldest of them came
    this._stopping = false;
    this._stopAt = null;
    this._fatal = null;
    this._wakeFn = null;
    this._conn = null;
    this._listenConn = null;
    this._done = null;
    this._signalHandler = null;
  }

  /**
   * Start working.  Connects and checks the database (the extension, each
   * queue, the worker's rights) first: an error no retry can fix
   * (authentication, an unknown database, no extension, an unknown queue,
   * a missing privilege) rejects with a FatalError and nothing runs.  A
   * server that cannot be reached is not such an error: the worker starts
   * and keeps trying.  Resolves once the loop runs (it goes on in the
   * background; `done` settles when it stops).
   */
  async start() {
    if (this._done) throw new Error('worker already started');
    this._done = true;
    let first = null;
    let firstListen = null;
    try {
      first = await this._startCheck();
      if (this.listen) firstListen = await this._startConnect(this.listenConnectionString, 'listener');
    } catch (e) {
      if (first) first.end().catch(() => {});
      this.log.error(e.message);
      this.done = Promise.reject(e);
      this._done = this.done.catch(() => {});
      throw e;
    }
    this._conn = first;
    if (this.handleSignals) {
      this._signalHandler = () => {
        this.stop().catch((e) => this.log.error('stop failed:', e));
      };
      process.once('SIGTERM', this._signalHandler);
      process.once('SIGINT', this._signalHandler);
    }
    this.log.info(`worker ${this.owner}: queues ${this.queues.join(', ')}, concurrency ${this.concurrency}, batch ${this.batchSize}`);
    if (this.listen) this._listenLoop(firstListen);
    this.done = this._mainLoop()
      .catch((e) => {
        // An error no retry can fix (see errorKind): the worker stops;
        // done rejects with it.
        this._stopping = true;
        const err = e.name === 'FatalError' ? e : fatalError(e, 'stopped');
        this.log.error(err.message);
        throw err;
      })
      .finally(() => this._cleanup());
    this._done = this.done.catch(() => {});
  }

  /** A connection, or null when the server cannot be reached now (the loop retries); throws a FatalError. */
  async _startConnect(dsn, what) {
    try {
      return await this._connect(dsn);
    } catch (e) {
      if (errorKind(e) === 'fatal') throw fatalError(e, `cannot start (${what} connection)`);
      this.log.warn(`${what} connection failed at start (${e.message}); retrying`);
      return null;
    }
  }

  /** The first connection, checked: the extension and every queue. */
  async _startCheck() {
    const c = await this._startConnect(this.connectionString, 'claim');
    if (!c) return null;
    try {
      const ext = await c.query(SQL.extension);
      if (!ext.rows.length) {
        const e = new Error(`extension "jobqueue" is not installed in database "${c.database}"`);
        e.code = '42704';
        throw new FatalError(`jobqueue worker cannot start: ${e.message} (CREATE EXTENSION jobqueue)`, e);
      }
      for (const q of this.queues) await c.query(SQL.checkQueue, [q, '{}', this.owner]);
      return c;
    } catch (e) {
      c.end().catch(() => {});
      if (e instanceof FatalError) throw e;
      const kind = errorKind(e);
      if (kind === 'fatal' || kind === 'data') throw fatalError(e, 'cannot start');
      this.log.warn(`check at start failed (${e.message}); retrying`);
      return null;
    }
  }

  /**
   * Stop claiming, let running handlers finish (up to shutdownTimeout ms),
   * release the rest, close the connections.  Resolves with the counters.
   */
  async stop() {
    this._stopping = true;
    this._wake();
    if (this._done && this._done !== true) await this._done;
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

  async _listenLoop(first) {
    const backoff = new Backoff(...this.reconnect);
    while (!this._stopping) {
      let c = first;
      first = null;
      try {
        if (!c) c = await this._connect(this.listenConnectionString);
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
          if (msg.channel !== CHANNEL) return;
          const q = this._byName.get(msg.payload);
          if (q) this._notified(q);
        });
        await c.query(`LISTEN ${CHANNEL}`);
        backoff.reset();
        for (const q of this._q) this._notified(q); // anything sent while nobody listened
        const err = await lost;
        if (this._stopping) return;
        throw err;
      } catch (e) {
        if (this._listenConn === c) this._listenConn = null;
        if (c) c.end().catch(() => {});
        if (this._stopping) return;
        if (errorKind(e) === 'fatal') {
          this._fatal = fatalError(e, 'stopped (listener connection)');
          this._wake();
          return;
        }
        const d = backoff.next();
        this.log.warn(`listener connection lost (${e.message}); reconnecting in ${Math.round(d)} ms`);
        await sleep(d);
      }
    }
  }

  _notified(q) {
    q.claimNow = true;
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
      const value = await this._handle(st.job);
      // The result as JSON text (a value that is not JSON fails the job
      // like an error of the handler would).
      r = { st, err: null, result: value === undefined || value === null ? null : JSON.stringify(value), sent: false };
    } catch (e) {
      const err = classify(e === null || e === undefined ? new Error(String(e)) : e);
      r = { st, err, result: null, sent: false };
      const { job } = st;
      this.log.warn(
        `job ${job.id} of queue ${job.queue} failed (attempt ${job.attempt}${err.retryable ? '' : ', permanent'}): ` +
          `${err.code}: ${err.message}${err.stack ? '\n' + err.stack : ''}`,
      );
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
      if (this._fatal) throw this._fatal;
      const now = performance.now();
      if (this._stopping && this._stopAt === null) {
        this._stopAt = now + this.shutdownTimeout;
        this.log.info(`stopping: no more claims; ${this._held.size} jobs held, ${this.shutdownTimeout} ms to finish`);
      }
      if (this._stopAt !== null && this._held.size === 0) return; // nothing to finish or release
      try {
        if (!this._conn) this._conn = await this._connect(this.connectionString);
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
        backoff.reset();
      } catch (e) {
        // Connection lost: reconnect.  Transient (a deadlock, a
        // serialization failure, a timeout...): the same calls again after
        // a pause.  Results not sent are kept for the next try.  An error
        // no retry can fix stops the worker.
        const kind = errorKind(e);
        if (kind === 'fatal' || kind === 'data') throw e;
        this.stats.errors++;
        const d = backoff.next();
        const what = `${this._held.size} jobs held; retrying in ${Math.round(d)} ms`;
        if (kind === 'connection') {
          const c = this._conn;
          this._conn = null;
          if (c) c.end().catch(() => {});
          this.log.warn(`connection lost (${e.message}); ${what}`);
        } else if (kind === 'transient') {
          this.log.warn(`${e.message} (SQLSTATE ${e.code}); ${what}`);
        } else {
          this.log.error(`unexpected error: ${e.message} (SQLSTATE ${e.code}); ${what}`);
        }
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
      if (this._stopAt === null && this._q.some((q) => q.claimNow) && this._claimSize() > 0) continue;
      let until = this._stopAt;
      if (until === null) for (const q of this._q) until = until === null ? q.nextPoll : Math.min(until, q.nextPoll);
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

  /** The next queue (in turn) that may have jobs: notified, its last claim full, or its poll due; or null. */
  _dueQueue(now) {
    const k = this._q.length;
    for (let i = 0; i < k; i++) {
      const q = this._q[(this._turn + i) % k];
      if (q.claimNow || now >= q.nextPoll) return q;
    }
    return null;
  }

  async _maybeClaim(now) {
    const q = this._dueQueue(now);
    if (!q) return;
    const n = this._claimSize();
    if (n <= 0) return;
    const res = await this._conn.query(SQL.claim, [q.name, n, this.owner]);
    this._claimed(res.rows[0], n, q);
  }

  /** Take the jobs of a claim of n from q (jq_claim or jq_complete_and_claim): the row of jobsJson (jobs null when none came). */
  _claimed({ jobs, expires, remaining }, n, q) {
    const t = performance.now();
    q.nextPoll = t + this.pollInterval;
    this._turn = (this._q.indexOf(q) + 1) % this._q.length;
    const rows = jobs === null ? [] : JSON.parse(jobs);
    const leaseMs = Math.max(1, remaining * 1000);
    const expiresMs = expires === null ? null : expires.getTime();
    for (const [id, payload, attempt, token, traceparent, tracestate, traceOrigin] of rows) {
      const st = {
        job: new Job(q.name, id, payload, attempt, token, expiresMs, traceparent, tracestate, traceOrigin),
        deadline: t + leaseMs,
        nextHb: t + leaseMs * this.heartbeatFraction,
        started: false,
      };
      this._held.set(id, st);
      this._ready.push(st);
    }
    this.stats.claimed += rows.length;
    if (rows.length) this.log.debug(`claimed ${rows.length} jobs of queue ${q.name}`);
    q.claimNow = rows.length === n;
  }

  /**
   * Send the results: failures with jq_fail, then the completions.  With
   * claim (and room for a claim) the completions and the next claim go in
   * one call, jq_complete_and_claim; else (and for jobs whose lease the
   * worker saw lost) jq_complete_many, which says which were refused.
   * Each result the server took is marked sent; the others (the call
   * failed) stay for the next try.
   */
  async _flushResults(claim = false) {
    if (!this._results.length) return;
    const batch = this._results;
    this._results = [];
    try {
      for (const r of batch) if (r.err !== null) await this._fail(r);
      const lost = batch.filter((r) => !r.sent && r.st.job._aborted);
      if (lost.length) await this._completeMany(lost);
      const results = batch.filter((r) => !r.sent);
      if (!results.length) return;
      const q = claim ? this._dueQueue(performance.now()) : null;
      const n = q ? this._claimSize(results.length) : 0;
      if (n > 0) await this._completeAndClaim(results, n, q);
      else await this._completeMany(results);
    } finally {
      const rest = batch.filter((r) => !r.sent);
      if (rest.length) this._results.unshift(...rest); // not sent: for the next try
    }
  }

  /**
   * jq_fail for a failed job.  A failure the server refuses as given (a
   * retry delay out of range, say) is sent again without the delay and
   * with the refusal in the message: the job fails all the same.
   */
  async _fail(r, err = r.err) {
    const { job } = r.st;
    let res;
    try {
      res = await this._conn.query(SQL.fail, [job.queue, job.id, job.token, err.code, err.message, err.retryable, interval(err.retryIn), err.stack]);
    } catch (e) {
      if (errorKind(e) !== 'data' || err.refused) throw e;
      this.log.warn(`job ${job.id}: the failure was refused (${e.message}); sending it without its options`);
      return this._fail(r, { ...err, retryIn: null, stack: null, refused: true, message: `${err.message} (as first sent: ${e.message})` });
    }
    r.sent = true;
    this._held.delete(job.id);
    const status = res.rows[0].status;
    if (status === null) {
      this.stats.fenced++;
      this.log.warn(`job ${job.id}: failure refused (lease lost): ${err.code}`);
    } else {
      this.stats.failed++;
      this.log.info(`job ${job.id} attempt ${job.attempt} failed (${err.code}): now ${status}`);
    }
  }

  /**
   * Complete with jq_complete_many, which returns the ids completed: the
   * others were refused (fenced).  One call per queue.
   */
  async _completeMany(results) {
    const queue = results[0].st.job.queue;
    if (results.some((r) => r.st.job.queue !== queue)) {
      const byQueue = new Map();
      for (const r of results) {
        if (!byQueue.has(r.st.job.queue)) byQueue.set(r.st.job.queue, []);
        byQueue.get(r.st.job.queue).push(r);
      }
      for (const part of byQueue.values()) await this._completeMany(part);
      return;
    }
    let res;
    try {
      res = await this._conn.query(SQL.completeMany, [queue, ...completionParams(results)]);
    } catch (e) {
      if (errorKind(e) !== 'data') throw e;
      return this._completeOneByOne(results, e);
    }
    const completed = new Set(res.rows.map((r) => Number(r.id)));
    for (const r of results) {
      const { st } = r;
      r.sent = true;
      this._held.delete(st.job.id);
      if (completed.has(st.job.id)) this.stats.completed++;
      else {
        this.stats.fenced++;
        this.log.warn(`job ${st.job.id}: completion refused (lease lost)`);
      }
    }
  }

  /**
   * Complete these jobs and claim up to n more from q, in one call.  The
   * call does not say which completions were refused (a job cancelled or
   * reaped without the worker seeing it): all count as completed.
   */
  async _completeAndClaim(results, n, q) {
    const [ids, tokens, values] = completionParams(results);
    let res;
    try {
      res = await this._conn.query(SQL.completeAndClaim, [q.name, ids, tokens, n, this.owner, values]);
    } catch (e) {
      if (errorKind(e) !== 'data') throw e;
      return this._completeOneByOne(results, e);
    }
    for (const r of results) {
      r.sent = true;
      this._held.delete(r.st.job.id);
    }
    this.stats.completed += results.length;
    this._claimed(res.rows[0], n, q);
  }

  /**
   * The server refused a value of the batch (a result larger than
   * jobqueue.max_result_size: 54000; one jsonb does not take, such as a
   * string with "\u0000": 22P05, or a lone surrogate: 22P02), and the
   * call changed nothing: complete the jobs one at a time.  A job whose
   * own result is refused fails permanently (the same result would be
   * refused at every attempt), with code RESULT_TOO_LARGE (54000) or
   * RESULT_INVALID and the server's message; the others complete.
   */
  async _completeOneByOne(results, e) {
    if (results.length === 1) {
      const [r] = results;
      if (r.result === null) throw e; // not this job's result: not this job's fault
      const code = e.code === '54000' ? 'RESULT_TOO_LARGE' : 'RESULT_INVALID';
      this.log.warn(`job ${r.st.job.id} of queue ${r.st.job.queue}: its result was refused (${e.message}, SQLSTATE ${e.code}); failing it`);
      return this._fail(r, { code, message: `${e.message} (SQLSTATE ${e.code})`, retryable: false, retryIn: null, stack: null });
    }
    for (const r of results) await this._completeMany([r]);
  }

  async _heartbeats(now) {
    for (const st of [...this._held.values()]) {
      if (st.nextHb > now || st.job._aborted) continue;
      const res = await this._conn.query(SQL.heartbeat, [st.job.queue, st.job.id, st.job.token]);
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
    const res = await this._conn.query(SQL.release, [st.job.queue, st.job.id, st.job.token]);
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

module.exports = { Worker, CHANNEL, defaultLogger };
