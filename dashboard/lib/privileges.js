'use strict';
// What the session's role may do, asked of the database itself
// (has_function_privilege / has_table_privilege), and which functions this
// installation of jobqueue has.  The UI shows only the buttons the role
// can use; the database still decides every request.

// key -> [kind, object]: f = EXECUTE on a function, t = SELECT on a relation
const OBJECTS = {
  pause: ['f', 'jobqueue.jq_pause_queue(text)'],
  resume: ['f', 'jobqueue.jq_resume_queue(text)'],
  retry: ['f', 'jobqueue.jq_retry(bigint,timestamptz)'],
  cancel: ['f', 'jobqueue.jq_cancel(bigint)'],
  retry_dead: ['f', 'jobqueue.jq_retry_dead(text,text,integer)'],
  job: ['f', 'jobqueue.jq_job(bigint)'],
  counters: ['f', 'jobqueue.jq_counters(boolean)'],
  latency: ['f', 'jobqueue.jq_latency(text)'],
  group_stats: ['f', 'jobqueue.jq_group_stats(text)'],
  rate_limits: ['f', 'jobqueue.jq_rate_limits()'],
  worker_status: ['f', 'jobqueue.jq_worker_status()'],
  worker_tasks: ['f', 'jobqueue.jq_worker_tasks()'],
  cron_next: ['f', 'jobqueue.jq_cron_next(text,timestamptz,text,integer)'],
  schedules: ['f', 'jobqueue.jq_schedules()'],
  queue_counts: ['f', 'jobqueue.jq_queue_counts(text[],integer)'],
  queue_stats: ['t', 'jobqueue.queue_stats'],
  jobs_table: ['t', 'jobqueue.jobs'],
  queues_table: ['t', 'jobqueue.queues'],
  schedules_table: ['t', 'jobqueue.schedules'],
  dependencies_table: ['t', 'jobqueue.job_dependencies'],
};

// The arguments jq_jobs may take (the contract of 1.4); a build with fewer
// gets only those.
const JQ_JOBS_ARGS = ['queue_name', 'status', 'max_jobs', 'before_id', 'group_key', 'error_code', 'before_finished_at', 'job_id'];

const PRIVILEGES_SQL = `
SELECT x.key,
       CASE WHEN NOT u.usage THEN NULL
         WHEN x.kind = 'f' THEN pg_catalog.to_regprocedure(x.obj) IS NOT NULL
         ELSE pg_catalog.to_regclass(x.obj) IS NOT NULL END AS present,
       CASE WHEN NOT u.usage THEN false
         WHEN x.kind = 'f' THEN COALESCE(pg_catalog.has_function_privilege(pg_catalog.to_regprocedure(x.obj), 'EXECUTE'), false)
         ELSE COALESCE(pg_catalog.has_table_privilege(pg_catalog.to_regclass(x.obj), 'SELECT'), false) END AS allowed
FROM ROWS FROM (pg_catalog.unnest($1::text[]), pg_catalog.unnest($2::text[]), pg_catalog.unnest($3::text[]))
     AS x(key, kind, obj)
CROSS JOIN (SELECT COALESCE((SELECT pg_catalog.has_schema_privilege(n.oid, 'USAGE') FROM pg_catalog.pg_namespace n
                             WHERE n.nspname OPERATOR(pg_catalog.=) 'jobqueue'), false) AS usage) u`;

const JQ_JOBS_SQL = `
SELECT p.oid::pg_catalog.regprocedure::text AS signature, p.proargnames AS argnames,
       pg_catalog.has_function_privilege(p.oid, 'EXECUTE')
       AND pg_catalog.has_schema_privilege(n.oid, 'USAGE') AS allowed
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
WHERE n.nspname OPERATOR(pg_catalog.=) 'jobqueue' AND p.proname OPERATOR(pg_catalog.=) 'jq_jobs'
ORDER BY p.pronargs DESC
LIMIT 1`;

async function readPrivileges(session) {
  const keys = Object.keys(OBJECTS);
  const r = await session.client.query(PRIVILEGES_SQL, [
    keys, keys.map((k) => OBJECTS[k][0]), keys.map((k) => OBJECTS[k][1])]);
  const privileges = {};
  const present = {};
  for (const row of r.rows) {
    privileges[row.key] = row.allowed;
    present[row.key] = row.present;
  }
  const j = await session.client.query(JQ_JOBS_SQL);
  const jqJobs = j.rows[0];
  privileges.jobs = !!(jqJobs && jqJobs.allowed);
  present.jobs = !!jqJobs;
  const v = await session.client.query(
    "SELECT e.extversion FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'jobqueue'");
  const features = {
    version: v.rows[0] ? v.rows[0].extversion : null,
    present,
    jq_jobs_args: jqJobs ? JQ_JOBS_ARGS.filter((a) => (jqJobs.argnames || []).includes(a)) : [],
  };
  // What the UI can offer: reading jobs needs jq_jobs or SELECT on the table.
  privileges.list_jobs = privileges.jobs || privileges.jobs_table;
  privileges.read_job = privileges.job || privileges.jobs || privileges.jobs_table;
  privileges.list_schedules = privileges.schedules || privileges.schedules_table;
  return { privileges, features };
}

module.exports = { readPrivileges, JQ_JOBS_ARGS };
