'use strict';

const pg = require('pg');

// The policy of jq_create_queue and jq_alter_queue: option -> [argument,
// type].  Durations are seconds (a number) or an interval literal (a
// string such as '5 minutes').
const QUEUE_POLICY = {
  maxAttempts: ['max_attempts', 'int'],
  leaseDuration: ['lease_duration', 'interval'],
  maxRuntime: ['max_runtime', 'interval'],
  backoffBase: ['backoff_base', 'interval'],
  backoffMax: ['backoff_max', 'interval'],
  retention: ['retention', 'interval'],
  notify: ['notify', 'boolean'], // jq_alter_queue only
  notifyFinished: ['notify_finished', 'boolean'],
  groupConcurrency: ['group_concurrency', 'int'],
  groupOrdered: ['group_ordered', 'boolean'],
  fairness: ['fairness', 'text'],
  priorityAging: ['priority_aging', 'interval'],
  rateLimit: ['rate_limit', 'float8'],
  rateBurst: ['rate_burst', 'int'],
  groupRateLimit: ['group_rate_limit', 'float8'],
  groupRateBurst: ['group_rate_burst', 'int'],
  maxWait: ['max_wait', 'interval'],
  maxPending: ['max_pending', 'int'],
  groupMaxPending: ['group_max_pending', 'int'],
  fairShareHalfLife: ['fair_share_half_life', 'interval'],
};

const FINISHED = new Set(['succeeded', 'dead', 'cancelled']);
const FINISHED_CHANNEL = 'jobqueue_finished';

/** Seconds as an interval literal for PostgreSQL, or an interval literal as it is; null stays null. */
function interval(seconds) {
  if (seconds === undefined || seconds === null) return null;
  if (typeof seconds === 'string' && seconds) return seconds;
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

function checkOptions(options, known, what) {
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw new TypeError(`unknown ${what} option: ${k}`);
  }
}

/** Job ids (numbers or strings of digits) as an array for bigint[]; null stays null. */
function idList(ids, what) {
  if (ids === undefined || ids === null) return null;
  if (!Array.isArray(ids)) throw new TypeError(`${what}: an array of job ids`);
  return ids.map(String);
}

/** The SQL parameters of jq_enqueue for one job. */
function enqueueParams(queue, payload, options = {}) {
  checkOptions(options, ['priority', 'runAt', 'maxAttempts', 'idempotencyKey', 'groupKey', 'dependsOn',
    'debounceKey', 'debounce', 'debounceMaxWait', 'startBy', 'cost', 'client'], 'enqueue');
  return [
    queue,
    JSON.stringify(payload),
    options.priority ?? 0,
    runAtDate(options.runAt),
    options.maxAttempts ?? null,
    options.idempotencyKey ?? null,
    idList(options.dependsOn, 'dependsOn'),
    options.groupKey ?? null,
    options.debounceKey ?? null,
    interval(options.debounce),
    interval(options.debounceMaxWait),
    runAtDate(options.startBy),
    options.cost ?? null,
  ];
}

/** The named arguments of jq_create_queue / jq_alter_queue for a policy: [sql, params]. */
function policyArgs(queue, policy, alter) {
  const params = [queue];
  const names = [];
  for (const [k, v] of Object.entries(policy)) {
    const spec = QUEUE_POLICY[k];
    if (!spec || (k === 'notify' && !alter)) throw new TypeError(`unknown queue setting: ${k}`);
    if (v === undefined || v === null) continue;
    const [arg, type] = spec;
    params.push(type === 'interval' ? interval(v) : v);
    names.push(`${arg} => $${params.length}::${type}`);
  }
  return [names.map((n) => ', ' + n).join(''), params];
}

const num = (v) => (v === null || v === undefined ? null : Number(v));

/** A row of jq_job or jq_jobs in camelCase (ids as numbers). */
// The exact finished_at (text) of the rows jobs() returned, for nextPage().
const exactFinish = new WeakMap();

function jobRow(r) {
  const job = {
    id: Number(r.id),
    queue: r.queue_name,
    status: r.status,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    priority: r.priority,
    result: r.result,
    progress: r.progress,
    lastErrorCode: r.last_error_code,
    errors: r.errors,
    createdAt: r.created_at,
    availableAt: r.available_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
  if ('waiting_for' in r) job.waitingFor = r.waiting_for === null ? null : r.waiting_for.map(Number);
  if ('group_key' in r) job.groupKey = r.group_key;
  if ('lease_owner' in r) {
    job.leaseOwner = r.lease_owner;
    job.leaseExpiresAt = r.lease_expires_at;
    job.lastErrorMessage = r.last_error_message;
    job.payload = r.payload;
  }
  return job;
}

function scheduleRow(r) {
  return {
    name: r.schedule_name,
    queue: r.queue_name,
    cron: r.cron,
    timezone: r.timezone,
    enabled: r.enabled,
    catchUp: r.catch_up,
    priority: r.priority,
    payload: r.payload,
    nextRunAt: r.next_run_at,
    lastRunAt: r.last_run_at,
    lastJobId: num(r.last_job_id),
    createdAt: r.created_at,
  };
}

/** wait() gave up: the job had not finished within its timeout. */
class WaitTimeoutError extends Error {
  constructor(id, timeout) {
    super(`job ${id} did not finish within ${timeout} ms`);
    this.name = 'TimeoutError';
    this.jobId = id;
  }
}

/**
 * The producer's and operator's side of jobqueue.  new Client({
 * connectionString }) keeps a small pg.Pool (`max` connections, 4), and,
 * once wait() is used, one more connection that listens for finished jobs
 * (`listenConnectionString`, default connectionString).  Pass { client }
 * in the options of a call to make it on your own pg client, in your own
 * transaction: an enqueue, a cancel or a retry then happens if and only if
 * that transaction commits.
 */
class Client {
  constructor({ connectionString, listenConnectionString, max = 4, pollInterval = 1000, ...poolOptions } = {}) {
    this.pool = new pg.Pool({ connectionString, max, ...poolOptions });
    // An idle pooled connection that dies must not crash the process.
    this.pool.on('error', () => {});
    this.connectionString = connectionString;
    this.listenConnectionString = listenConnectionString || connectionString;
    this.pollInterval = pollInterval;
    this._poolOptions = poolOptions;
    this._listener = null; // a promise of the LISTEN connection, while there is one
    this._waiters = new Map(); // job id -> Set of functions called with its status
    this._ended = false;
  }

  _db(options) {
    return (options && options.client) || this.pool;
  }

  async _one(sql, params, options) {
    const res = await this._db(options).query(sql, params);
    return res.rows.length ? res.rows[0] : null;
  }

  // -- producers ------------------------------------------------------------

  /**
   * Add one job; resolves to its id (a Number).  jq_enqueue.  debounceKey:
   * replace the pending, never claimed job of this key (its id comes
   * back), moved to now + debounce seconds but never past the key's first
   * call + debounceMaxWait; startBy (a Date, or seconds from now): not
   * claimed by then, the job never runs; cost: its declared cost for fair
   * share.  Beyond the queue's max_pending the server refuses with 53400.
   */
  async enqueue(queue, payload, options = {}) {
    const r = await this._one(
      'SELECT jobqueue.jq_enqueue($1, $2::jsonb, priority => $3, run_at => $4, ' +
        'max_attempts => $5, idempotency_key => $6, depends_on => $7::bigint[], group_key => $8, ' +
        'debounce_key => $9, debounce => $10::interval, debounce_max_wait => $11::interval, ' +
        'start_by => $12::timestamptz, cost => $13::float8) AS id',
      enqueueParams(queue, payload, options),
      options,
    );
    return Number(r.id);
  }

  /**
   * Add one job per payload in one statement; resolves to the ids in order.
   * jq_enqueue_many: priority, runAt and dependsOn are the same for every
   * job, as are startBy and cost; groupKeys has one group key (or null) per
   * payload.  All or none under the queue's admission limits.
   */
  async enqueueMany(queue, payloads, options = {}) {
    checkOptions(options, ['priority', 'runAt', 'dependsOn', 'groupKeys', 'startBy', 'cost', 'client'], 'enqueueMany');
    if (options.groupKeys != null && !Array.isArray(options.groupKeys)) throw new TypeError('groupKeys: an array, one per payload');
    const res = await this._db(options).query(
      'SELECT id FROM jobqueue.jq_enqueue_many($1, $2::jsonb[], priority => $3, run_at => $4, ' +
        'depends_on => $5::bigint[], group_keys => $6::text[], start_by => $7::timestamptz, ' +
        'cost => $8::float8) AS id',
      [
        queue,
        payloads.map((p) => JSON.stringify(p)),
        options.priority ?? 0,
        runAtDate(options.runAt),
        idList(options.dependsOn, 'dependsOn'),
        options.groupKeys ?? null,
        runAtDate(options.startBy),
        options.cost ?? null,
      ],
    );
    return res.rows.map((r) => Number(r.id));
  }

  // -- queues ---------------------------------------------------------------

  /**
   * jq_create_queue with any of its settings (QUEUE_POLICY; durations in
   * seconds or as interval literals).  An existing queue is left as it is.
   */
  async createQueue(queue, policy = {}, options = {}) {
    const [args, params] = policyArgs(queue, policy, false);
    await this._db(options).query(`SELECT jobqueue.jq_create_queue($1${args})`, params);
  }

  /** jq_alter_queue: changes the settings given, leaves the others. */
  async alterQueue(queue, policy = {}, options = {}) {
    const [args, params] = policyArgs(queue, policy, true);
    await this._db(options).query(`SELECT jobqueue.jq_alter_queue($1${args})`, params);
  }

  /** jq_drop_queue; with force, its jobs go too. */
  async dropQueue(queue, { force = false, client } = {}) {
    await this._db({ client }).query('SELECT jobqueue.jq_drop_queue($1, force => $2)', [queue, force]);
  }

  /** jq_pause_queue: no claims from the queue until resume. */
  async pause(queue, options = {}) {
    await this._db(options).query('SELECT jobqueue.jq_pause_queue($1)', [queue]);
  }

  /** jq_resume_queue. */
  async resume(queue, options = {}) {
    await this._db(options).query('SELECT jobqueue.jq_resume_queue($1)', [queue]);
  }

  // -- jobs -----------------------------------------------------------------

  /** jq_job: the job (camelCase), or null when there is none of that id. */
  async job(id, options = {}) {
    const r = await this._one('SELECT * FROM jobqueue.jq_job($1::bigint)', [id], options);
    return r && jobRow(r);
  }

  /**
   * The job once it has finished (succeeded, dead or cancelled), as job()
   * gives it.  Listens on channel jobqueue_finished, where a queue with
   * notifyFinished announces its jobs (the wait ends as the job does), and
   * looks every pollInterval ms (the only way for the other queues).
   * timeout: ms, then it rejects with a TimeoutError (default: none).  A
   * job that does not exist rejects at once; one of a queue that keeps no
   * history (retention 0) is deleted when it succeeds: its announcement
   * gives { id, status: 'succeeded' }, a look finds nothing (and rejects).
   */
  async wait(id, { timeout = null, pollInterval = this.pollInterval } = {}) {
    id = Number(id);
    const deadline = timeout === null || timeout === undefined ? Infinity : Date.now() + timeout;
    let announced = null;
    let wake = null;
    const onFinished = (status) => {
      announced = status;
      if (wake) wake();
    };
    let set = this._waiters.get(id);
    if (!set) this._waiters.set(id, (set = new Set()));
    set.add(onFinished);
    try {
      // Listen first, then look: a job that finishes in between is seen.
      await this._listen().catch(() => null); // without it (a pooler, say), looking only
      let seen = false;
      for (;;) {
        const job = await this.job(id);
        if (job && FINISHED.has(job.status)) return job;
        if (!job) {
          if (announced) return { id, status: announced };
          const e = new Error(seen ? `job ${id} was deleted before it was seen finished` : `job ${id} does not exist`);
          e.code = 'JOB_NOT_FOUND';
          throw e;
        }
        seen = true;
        const left = deadline - Date.now();
        if (left <= 0) throw new WaitTimeoutError(id, timeout);
        if (announced) continue;
        await new Promise((resolve) => {
          const t = setTimeout(resolve, Math.min(left, pollInterval));
          wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        wake = null;
      }
    } finally {
      set.delete(onFinished);
      if (!set.size) this._waiters.delete(id);
    }
  }

  /** The connection listening on jobqueue_finished (made on first use, remade after a loss). */
  _listen() {
    if (this._ended) return Promise.reject(new Error('client ended'));
    if (this._listener) return this._listener;
    const c = new pg.Client({ connectionString: this.listenConnectionString, ...this._poolOptions });
    const p = (async () => {
      const drop = () => {
        if (this._listener === p) this._listener = null;
        c.end().catch(() => {});
      };
      c.on('error', drop);
      c.on('end', drop);
      c.on('notification', (msg) => {
        if (msg.channel !== FINISHED_CHANNEL || !msg.payload) return;
        const sp = msg.payload.indexOf(' ');
        const set = this._waiters.get(Number(msg.payload.slice(0, sp)));
        if (set) for (const f of set) f(msg.payload.slice(sp + 1));
      });
      await c.connect();
      await c.query(`LISTEN ${FINISHED_CHANNEL}`);
      return c;
    })();
    this._listener = p;
    p.catch(() => {
      if (this._listener === p) this._listener = null;
      c.end().catch(() => {});
    });
    return p;
  }

  /** jq_cancel: true if the job was pending or running and is now cancelled. */
  async cancel(id, options = {}) {
    return (await this._one('SELECT jobqueue.jq_cancel($1::bigint) AS ok', [id], options)).ok;
  }

  /** jq_retry: a dead or cancelled job pending again (at runAt: a Date or seconds from now); true if it was replayed. */
  async retry(id, options = {}) {
    checkOptions(options, ['runAt', 'client'], 'retry');
    return (await this._one('SELECT jobqueue.jq_retry($1::bigint, run_at => $2) AS ok', [id, runAtDate(options.runAt)], options)).ok;
  }

  /** jq_retry_dead: replays up to maxJobs (100) dead jobs of the queue, of one last error code if given; resolves to how many. */
  async retryDead(queue, options = {}) {
    checkOptions(options, ['errorCode', 'maxJobs', 'client'], 'retryDead');
    const r = await this._one(
      'SELECT jobqueue.jq_retry_dead($1, error_code => $2, max_jobs => $3) AS n',
      [queue, options.errorCode ?? null, options.maxJobs ?? 100],
      options,
    );
    return Number(r.n);
  }

  /**
   * jq_jobs: the queue's jobs, `limit` (100) at a time: the unfinished ones
   * newest first, then the finished ones most recently finished first.  The
   * next page is { beforeId, beforeFinishedAt } of the last row of this one
   * (nextPage(rows) builds it).  status, groupKey, errorCode: only those.
   * Payloads, results and errors only for roles that may read them.
   */
  async jobs(queue, options = {}) {
    checkOptions(options, ['status', 'limit', 'beforeId', 'beforeFinishedAt', 'groupKey', 'errorCode', 'client'], 'jobs');
    const res = await this._db(options).query(
      // finished_at also as text: a Date keeps milliseconds, the cursor needs microseconds
      'SELECT j.*, j.finished_at::text AS finished_at_text FROM jobqueue.jq_jobs($1, ' +
        'status => $2::jobqueue.job_status, max_jobs => $3, before_id => $4, ' +
        'group_key => $5, error_code => $6, before_finished_at => $7::timestamptz) j',
      [queue, options.status ?? null, options.limit ?? 100, options.beforeId ?? null, options.groupKey ?? null,
        options.errorCode ?? null, options.beforeFinishedAt ?? null],
    );
    return res.rows.map((r) => {
      const job = jobRow(r);
      exactFinish.set(job, r.finished_at_text);
      return job;
    });
  }

  /** The queue's dead jobs, most recently dead first: jobs(queue, { status: 'dead', ... }). */
  async deadJobs(queue, options = {}) {
    checkOptions(options, ['limit', 'beforeId', 'beforeFinishedAt', 'errorCode', 'client'], 'deadJobs');
    return this.jobs(queue, { ...options, status: 'dead' });
  }

  /** The options of the page after rows (a page of jobs()), or null after the last page. */
  static nextPage(rows) {
    if (rows.length === 0) return null;
    const last = rows[rows.length - 1];
    const finished = ['succeeded', 'dead', 'cancelled'].includes(last.status);
    return { beforeId: last.id, beforeFinishedAt: finished ? exactFinish.get(last) ?? last.finishedAt ?? null : null };
  }

  // -- groups ---------------------------------------------------------------

  /**
   * jq_set_group_limit: the overrides of one group of `queue` (options
   * concurrency, rateLimit, rateBurst, weight; absent or null: the queue's
   * default); with none of them, the group's overrides are removed.
   */
  async setGroupLimit(queue, groupKey, options = {}) {
    checkOptions(options, ['concurrency', 'rateLimit', 'rateBurst', 'weight', 'client'], 'setGroupLimit');
    const v = (k) => (options[k] === undefined ? null : options[k]);
    await this._one(
      'SELECT jobqueue.jq_set_group_limit($1, $2, concurrency => $3::int, rate_limit => $4::float8, ' +
        'rate_burst => $5::int, weight => $6::float8) AS ok',
      [queue, groupKey, v('concurrency'), v('rateLimit'), v('rateBurst'), v('weight')],
      options,
    );
  }

  /** jq_group_limits: the overrides of the groups of `queue` (camelCase, null: the default), by group key. */
  async groupLimits(queue, options = {}) {
    const res = await this._db(options).query('SELECT * FROM jobqueue.jq_group_limits($1)', [queue]);
    return res.rows.map((r) => ({
      groupKey: r.group_key, concurrency: r.concurrency, rateLimit: r.rate_limit, rateBurst: r.rate_burst, weight: r.weight,
    }));
  }

  /** jq_group_stats: the groups of `queue` with unfinished jobs (camelCase); usage and share under fair share. */
  async groupStats(queue, options = {}) {
    const res = await this._db(options).query('SELECT * FROM jobqueue.jq_group_stats($1)', [queue]);
    return res.rows.map((r) => ({
      groupKey: r.group_key, ready: num(r.ready), running: num(r.running), scheduled: num(r.scheduled),
      dead: num(r.dead), blocked: r.blocked, oldestReadyAge: r.oldest_ready_age,
      usage: r.usage === undefined ? null : r.usage, share: r.share === undefined ? null : r.share,
    }));
  }

  // -- schedules ------------------------------------------------------------

  /**
   * jq_schedule: creates or replaces the schedule `name`, enqueuing
   * `payload` into `queue` at every slot of `cron`; options timezone
   * ('UTC'), priority (0), catchUp ('latest', 'all' or 'none'), enabled
   * (true).  Resolves to its next run (a Date; null when disabled).
   */
  async schedule(name, queue, cron, payload = {}, options = {}) {
    checkOptions(options, ['timezone', 'priority', 'catchUp', 'enabled', 'client'], 'schedule');
    const params = [name, queue, cron, JSON.stringify(payload)];
    const names = [];
    for (const [k, arg, type] of [['timezone', 'timezone', 'text'], ['priority', 'priority', 'int'], ['catchUp', 'catch_up', 'text'], ['enabled', 'enabled', 'boolean']]) {
      if (options[k] === undefined || options[k] === null) continue;
      params.push(options[k]);
      names.push(`, ${arg} => $${params.length}::${type}`);
    }
    const r = await this._one(`SELECT jobqueue.jq_schedule($1, $2, $3, $4::jsonb${names.join('')}) AS next`, params, options);
    return r.next;
  }

  /** jq_unschedule: true if there was such a schedule. */
  async unschedule(name, options = {}) {
    return (await this._one('SELECT jobqueue.jq_unschedule($1) AS ok', [name], options)).ok;
  }

  /** jq_schedules: every schedule (camelCase), by name. */
  async schedules(options = {}) {
    const res = await this._db(options).query('SELECT * FROM jobqueue.jq_schedules()');
    return res.rows.map(scheduleRow);
  }

  /** Close the pool and the listening connection. */
  async end() {
    this._ended = true;
    const l = this._listener;
    this._listener = null;
    if (l) await l.then((c) => c.end(), () => {}).catch(() => {});
    await this.pool.end();
  }
}

module.exports = { Client, WaitTimeoutError, QUEUE_POLICY, enqueueParams, policyArgs, interval, runAtDate, jobRow };
