/*-------------------------------------------------------------------------
 *
 * plans.c
 *	  The per-backend cache of prepared SPI statements.
 *
 * Every statement that jobqueue runs more than once is in the table below.
 * It is prepared on first use (SPI_prepare) and kept for the life of the
 * backend (SPI_keepplan), so the hot path never parses or plans again; the
 * plan cache re-plans by itself when the tables change (for instance after
 * DROP and CREATE EXTENSION).
 *
 * The plans are generic (CURSOR_OPT_GENERIC_PLAN): without that, the plan
 * cache would keep building custom plans, because a generic plan's LIMIT $n
 * is costed as 10 % of the rows.  The statements are written so that the
 * generic plan is the right one at any table size: batches are joined back
 * to the table with "id = ANY (ARRAY(SELECT ...))", an index probe per row,
 * never a merge or hash join over the whole table.
 *
 * The statements that act on one running job by id (complete, fail,
 * heartbeat, release) test its status as "(j.status = 'running') IS TRUE",
 * which means the same but hides the test from partial-index matching.
 * Written plainly, it lets the planner use jobs_lease_idx (WHERE status =
 * 'running') instead of the primary key whenever the statistics say almost
 * no job is running, as they do after an ANALYZE at a quiet moment; the
 * kept plan then reads every running job's index entry, and every entry
 * not yet vacuumed, to find one id.
 *
 * Rules for the statements: every object is schema-qualified (tables in
 * jobqueue, functions in pg_catalog); every value a caller supplies is a
 * parameter, never part of the text.  The SQL functions also run with
 * search_path = pg_catalog, pg_temp, so operators resolve in pg_catalog.
 *
 * Times: the current time is always passed in as a parameter, read from the
 * database server's clock (GetCurrentTimestamp) by the caller, so that lease
 * decisions use the database clock at the moment of the call, not the start
 * of the caller's transaction, and still match index conditions.
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "catalog/pg_type.h"

/*
 * Retry delay in seconds: exponential backoff from the queue's backoff_base,
 * doubling per attempt, capped at backoff_max, then "equal jitter": a
 * uniformly random value between half of that and all of it.  BASE and MAX
 * are interval expressions, ATTEMPT the number of the attempt that failed.
 */
#define JQ_BACKOFF_SQL(BASE, MAX, ATTEMPT) \
	"pg_catalog.make_interval(secs => " \
	"LEAST(pg_catalog.date_part('epoch', " MAX "), " \
	"pg_catalog.date_part('epoch', " BASE ") * " \
	"2.0::float8 ^ LEAST(GREATEST(" ATTEMPT " - 1, 0), 62)) " \
	"* (0.5 + 0.5 * pg_catalog.random()))"

/*
 * Append ENTRY (a jsonb expression) to a job's error history and keep only
 * the newest KEEP entries.
 */
#define JQ_APPEND_ERROR_SQL(ENTRY, KEEP) \
	"pg_catalog.jsonb_path_query_array(j.errors || " ENTRY ", " \
	"'$[last - $keep + 1 to last]', " \
	"pg_catalog.jsonb_build_object('keep', " KEEP "))"

/*
 * Reap the jobs of CTE c (ids of running jobs whose lease expired, locked):
 * back to pending with backoff, or dead when the attempts are used up, with
 * LEASE_EXPIRED in the history.  $2 is now, $3 the history length.  The
 * queue's backoff is looked up per job with a default, so that a job whose
 * queue row is missing is still reaped instead of filling every batch
 * forever.
 */
#define JQ_REAP_SQL \
	"UPDATE jobqueue.jobs j SET " \
	"  status = CASE WHEN j.attempt_count >= j.max_attempts " \
	"           THEN 'dead' ELSE 'pending' END::jobqueue.job_status, " \
	"  available_at = CASE WHEN j.attempt_count >= j.max_attempts " \
	"           THEN j.available_at ELSE $2 + " \
	JQ_BACKOFF_SQL("COALESCE((SELECT q.backoff_base FROM jobqueue.queues q " \
				   "WHERE q.queue_name = j.queue_name), interval '10 seconds')", \
				   "COALESCE((SELECT q.backoff_max FROM jobqueue.queues q " \
				   "WHERE q.queue_name = j.queue_name), interval '1 hour')", \
				   "j.attempt_count") " END, " \
	"  finished_at = CASE WHEN j.attempt_count >= j.max_attempts " \
	"           THEN $2 ELSE NULL END, " \
	"  lease_owner = NULL, lease_expires_at = NULL, " \
	"  last_error_code = '" JQ_LEASE_EXPIRED_CODE "', " \
	"  errors = " JQ_APPEND_ERROR_SQL( \
		"pg_catalog.jsonb_build_object('attempt', j.attempt_count, 'at', $2, " \
		"'code', '" JQ_LEASE_EXPIRED_CODE "', " \
		"'message', 'lease expired at ' || j.lease_expires_at::text, " \
		"'retryable', true, 'owner', j.lease_owner)", \
		"$3") " " \
	"WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) " \
	"RETURNING j.queue_name, j.status = 'pending' AND j.available_at <= $2, " \
	"  j.status = 'dead'"

typedef struct JqPlanSpec
{
	const char *sql;
	int			nargs;
	Oid			argtypes[8];
	const char *name;			/* for error messages */
	bool		read_only;		/* a SELECT: runs in the caller's snapshot */
} JqPlanSpec;

static const JqPlanSpec plan_specs[JQ_NUM_PLANS] = {
	/*
	 * JQ_PLAN_ENQUEUE: $1 queue, $2 payload, $3 priority, $4 run_at, $5
	 * max_attempts, $6 idempotency key, $7 now.  No row back means either no
	 * such queue or an existing idempotency key.
	 */
	[JQ_PLAN_ENQUEUE] = {
		"WITH q AS (SELECT q.max_attempts, q.notify FROM jobqueue.queues q "
		"           WHERE q.queue_name = $1) "
		"INSERT INTO jobqueue.jobs AS j "
		"  (queue_name, payload, priority, available_at, max_attempts, idempotency_key) "
		"SELECT $1, $2, $3, COALESCE($4, $7), "
		"       COALESCE($5, q.max_attempts), $6 FROM q "
		"ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL "
		"DO NOTHING "
		"RETURNING j.id, (SELECT q.notify FROM q)",
		7, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID},
		.name = "enqueue"
	},
	/* JQ_PLAN_ENQUEUE_EXISTING: $1 queue, $2 idempotency key */
	[JQ_PLAN_ENQUEUE_EXISTING] = {
		"SELECT j.id FROM jobqueue.jobs j "
		"WHERE j.queue_name = $1 AND j.idempotency_key = $2",
		2, {TEXTOID, TEXTOID},
		.name = "enqueue existing"
	},
	/*
	 * JQ_PLAN_ENQUEUE_MANY: $1 queue, $2 payloads, $3 priority, $4 run_at,
	 * $5 now.  Identity values are drawn in payload order.
	 */
	[JQ_PLAN_ENQUEUE_MANY] = {
		"WITH q AS (SELECT q.max_attempts, q.notify FROM jobqueue.queues q "
		"           WHERE q.queue_name = $1) "
		"INSERT INTO jobqueue.jobs AS j "
		"  (queue_name, payload, priority, available_at, max_attempts) "
		"SELECT $1, p.payload, $3, COALESCE($4, $5), q.max_attempts "
		"FROM q, pg_catalog.unnest($2) WITH ORDINALITY AS p(payload, ord) "
		"ORDER BY p.ord "
		"RETURNING j.id, (SELECT q.notify FROM q)",
		5, {TEXTOID, JSONBARRAYOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID},
		.name = "enqueue many"
	},
	/* JQ_PLAN_QUEUE_EXISTS: $1 queue */
	[JQ_PLAN_QUEUE_EXISTS] = {
		"SELECT q.paused, q.notify FROM jobqueue.queues q WHERE q.queue_name = $1",
		1, {TEXTOID},
		.name = "queue exists", .read_only = true
	},
	/*
	 * JQ_PLAN_CLAIM: $1 queue, $2 n, $3 owner, $4 lease, $5 now.
	 *
	 * One statement: pick the ready jobs in claim order from the partial
	 * index, lock them skipping those another transaction holds, and lease
	 * them.  A paused or missing queue stops the scan before it starts (the
	 * EXISTS is a one-time filter).  The lease never runs past max_runtime.
	 */
	[JQ_PLAN_CLAIM] = {
		"WITH q AS (SELECT q.lease_duration, q.max_runtime FROM jobqueue.queues q "
		"           WHERE q.queue_name = $1 AND NOT q.paused), "
		"c AS (SELECT j.id FROM jobqueue.jobs j "
		"      WHERE j.queue_name = $1 AND j.status = 'pending' "
		"        AND j.available_at <= $5 AND EXISTS (SELECT FROM q) "
		"      ORDER BY j.priority DESC, j.available_at, j.id "
		"      LIMIT $2 FOR UPDATE OF j SKIP LOCKED), "
		"u AS (UPDATE jobqueue.jobs j SET status = 'running', "
		"        attempt_count = j.attempt_count + 1, lease_owner = $3, "
		"        lease_token = j.lease_token + 1, started_at = $5, "
		"        lease_expires_at = $5 + LEAST("
		"          COALESCE($4, q.lease_duration), q.max_runtime) "
		"      FROM q WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"      RETURNING j.id, j.payload, j.attempt_count, j.lease_token, "
		"                j.lease_expires_at, j.priority, j.available_at) "
		"SELECT u.id, u.payload, u.attempt_count, u.lease_token, u.lease_expires_at "
		"FROM u ORDER BY u.priority DESC, u.available_at, u.id",
		5, {TEXTOID, INT4OID, TEXTOID, INTERVALOID, TIMESTAMPTZOID},
		.name = "claim"
	},
	/*
	 * JQ_PLAN_COMPLETE: $1 id, $2 token, $3 now.  Only the current lease
	 * holder, before its lease expires, may complete.
	 */
	[JQ_PLAN_COMPLETE] = {
		"UPDATE jobqueue.jobs j SET status = 'succeeded', finished_at = $3, "
		"  lease_expires_at = NULL "
		"WHERE j.id = $1 AND j.lease_token = $2 AND (j.status = 'running') IS TRUE "
		"  AND j.lease_expires_at > $3 "
		"RETURNING j.queue_name",
		3, {INT8OID, INT8OID, TIMESTAMPTZOID},
		.name = "complete"
	},
	/*
	 * JQ_PLAN_COMPLETE_MANY: $1 ids, $2 tokens, $3 now; same rule per job.
	 * The pairs come from ROWS FROM: the two-array unnest(a, b) is a
	 * parser shorthand for it that exists only unqualified.
	 */
	[JQ_PLAN_COMPLETE_MANY] = {
		"UPDATE jobqueue.jobs j SET status = 'succeeded', finished_at = $3, "
		"  lease_expires_at = NULL "
		"FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS t(id, token) "
		"WHERE j.id = t.id AND j.lease_token = t.token AND (j.status = 'running') IS TRUE "
		"  AND j.lease_expires_at > $3 "
		"RETURNING j.id, j.queue_name",
		3, {INT8ARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID},
		.name = "complete many"
	},
	/*
	 * JQ_PLAN_FAIL: $1 id, $2 token, $3 error code, $4 message, $5
	 * retryable, $6 retry_in, $7 now, $8 history length.  Retry when the
	 * error is retryable and attempts are left, else dead.
	 */
	[JQ_PLAN_FAIL] = {
		"UPDATE jobqueue.jobs j SET "
		"  status = CASE WHEN $5 AND j.attempt_count < j.max_attempts "
		"           THEN 'pending' ELSE 'dead' END::jobqueue.job_status, "
		"  available_at = CASE WHEN $5 AND j.attempt_count < j.max_attempts "
		"           THEN $7 + COALESCE($6, "
		JQ_BACKOFF_SQL("q.backoff_base", "q.backoff_max", "j.attempt_count") ") "
		"           ELSE j.available_at END, "
		"  finished_at = CASE WHEN $5 AND j.attempt_count < j.max_attempts "
		"           THEN NULL ELSE $7 END, "
		"  lease_owner = NULL, lease_expires_at = NULL, last_error_code = $3, "
		"  errors = " JQ_APPEND_ERROR_SQL(
			"pg_catalog.jsonb_build_object('attempt', j.attempt_count, 'at', $7, "
			"'code', $3, 'message', $4, 'retryable', $5, 'owner', j.lease_owner)",
			"$8") " "
		"FROM jobqueue.queues q "
		"WHERE q.queue_name = j.queue_name AND j.id = $1 AND j.lease_token = $2 "
		"  AND (j.status = 'running') IS TRUE AND j.lease_expires_at > $7 "
		"RETURNING j.status, j.queue_name",
		8, {INT8OID, INT8OID, TEXTOID, TEXTOID, BOOLOID, INTERVALOID, TIMESTAMPTZOID, INT4OID},
		.name = "fail"
	},
	/*
	 * JQ_PLAN_HEARTBEAT: $1 id, $2 token, $3 extend, $4 now.  Never past
	 * started_at + max_runtime; no row when the lease is lost or the runtime
	 * used up.
	 */
	[JQ_PLAN_HEARTBEAT] = {
		"UPDATE jobqueue.jobs j SET lease_expires_at = LEAST("
		"    $4 + COALESCE($3, q.lease_duration), "
		"    j.started_at + q.max_runtime) "
		"FROM jobqueue.queues q "
		"WHERE q.queue_name = j.queue_name AND j.id = $1 AND j.lease_token = $2 "
		"  AND (j.status = 'running') IS TRUE AND j.lease_expires_at > $4 "
		"  AND j.started_at + q.max_runtime > $4 "
		"RETURNING j.lease_expires_at, j.queue_name",
		4, {INT8OID, INT8OID, INTERVALOID, TIMESTAMPTZOID},
		.name = "heartbeat"
	},
	/*
	 * JQ_PLAN_RELEASE: $1 id, $2 token, $3 delay, $4 now.  The attempt is
	 * given back, the token stays incremented so the old holder is fenced.
	 */
	[JQ_PLAN_RELEASE] = {
		"UPDATE jobqueue.jobs j SET status = 'pending', "
		"  attempt_count = j.attempt_count - 1, available_at = $4 + $3, "
		"  lease_owner = NULL, lease_expires_at = NULL, started_at = NULL "
		"WHERE j.id = $1 AND j.lease_token = $2 AND (j.status = 'running') IS TRUE "
		"  AND j.lease_expires_at > $4 "
		"RETURNING j.queue_name, j.available_at <= $4 AND "
		"  (SELECT q.notify FROM jobqueue.queues q WHERE q.queue_name = j.queue_name)",
		4, {INT8OID, INT8OID, INTERVALOID, TIMESTAMPTZOID},
		.name = "release"
	},
	/* JQ_PLAN_CANCEL: $1 id, $2 now */
	[JQ_PLAN_CANCEL] = {
		"UPDATE jobqueue.jobs j SET status = 'cancelled', finished_at = $2, "
		"  lease_expires_at = NULL "
		"WHERE j.id = $1 AND j.status IN ('pending', 'running') "
		"RETURNING j.queue_name",
		2, {INT8OID, TIMESTAMPTZOID},
		.name = "cancel"
	},
	/*
	 * JQ_PLAN_RETRY: $1 id, $2 run_at, $3 now, $4 user, $5 history length.
	 * The replay is recorded in the history, which is otherwise kept.
	 */
	[JQ_PLAN_RETRY] = {
		"UPDATE jobqueue.jobs j SET status = 'pending', attempt_count = 0, "
		"  available_at = COALESCE($2, $3), finished_at = NULL, "
		"  started_at = NULL, lease_owner = NULL, lease_expires_at = NULL, "
		"  errors = " JQ_APPEND_ERROR_SQL(
			"pg_catalog.jsonb_build_object('event', 'replay', 'at', $3, "
			"'by', $4, 'previous_status', j.status)",
			"$5") " "
		"WHERE j.id = $1 AND j.status IN ('dead', 'cancelled') "
		"RETURNING j.queue_name, j.available_at <= $3 AND "
		"  (SELECT q.notify FROM jobqueue.queues q WHERE q.queue_name = j.queue_name)",
		5, {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT4OID},
		.name = "retry"
	},
	/*
	 * JQ_PLAN_RETRY_DEAD: $1 queue, $2 error code or NULL, $3 max jobs, $4
	 * now, $5 user, $6 history length.  Oldest dead jobs first.
	 */
	[JQ_PLAN_RETRY_DEAD] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $1 AND j.status = 'dead' "
		"             AND ($2::text IS NULL OR j.last_error_code = $2) "
		"           ORDER BY j.finished_at, j.id LIMIT $3 "
		"           FOR UPDATE OF j SKIP LOCKED) "
		"UPDATE jobqueue.jobs j SET status = 'pending', attempt_count = 0, "
		"  available_at = $4, finished_at = NULL, started_at = NULL, "
		"  lease_owner = NULL, lease_expires_at = NULL, "
		"  errors = " JQ_APPEND_ERROR_SQL(
			"pg_catalog.jsonb_build_object('event', 'replay', 'at', $4, "
			"'by', $5, 'previous_status', j.status)",
			"$6") " "
		"WHERE j.id = ANY (ARRAY(SELECT c.id FROM c))",
		6, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID, INT4OID},
		.name = "retry dead"
	},
	/*
	 * JQ_PLAN_REAP: $1 max jobs, $2 now, $3 history length, $4 ids to
	 * leave out (jobs this backend could not reap before).
	 *
	 * Expired leases, oldest first, skipping rows a worker is completing
	 * right now.
	 */
	[JQ_PLAN_REAP] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.status = 'running' AND j.lease_expires_at <= $2 "
		"             AND j.id <> ALL ($4) "
		"           ORDER BY j.lease_expires_at LIMIT $1 "
		"           FOR UPDATE OF j SKIP LOCKED) "
		JQ_REAP_SQL,
		4, {INT4OID, TIMESTAMPTZOID, INT4OID, INT8ARRAYOID},
		.name = "reap"
	},
	/*
	 * JQ_PLAN_REAP_CANDIDATES: $1 max jobs, $2 now, $3 ids to leave out.
	 * The jobs JQ_PLAN_REAP would pick, for reaping them one at a time
	 * after a batch failed.
	 */
	[JQ_PLAN_REAP_CANDIDATES] = {
		"SELECT j.id FROM jobqueue.jobs j "
		"WHERE j.status = 'running' AND j.lease_expires_at <= $2 "
		"  AND j.id <> ALL ($3) "
		"ORDER BY j.lease_expires_at LIMIT $1",
		3, {INT4OID, TIMESTAMPTZOID, INT8ARRAYOID},
		.name = "reap candidates", .read_only = true
	},
	/* JQ_PLAN_REAP_ONE: $1 id, $2 now, $3 history length; as JQ_PLAN_REAP */
	[JQ_PLAN_REAP_ONE] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.id = $1 AND j.status = 'running' "
		"             AND j.lease_expires_at <= $2 "
		"           FOR UPDATE OF j SKIP LOCKED) "
		JQ_REAP_SQL,
		3, {INT8OID, TIMESTAMPTZOID, INT4OID},
		.name = "reap one"
	},
	/*
	 * JQ_PLAN_PURGE: $1 queue, $2 older_than or NULL (the queue's
	 * retention), $3 max jobs, $4 now.
	 */
	[JQ_PLAN_PURGE] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j, jobqueue.queues q "
		"           WHERE q.queue_name = $1 AND j.queue_name = $1 "
		"             AND j.status IN ('succeeded', 'cancelled') "
		"             AND j.finished_at < $4 - COALESCE($2, q.retention) "
		"           ORDER BY j.finished_at LIMIT $3 "
		"           FOR UPDATE OF j SKIP LOCKED) "
		"DELETE FROM jobqueue.jobs j WHERE j.id = ANY (ARRAY(SELECT c.id FROM c))",
		4, {TEXTOID, INTERVALOID, INT4OID, TIMESTAMPTZOID},
		.name = "purge"
	},
	/* JQ_PLAN_QUEUE_NAMES: every queue, for the worker's purge pass */
	[JQ_PLAN_QUEUE_NAMES] = {
		"SELECT q.queue_name FROM jobqueue.queues q ORDER BY q.queue_name",
		0, {InvalidOid},
		.name = "queue names", .read_only = true
	},
	/*
	 * JQ_PLAN_READY_QUEUES: $1 after, $2 up to.  The queues (with
	 * notifications on, not paused) in which a pending job's available_at
	 * passed in ($1, $2]: delayed and backed-off jobs that just became ready.
	 *
	 * Cheap at any backlog: available_at is the third column of the claim
	 * index, after priority, so instead of reading every pending job of a
	 * queue the recursive part skips from one distinct priority to the next
	 * (one index probe each) and the range test is one probe per priority.
	 */
	[JQ_PLAN_READY_QUEUES] = {
		"SELECT q.queue_name FROM jobqueue.queues q "
		"WHERE q.notify AND NOT q.paused AND EXISTS ("
		"  WITH RECURSIVE p(priority) AS ("
		"    (SELECT j.priority FROM jobqueue.jobs j "
		"     WHERE j.queue_name = q.queue_name AND j.status = 'pending' "
		"     ORDER BY j.priority DESC LIMIT 1) "
		"    UNION ALL "
		"    SELECT (SELECT j.priority FROM jobqueue.jobs j "
		"            WHERE j.queue_name = q.queue_name AND j.status = 'pending' "
		"              AND j.priority < p.priority "
		"            ORDER BY j.priority DESC LIMIT 1) "
		"    FROM p WHERE p.priority IS NOT NULL) "
		"  SELECT FROM p WHERE EXISTS ("
		"    SELECT FROM jobqueue.jobs j "
		"    WHERE j.queue_name = q.queue_name AND j.status = 'pending' "
		"      AND j.priority = p.priority "
		"      AND j.available_at > $1 AND j.available_at <= $2))",
		2, {TIMESTAMPTZOID, TIMESTAMPTZOID},
		.name = "ready queues", .read_only = true
	},
	/* JQ_PLAN_NOTIFY_QUEUES: queues whose listeners are woken */
	[JQ_PLAN_NOTIFY_QUEUES] = {
		"SELECT q.queue_name FROM jobqueue.queues q "
		"WHERE q.notify AND NOT q.paused ORDER BY q.queue_name",
		0, {InvalidOid},
		.name = "notify queues", .read_only = true
	},
	/*
	 * JQ_PLAN_JOB_QUEUES: $1 job ids.  The queues of jobs whose complete or
	 * heartbeat was refused, for the event counters (a rare path).
	 */
	[JQ_PLAN_JOB_QUEUES] = {
		"SELECT j.queue_name FROM jobqueue.jobs j WHERE j.id = ANY ($1)",
		1, {INT8ARRAYOID},
		.name = "job queues", .read_only = true
	},
	/*
	 * JQ_PLAN_NEXT_LEASE_EXPIRY: when the earliest lease runs out, so the
	 * worker knows when its database is due again (one probe of
	 * jobs_lease_idx).
	 */
	[JQ_PLAN_NEXT_LEASE_EXPIRY] = {
		"SELECT pg_catalog.min(j.lease_expires_at) FROM jobqueue.jobs j "
		"WHERE j.status = 'running'",
		0, {InvalidOid},
		.name = "next lease expiry", .read_only = true
	},
	/*
	 * JQ_PLAN_PURGE_DUE: $1 max jobs, $2 now.  One batch of finished jobs
	 * past their queue's retention, across queues (the worker's purge: one
	 * transaction for many queues, not one per queue), oldest first within
	 * each queue: an index probe of jobs_finished_idx per queue.  Returns
	 * how many jobs of each queue were deleted, for the counters.
	 */
	[JQ_PLAN_PURGE_DUE] = {
		"WITH c AS (SELECT p.id FROM jobqueue.queues q CROSS JOIN LATERAL ("
		"             SELECT j.id FROM jobqueue.jobs j "
		"             WHERE j.queue_name = q.queue_name "
		"               AND j.status IN ('succeeded', 'cancelled') "
		"               AND j.finished_at < $2 - q.retention "
		"             ORDER BY j.finished_at LIMIT $1 "
		"             FOR UPDATE OF j SKIP LOCKED) p "
		"           LIMIT $1), "
		"d AS (DELETE FROM jobqueue.jobs j WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"      RETURNING j.queue_name) "
		"SELECT d.queue_name, pg_catalog.count(*) FROM d GROUP BY d.queue_name",
		2, {INT4OID, TIMESTAMPTZOID},
		.name = "purge due"
	},
};

static SPIPlanPtr plans[JQ_NUM_PLANS];

/*
 * Return the prepared statement id, preparing and keeping it on first use.
 * Must be called while connected to SPI.
 */
SPIPlanPtr
jq_plan(JqPlanId id)
{
	SPIPlanPtr	plan;

	Assert(id >= 0 && id < JQ_NUM_PLANS);
	if (plans[id] != NULL)
		return plans[id];

	plan = SPI_prepare_cursor(plan_specs[id].sql, plan_specs[id].nargs,
							  (Oid *) plan_specs[id].argtypes,
							  CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for jobqueue statement \"%s\": %s",
			 plan_specs[id].name, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed for jobqueue statement \"%s\"",
			 plan_specs[id].name);
	plans[id] = plan;
	return plan;
}

/* The text of statement id, for EXPLAIN. */
const char *
jq_plan_sql(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	return plan_specs[id].sql;
}

/* The name of statement id, for error messages. */
const char *
jq_plan_name(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	return plan_specs[id].name;
}

/*
 * Does statement id only read?  Then it runs with read_only = true: no
 * new snapshot, no command counter increment.  Not for a read that must
 * see rows committed while the function ran (JQ_PLAN_ENQUEUE_EXISTING).
 */
bool
jq_plan_read_only(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	return plan_specs[id].read_only;
}
