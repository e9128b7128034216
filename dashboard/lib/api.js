'use strict';
// The JSON API.  Every statement runs on the session's own connection as
// its role, with the values as bound parameters; what the role may not
// do, the database refuses (42501), and the answer is 403 with its message.
// Counts come from jobqueue.jq_queue_counts (bounded; queue_stats before
// 1.4) and the functions, never from a count(*) over jobs.
const v = require('./validate');
const { HttpError } = require('./db');

const { mayReadCounts, readCounts } = require('./queries');

// A backlog nobody claims: ready jobs, an unpaused queue, and no claim in
// the last minute (from the counters), or, without counters, nothing
// running and the oldest ready job older than a minute.
const STALL_MS = 60000;

function needs(session, key, what) {
  if (!session.privileges[key]) {
    throw new HttpError(403, `permission denied: role "${session.user}" may not ${what}`, '42501');
  }
}

function annotate(session, row) {
  const q = { ...row };
  if (q.fetched_at) {
    q.age_ms = Date.now() - q.fetched_at;
    delete q.fetched_at;
  }
  const claimed = session.sampler.claimedWithin(q.queue_name, STALL_MS);
  q.claimed_recently = claimed;
  q.stalled = !q.paused && q.ready > 0 && (claimed === false ||
    (claimed === null && q.running === 0 && q.oldest_ready_s > STALL_MS / 1000));
  return q;
}

// The counts come from the shared copy (stats.js) for a role that may read
// the counts; any other role asks the database, which answers as it will.
async function queueRows(session, stats, name) {
  if (mayReadCounts(session.privileges)) {
    return name ? [await stats.get(session, name)].filter(Boolean) : stats.all(session);
  }
  return readCounts(session, name);
}

async function listQueues(session, { stats }) {
  const rows = await queueRows(session, stats, null);
  return { queues: rows.map((q) => annotate(session, q)), series: session.sampler.series() };
}

async function getQueue(session, { params, stats }) {
  const name = v.queueName(params.name, 'queue name');
  const rows = await queueRows(session, stats, name);
  if (!rows.length) throw new HttpError(404, `queue "${name}" does not exist`, '42704');
  const out = { queue: annotate(session, rows[0]), policy: null, groups: null, rate_limit: null, schedules: null };
  const p = session.privileges;
  if (p.queues_table) {
    const q = await session.query(
      'SELECT pg_catalog.to_jsonb(q) AS policy FROM jobqueue.queues q WHERE q.queue_name OPERATOR(pg_catalog.=) $1', [name]);
    out.policy = q.rows[0] ? q.rows[0].policy : null;
  }
  if (p.group_stats) {
    const g = await session.query(`
      SELECT g.group_key, g.ready, g.running, g.scheduled, g.dead, g.blocked,
             EXTRACT(epoch FROM g.oldest_ready_age)::float8 AS oldest_ready_s
      FROM jobqueue.jq_group_stats($1) g
      ORDER BY g.blocked DESC, g.ready DESC, g.group_key
      LIMIT 200`, [name]);
    out.groups = g.rows;
  }
  if (p.rate_limits) {
    const rl = await session.query(
      'SELECT l.* FROM jobqueue.jq_rate_limits() l WHERE l.queue_name OPERATOR(pg_catalog.=) $1', [name]);
    out.rate_limit = rl.rows[0] || null;
  }
  if (session.privileges.list_schedules) {
    out.schedules = (await readSchedules(session)).filter((s) => s.queue_name === name);
  }
  out.series = session.sampler.series().queues[name] || null;
  return out;
}

async function pauseQueue(session, { params, hub, stats }, resume) {
  const name = v.queueName(params.name, 'queue name');
  await session.query(resume ? 'SELECT jobqueue.jq_resume_queue($1)' : 'SELECT jobqueue.jq_pause_queue($1)', [name]);
  await stats.refreshNow(session, name);
  hub.touch(name);
  return { queue: name, paused: !resume };
}

// The jobs of a queue in the order of jq_jobs (unfinished newest first, then
// finished most recently finished first), with keyset paging: the next page
// starts after the last row, given by before_id and, when that row was
// finished, before_finished_at.
async function listJobs(session, { query }) {
  v.only(query, ['queue', 'status', 'group', 'error_code', 'before_id', 'before_finished_at', 'limit', 'since']);
  const f = {
    queue: v.optional(query.queue, v.queueName),
    status: v.optional(query.status, v.status),
    group: v.optional(query.group, v.text, 'group', 256),
    error_code: v.optional(query.error_code, v.text, 'error_code', 128),
    before_id: v.optional(query.before_id, v.jobId, 'before_id'),
    before_finished_at: v.optional(query.before_finished_at, v.exactTimestamp, 'before_finished_at'),
    limit: query.limit === undefined ? 50 : v.int(query.limit, 'limit', 1, 500),
    since: v.optional(query.since, v.timestamp, 'since'),
  };
  if (!f.queue) throw new HttpError(400, 'queue is required');
  const rows = await fetchJobs(session, f, f.limit + 1);
  let jobs = rows.slice(0, f.limit);
  let more = rows.length > f.limit;
  const last = jobs.length ? jobs[jobs.length - 1] : null;
  if (f.since) {
    // Created since: a finished job that finished before `since` was created
    // before it, and so was every finished job after it.
    jobs = jobs.filter((j) => !j.created_at || new Date(j.created_at) >= f.since);
    if (last && last.cursor_finished_at && new Date(last.finished_at) < f.since) more = false;
  }
  return {
    jobs,
    next_before_id: more && last ? last.id : null,
    next_before_finished_at: more && last ? last.cursor_finished_at ?? null : null,
    source: session.privileges.jobs ? 'jq_jobs' : 'jobs table',
  };
}

// A row of jq_jobs with the finished_at its cursor takes (NULL when it is
// unfinished: jq_jobs lists the unfinished jobs first, by id).
function withCursor(j) {
  const finished = ['succeeded', 'dead', 'cancelled'].includes(j.status);
  Object.defineProperty(j, 'cursor_finished_at', { value: finished ? j.finished_at_text : null, enumerable: false });
  delete j.finished_at_text;
  return j;
}

// jq_jobs where the installation has it (1.4), with the filters it takes;
// otherwise the table, for a role that may read it.
async function fetchJobs(session, f, limit) {
  const p = session.privileges;
  if (p.jobs) {
    const has = new Set(session.features.jq_jobs_args);
    const args = ['queue_name => $1', 'max_jobs => $2'];
    const values = [f.queue, limit];
    const add = (name, value, cast) => {
      values.push(value);
      args.push(`${name} => $${values.length}${cast}`);
    };
    if (f.status) add('status', f.status, '::jobqueue.job_status');
    if (f.before_id) add('before_id', f.before_id, '::bigint');
    if (f.before_finished_at && has.has('before_finished_at')) add('before_finished_at', f.before_finished_at, '::timestamptz');
    const post = [];
    if (f.group) { if (has.has('group_key')) add('group_key', f.group, '::text'); else post.push((j) => j.group_key === f.group); }
    if (f.error_code) {
      if (has.has('error_code')) add('error_code', f.error_code, '::text');
      else post.push((j) => j.last_error_code === f.error_code);
    }
    // finished_at also as text: the cursor needs its microseconds
    const r = await session.query(`SELECT j.*, j.finished_at::text AS finished_at_text
      FROM jobqueue.jq_jobs(${args.join(', ')}) j`, values);
    return r.rows.filter((j) => post.every((ok) => ok(j))).map(withCursor);
  }
  if (p.jobs_table) {
    const where = ['j.queue_name OPERATOR(pg_catalog.=) $1'];
    const values = [f.queue];
    const add = (clause, value) => {
      values.push(value);
      where.push(clause.replace('?', `$${values.length}`));
    };
    if (f.status) add('j.status OPERATOR(pg_catalog.=) ?::jobqueue.job_status', f.status);
    if (f.before_id) add('j.id OPERATOR(pg_catalog.<) ?::bigint', f.before_id);
    if (f.group) add('j.group_key OPERATOR(pg_catalog.=) ?::text', f.group);
    if (f.error_code) add('j.last_error_code OPERATOR(pg_catalog.=) ?::text', f.error_code);
    values.push(limit);
    const r = await session.query(`
      SELECT j.id, j.queue_name, j.status, j.priority, j.attempt_count AS attempt, j.max_attempts,
             j.group_key, j.last_error_code, j.created_at, j.available_at, j.started_at, j.finished_at,
             j.lease_owner, j.lease_expires_at, j.payload, j.result
      FROM jobqueue.jobs j
      WHERE ${where.join(' AND ')}
      ORDER BY j.id DESC
      LIMIT $${values.length}`, values);
    return r.rows;
  }
  throw new HttpError(403, `permission denied: role "${session.user}" may not list jobs ` +
    '(it needs EXECUTE on jobqueue.jq_jobs, granted by jq_grant_monitor and jq_grant_admin, or SELECT on jobqueue.jobs)', '42501');
}

async function getJob(session, { params, query }) {
  v.only(query, ['queue']);
  const id = v.jobId(params.id);
  const p = session.privileges;
  let job = null;
  if (p.jobs_table) {
    const r = await session.query(`
      SELECT j.id, j.queue_name, j.status, j.priority, j.attempt_count AS attempt, j.max_attempts,
             j.group_key, j.idempotency_key, j.payload, j.result, j.progress, j.last_error_code, j.errors,
             j.lease_owner, j.lease_token, j.lease_expires_at, j.created_at, j.available_at,
             j.started_at, j.finished_at
      FROM jobqueue.jobs j WHERE j.id OPERATOR(pg_catalog.=) $1::bigint`, [id]);
    job = r.rows[0] || null;
  } else if (p.job) {
    const r = await session.query('SELECT j.*, j.finished_at::text AS finished_at_text FROM jobqueue.jq_job($1::bigint) j', [id]);
    job = r.rows[0] || null;
  }
  const queue = (job && job.queue_name) || v.optional(query.queue, v.queueName);
  if (p.jobs && queue && !p.jobs_table) {
    // The listing's row: payload (where the role may read it), lease, group.
    // The job's row: by job_id (1.4), else the row just after the cursor
    // id + 1 (and the job's finish when it finished: jq_jobs lists finished
    // jobs by their finish).
    const has = new Set(session.features.jq_jobs_args);
    const finishedAt = job && ['succeeded', 'dead', 'cancelled'].includes(job.status) ? job.finished_at_text : null;
    const r = has.has('job_id')
      ? await session.query('SELECT j.* FROM jobqueue.jq_jobs(queue_name => $1, job_id => $2::bigint) j', [queue, id])
      : await session.query(
        'SELECT j.* FROM jobqueue.jq_jobs(queue_name => $1, max_jobs => 1, before_id => $2::bigint + 1' +
          (finishedAt ? ', before_finished_at => $3::timestamptz' : '') + ') j',
        finishedAt ? [queue, id, finishedAt] : [queue, id]);
    const row = r.rows[0];
    if (row && String(row.id) === id) job = { ...row, ...(job || {}) };
  }
  if (job) delete job.finished_at_text;
  if (!job) {
    if (!p.read_job) {
      throw new HttpError(403, `permission denied: role "${session.user}" may not read jobs ` +
        '(it needs EXECUTE on jobqueue.jq_job or jobqueue.jq_jobs, or SELECT on jobqueue.jobs)', '42501');
    }
    if (!p.job && !p.jobs_table && !queue) throw new HttpError(400, 'queue is required to find a job with jq_jobs');
    throw new HttpError(404, `job ${id} does not exist (it may have been purged)`);
  }
  job.depends_on = null;
  job.dependents = null;
  if (p.dependencies_table) {
    const d = await session.query(`
      SELECT (SELECT pg_catalog.array_agg(d.depends_on ORDER BY d.depends_on) FROM jobqueue.job_dependencies d
              WHERE d.job_id OPERATOR(pg_catalog.=) $1::bigint) AS depends_on,
             (SELECT pg_catalog.array_agg(d.job_id ORDER BY d.job_id) FROM
                (SELECT d.job_id FROM jobqueue.job_dependencies d
                 WHERE d.depends_on OPERATOR(pg_catalog.=) $1::bigint ORDER BY d.job_id LIMIT 100) d) AS dependents`, [id]);
    job.depends_on = d.rows[0].depends_on;
    job.dependents = d.rows[0].dependents;
  }
  if (job.waiting_for && !job.depends_on) job.depends_on = job.waiting_for;
  return { job };
}

async function retryJob(session, { params, hub, body, stats }) {
  const id = v.jobId(params.id);
  v.only(body, ['queue']);
  const queue = v.optional(body.queue, v.queueName);
  const r = await session.query('SELECT jobqueue.jq_retry($1::bigint) AS done', [id]);
  if (queue) await stats.refreshNow(session, queue);
  else stats.markDirty(null);
  hub.touch(null);
  return { id: Number(id), retried: r.rows[0].done };
}

async function cancelJob(session, { params, hub, body, stats }) {
  const id = v.jobId(params.id);
  v.only(body, ['queue']);
  const queue = v.optional(body.queue, v.queueName);
  const r = await session.query('SELECT jobqueue.jq_cancel($1::bigint) AS done', [id]);
  if (queue) await stats.refreshNow(session, queue);
  else stats.markDirty(null);
  hub.touch(null);
  return { id: Number(id), cancelled: r.rows[0].done };
}

async function retryDead(session, { params, body, hub, stats }) {
  const name = v.queueName(params.name, 'queue name');
  v.only(body, ['error_code', 'max_jobs']);
  const code = v.optional(body.error_code, v.text, 'error_code', 128);
  const max = body.max_jobs === undefined ? 1000 : v.int(body.max_jobs, 'max_jobs', 1, 100000);
  const r = await session.query('SELECT jobqueue.jq_retry_dead($1, $2, $3) AS n', [name, code, max]);
  await stats.refreshNow(session, name);
  hub.touch(name);
  return { queue: name, error_code: code, replayed: Number(r.rows[0].n) };
}

// Dead letters of a queue grouped by last_error_code: count, first and
// last seen, a sample.  Read through the dead jobs only (their range of
// jobs_status_idx, or jq_jobs pages of dead jobs), up to DEAD_SCAN of them.
const DEAD_SCAN = 5000;

async function deadLetters(session, { query }) {
  v.only(query, ['queue']);
  const queue = v.queueName(query.queue);
  const p = session.privileges;
  if (p.jobs_table) {
    const r = await session.query(`
      SELECT d.last_error_code AS error_code, pg_catalog.count(*) AS count,
             pg_catalog.min(d.finished_at) AS first_seen, pg_catalog.max(d.finished_at) AS last_seen,
             pg_catalog.max(d.id) AS sample_id
      FROM (SELECT j.id, j.last_error_code, j.finished_at FROM jobqueue.jobs j
            WHERE j.queue_name OPERATOR(pg_catalog.=) $1 AND j.status OPERATOR(pg_catalog.=) 'dead'
            ORDER BY j.finished_at DESC LIMIT ${DEAD_SCAN}) d
      GROUP BY d.last_error_code
      ORDER BY count DESC, error_code`, [queue]);
    const groups = r.rows;
    for (const g of groups) {
      const s = await session.query(`SELECT j.id, j.errors OPERATOR(pg_catalog.->) -1 AS last_error, j.payload
        FROM jobqueue.jobs j WHERE j.id OPERATOR(pg_catalog.=) $1`, [g.sample_id]);
      g.sample = s.rows[0] || null;
    }
    const total = groups.reduce((a, g) => a + Number(g.count), 0);
    return { queue, groups, truncated: total >= DEAD_SCAN, scanned: total };
  }
  if (p.jobs) {
    const by = new Map();
    let before = null;
    let beforeFinishedAt = null;
    let scanned = 0;
    for (;;) {
      const rows = await fetchJobs(session, { queue, status: 'dead', before_id: before, before_finished_at: beforeFinishedAt }, 1000);
      for (const j of rows) {
        const code = j.last_error_code == null ? null : j.last_error_code;
        let g = by.get(code);
        if (!g) by.set(code, g = { error_code: code, count: 0, first_seen: null, last_seen: null, sample_id: j.id, sample: j });
        g.count++;
        const t = j.finished_at ? new Date(j.finished_at) : null;
        if (t && (!g.first_seen || t < g.first_seen)) g.first_seen = t;
        if (t && (!g.last_seen || t > g.last_seen)) g.last_seen = t;
      }
      scanned += rows.length;
      if (rows.length < 1000 || scanned >= DEAD_SCAN) break;
      before = String(rows[rows.length - 1].id);
      beforeFinishedAt = rows[rows.length - 1].cursor_finished_at;
    }
    const groups = [...by.values()].sort((a, b) => b.count - a.count);
    return { queue, groups, truncated: scanned >= DEAD_SCAN, scanned };
  }
  throw new HttpError(403, `permission denied: role "${session.user}" may not list dead jobs ` +
    '(it needs EXECUTE on jobqueue.jq_jobs or SELECT on jobqueue.jobs)', '42501');
}

async function readSchedules(session) {
  const p = session.privileges;
  const source = p.schedules ? 'jobqueue.jq_schedules() s' : 'jobqueue.schedules s';
  const next = p.cron_next
    ? `ARRAY(SELECT jobqueue.jq_cron_next(s.cron, pg_catalog.now(), s.timezone, 3)) AS next_runs`
    : 'NULL::timestamptz[] AS next_runs';
  const r = await session.query(`SELECT s.*, ${next} FROM ${source} ORDER BY s.schedule_name`);
  return r.rows;
}

async function listSchedules(session) {
  needs(session, 'list_schedules', 'read schedules (it needs EXECUTE on jobqueue.jq_schedules or SELECT on jobqueue.schedules)');
  return { schedules: await readSchedules(session) };
}

async function workers(session) {
  const p = session.privileges;
  const out = { status: null, tasks: null };
  if (!p.worker_status && !p.worker_tasks) {
    needs(session, 'worker_status', 'read the background worker\'s status (jq_worker_status)');
  }
  if (p.worker_status) out.status = (await session.query('SELECT w.* FROM jobqueue.jq_worker_status() w')).rows[0] || null;
  if (p.worker_tasks) out.tasks = (await session.query('SELECT t.* FROM jobqueue.jq_worker_tasks() t ORDER BY t.task')).rows;
  return out;
}

async function me(session, { hub }) {
  await session.refreshPrivileges();
  return {
    user: session.user,
    csrf: session.csrf,
    privileges: session.privileges,
    features: session.features,
    live: hub.mode,
    poll_interval_ms: session.sampler.intervalMs,
  };
}

module.exports = {
  listQueues, getQueue, pauseQueue, listJobs, getJob, retryJob, cancelJob, retryDead,
  deadLetters, listSchedules, workers, me,
};
