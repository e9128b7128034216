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
 * The state transitions of a job, each written once.  The statements below
 * combine them with the selection of the jobs (by id and token, a batch
 * from a CTE c, ...).  Inside them j is the job's row.
 *
 * Every statement that moves a job returns the same first three columns,
 * JQ_OUTCOME_SQL: the job's queue, its new status (NULL in a row for a job
 * that the caller asked for but that was not changed: a fenced complete or
 * a refused heartbeat), and whether the queue's listeners are to be woken:
 * the job is pending and ready at NOW and NOTIFY (the queue's notify
 * setting) is true.  jq_note_outcome() counts and wakes from these.
 */
#define JQ_OUTCOME_SQL(NOW, NOTIFY) \
	"j.queue_name, j.status, " \
	"(j.status = 'pending' AND j.available_at <= " NOW " AND " NOTIFY ") IS TRUE"

/* The notify setting of job j's queue, looked up per job */
#define JQ_QUEUE_NOTIFY_SQL \
	"(SELECT q.notify FROM jobqueue.queues q WHERE q.queue_name = j.queue_name)"

/* running -> succeeded (complete) */
#define JQ_SUCCEED_SQL(NOW) \
	"status = 'succeeded', finished_at = " NOW ", lease_expires_at = NULL "

/*
 * running -> pending or dead (fail, reap): a failed attempt is retried when
 * RETRYABLE and attempts are left, after DELAY; otherwise the job is dead.
 * CODE is the error code recorded, ENTRY the jsonb entry appended to the
 * history, KEEP the history length.
 */
#define JQ_RETRY_COND_SQL(RETRYABLE) \
	"(" RETRYABLE " AND j.attempt_count < j.max_attempts)"
#define JQ_FAILED_ATTEMPT_SQL(RETRYABLE, NOW, DELAY, CODE, ENTRY, KEEP) \
	"status = CASE WHEN " JQ_RETRY_COND_SQL(RETRYABLE) \
	"  THEN 'pending' ELSE 'dead' END::jobqueue.job_status, " \
	"available_at = CASE WHEN " JQ_RETRY_COND_SQL(RETRYABLE) \
	"  THEN " NOW " + " DELAY " ELSE j.available_at END, " \
	"finished_at = CASE WHEN " JQ_RETRY_COND_SQL(RETRYABLE) \
	"  THEN NULL ELSE " NOW " END, " \
	"lease_owner = NULL, lease_expires_at = NULL, last_error_code = " CODE ", " \
	"errors = " JQ_APPEND_ERROR_SQL(ENTRY, KEEP) " "

/* The history entry of a failed attempt */
#define JQ_ATTEMPT_ENTRY_SQL(NOW, CODE, MESSAGE, RETRYABLE) \
	"pg_catalog.jsonb_build_object('attempt', j.attempt_count, 'at', " NOW ", " \
	"'code', " CODE ", 'message', " MESSAGE ", 'retryable', " RETRYABLE ", " \
	"'owner', j.lease_owner)"

/*
 * dead or cancelled -> pending (replay): a fresh attempt count, pending at
 * RUN_AT; the replay, by role BY, is recorded in the history.
 */
#define JQ_REPLAY_SQL(RUN_AT, NOW, BY, KEEP) \
	"status = 'pending', attempt_count = 0, available_at = " RUN_AT ", " \
	"finished_at = NULL, started_at = NULL, lease_owner = NULL, " \
	"lease_expires_at = NULL, " \
	"errors = " JQ_APPEND_ERROR_SQL( \
		"pg_catalog.jsonb_build_object('event', 'replay', 'at', " NOW ", " \
		"'by', " BY ", 'previous_status', j.status)", KEEP) " "

/*
 * Reap the jobs of CTE c (running jobs whose lease expired, locked): a
 * failed attempt, always retryable, with the queue's backoff.  A job whose
 * queue row is missing (deleted by hand; nobody can claim the job) gets no
 * backoff, so that it is still reaped instead of filling every batch.
 */
#define JQ_REAP_SQL \
	"UPDATE jobqueue.jobs j SET " \
	JQ_FAILED_ATTEMPT_SQL("true", "$2", \
		"COALESCE((SELECT " \
		JQ_BACKOFF_SQL("q.backoff_base", "q.backoff_max", "j.attempt_count") \
		" FROM jobqueue.queues q WHERE q.queue_name = j.queue_name), " \
		"interval '0')", \
		"'" JQ_LEASE_EXPIRED_CODE "'", \
		JQ_ATTEMPT_ENTRY_SQL("$2", "'" JQ_LEASE_EXPIRED_CODE "'", \
							 "'lease expired at ' || j.lease_expires_at::text", \
							 "true"), \
		"$3") \
	"WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) " \
	"RETURNING " JQ_OUTCOME_SQL("$2", JQ_QUEUE_NOTIFY_SQL)

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
	 * such queue or an existing idempotency key.  Outcome, then the id.
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
		"RETURNING " JQ_OUTCOME_SQL("$7", "(SELECT q.notify FROM q)") ", j.id",
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
	 * $5 now.  Identity values are drawn in payload order.  Outcome, then
	 * the id.
	 */
	[JQ_PLAN_ENQUEUE_MANY] = {
		"WITH q AS (SELECT q.max_attempts, q.notify FROM jobqueue.queues q "
		"           WHERE q.queue_name = $1) "
		"INSERT INTO jobqueue.jobs AS j "
		"  (queue_name, payload, priority, available_at, max_attempts) "
		"SELECT $1, p.payload, $3, COALESCE($4, $5), q.max_attempts "
		"FROM q, pg_catalog.unnest($2) WITH ORDINALITY AS p(payload, ord) "
		"ORDER BY p.ord "
		"RETURNING " JQ_OUTCOME_SQL("$5", "(SELECT q.notify FROM q)") ", j.id",
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
	 * holder, before its lease expires, may complete.  Outcome; when the
	 * completion is refused, the job's queue with status NULL (no row when
	 * the job does not exist), read only then (a one-time filter).
	 */
	[JQ_PLAN_COMPLETE] = {
		"WITH u AS (UPDATE jobqueue.jobs j SET " JQ_SUCCEED_SQL("$3")
		"           WHERE j.id = $1 AND j.lease_token = $2 "
		"             AND (j.status = 'running') IS TRUE AND j.lease_expires_at > $3 "
		"           RETURNING " JQ_OUTCOME_SQL("$3", "false") ") "
		"SELECT * FROM u "
		"UNION ALL "
		"SELECT j.queue_name, NULL::jobqueue.job_status, false FROM jobqueue.jobs j "
		"WHERE j.id = $1 AND NOT EXISTS (SELECT FROM u)",
		3, {INT8OID, INT8OID, TIMESTAMPTZOID},
		.name = "complete"
	},
	/*
	 * JQ_PLAN_COMPLETE_MANY: $1 ids, $2 tokens, $3 now; same rule per job.
	 * The pairs come from ROWS FROM: the two-array unnest(a, b) is a
	 * parser shorthand for it that exists only unqualified.  Outcome, then
	 * the id; then a row with status NULL for each other id asked for (its
	 * queue NULL when the job does not exist).
	 */
	[JQ_PLAN_COMPLETE_MANY] = {
		"WITH u AS (UPDATE jobqueue.jobs j SET " JQ_SUCCEED_SQL("$3")
		"           FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS t(id, token) "
		"           WHERE j.id = t.id AND j.lease_token = t.token "
		"             AND (j.status = 'running') IS TRUE AND j.lease_expires_at > $3 "
		"           RETURNING " JQ_OUTCOME_SQL("$3", "false") ", j.id) "
		"SELECT * FROM u "
		"UNION ALL "
		"SELECT j.queue_name, NULL::jobqueue.job_status, false, r.id "
		"FROM (SELECT DISTINCT a.id FROM pg_catalog.unnest($1) AS a(id) "
		"      WHERE NOT EXISTS (SELECT FROM u WHERE u.id = a.id)) r "
		"  LEFT JOIN jobqueue.jobs j ON j.id = r.id",
		3, {INT8ARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID},
		.name = "complete many"
	},
	/*
	 * JQ_PLAN_FAIL: $1 id, $2 token, $3 error code, $4 message, $5
	 * retryable, $6 retry_in, $7 now, $8 history length.  Retry when the
	 * error is retryable and attempts are left, else dead.  Outcome.
	 */
	[JQ_PLAN_FAIL] = {
		"UPDATE jobqueue.jobs j SET "
		JQ_FAILED_ATTEMPT_SQL("$5", "$7",
			"COALESCE($6, "
			JQ_BACKOFF_SQL("q.backoff_base", "q.backoff_max", "j.attempt_count") ")",
			"$3", JQ_ATTEMPT_ENTRY_SQL("$7", "$3", "$4", "$5"), "$8")
		"FROM jobqueue.queues q "
		"WHERE q.queue_name = j.queue_name AND j.id = $1 AND j.lease_token = $2 "
		"  AND (j.status = 'running') IS TRUE AND j.lease_expires_at > $7 "
		"RETURNING " JQ_OUTCOME_SQL("$7", "q.notify"),
		8, {INT8OID, INT8OID, TEXTOID, TEXTOID, BOOLOID, INTERVALOID, TIMESTAMPTZOID, INT4OID},
		.name = "fail"
	},
	/*
	 * JQ_PLAN_HEARTBEAT: $1 id, $2 token, $3 extend, $4 now.  Never past
	 * started_at + max_runtime.  Outcome, then the new expiry; when refused
	 * (the lease is lost or the runtime used up) the job's queue with status
	 * NULL, as for JQ_PLAN_COMPLETE.
	 */
	[JQ_PLAN_HEARTBEAT] = {
		"WITH u AS (UPDATE jobqueue.jobs j SET lease_expires_at = LEAST("
		"               $4 + COALESCE($3, q.lease_duration), "
		"               j.started_at + q.max_runtime) "
		"           FROM jobqueue.queues q "
		"           WHERE q.queue_name = j.queue_name AND j.id = $1 AND j.lease_token = $2 "
		"             AND (j.status = 'running') IS TRUE AND j.lease_expires_at > $4 "
		"             AND j.started_at + q.max_runtime > $4 "
		"           RETURNING " JQ_OUTCOME_SQL("$4", "false") ", j.lease_expires_at) "
		"SELECT * FROM u "
		"UNION ALL "
		"SELECT j.queue_name, NULL::jobqueue.job_status, false, NULL::timestamptz "
		"FROM jobqueue.jobs j WHERE j.id = $1 AND NOT EXISTS (SELECT FROM u)",
		4, {INT8OID, INT8OID, INTERVALOID, TIMESTAMPTZOID},
		.name = "heartbeat"
	},
	/*
	 * JQ_PLAN_RELEASE: $1 id, $2 token, $3 delay, $4 now.  The attempt is
	 * given back, the token stays incremented so the old holder is fenced.
	 * Outcome.
	 */
	[JQ_PLAN_RELEASE] = {
		"UPDATE jobqueue.jobs j SET status = 'pending', "
		"  attempt_count = j.attempt_count - 1, available_at = $4 + $3, "
		"  lease_owner = NULL, lease_expires_at = NULL, started_at = NULL "
		"WHERE j.id = $1 AND j.lease_token = $2 AND (j.status = 'running') IS TRUE "
		"  AND j.lease_expires_at > $4 "
		"RETURNING " JQ_OUTCOME_SQL("$4", JQ_QUEUE_NOTIFY_SQL),
		4, {INT8OID, INT8OID, INTERVALOID, TIMESTAMPTZOID},
		.name = "release"
	},
	/* JQ_PLAN_CANCEL: $1 id, $2 now.  Outcome. */
	[JQ_PLAN_CANCEL] = {
		"UPDATE jobqueue.jobs j SET status = 'cancelled', finished_at = $2, "
		"  lease_expires_at = NULL "
		"WHERE j.id = $1 AND j.status IN ('pending', 'running') "
		"RETURNING " JQ_OUTCOME_SQL("$2", "false"),
		2, {INT8OID, TIMESTAMPTZOID},
		.name = "cancel"
	},
	/*
	 * JQ_PLAN_RETRY: $1 id, $2 run_at, $3 now, $4 user, $5 history length.
	 * The replay is recorded in the history, which is otherwise kept.
	 * Outcome.
	 */
	[JQ_PLAN_RETRY] = {
		"UPDATE jobqueue.jobs j SET " JQ_REPLAY_SQL("COALESCE($2, $3)", "$3", "$4", "$5")
		"WHERE j.id = $1 AND j.status IN ('dead', 'cancelled') "
		"RETURNING " JQ_OUTCOME_SQL("$3", JQ_QUEUE_NOTIFY_SQL),
		5, {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT4OID},
		.name = "retry"
	},
	/*
	 * JQ_PLAN_RETRY_DEAD: $1 queue, $2 error code or NULL, $3 max jobs, $4
	 * now, $5 user, $6 history length.  Oldest dead jobs first.  Outcome.
	 */
	[JQ_PLAN_RETRY_DEAD] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $1 AND j.status = 'dead' "
		"             AND ($2::text IS NULL OR j.last_error_code = $2) "
		"           ORDER BY j.finished_at, j.id LIMIT $3 "
		"           FOR UPDATE OF j SKIP LOCKED) "
		"UPDATE jobqueue.jobs j SET " JQ_REPLAY_SQL("$4", "$4", "$5", "$6")
		"WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING " JQ_OUTCOME_SQL("$4", JQ_QUEUE_NOTIFY_SQL),
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

	/*------------------------------------------------------------------
	 * Schedules and rate limits
	 *------------------------------------------------------------------
	 */

	/*
	 * JQ_PLAN_SCHEDULES_DUE: $1 now, $2 max schedules.  The enabled
	 * schedules with a slot due, earliest first, locked (skipping those
	 * another scheduler holds): the worker and jq_run_schedules() never
	 * handle the same schedule at once, and jq_schedule() waits for them.
	 */
	[JQ_PLAN_SCHEDULES_DUE] = {
		"SELECT s.schedule_name, s.queue_name, s.cron, s.timezone, s.payload, "
		"       s.priority, s.catch_up, s.next_run_at "
		"FROM jobqueue.schedules s "
		"WHERE s.enabled AND s.next_run_at <= $1 "
		"ORDER BY s.next_run_at LIMIT $2 "
		"FOR UPDATE OF s SKIP LOCKED",
		2, {TIMESTAMPTZOID, INT4OID},
		.name = "schedules due"
	},
	/*
	 * JQ_PLAN_SCHEDULE_ENQUEUE: $1 queues, $2 payloads, $3 priorities, $4
	 * idempotency keys, $5 now.  One job per due slot; the key (schedule
	 * and slot) makes a slot enqueued twice a no-op.  A missing queue
	 * enqueues nothing.  Outcome, then the id and the key.
	 */
	[JQ_PLAN_SCHEDULE_ENQUEUE] = {
		"INSERT INTO jobqueue.jobs AS j "
		"  (queue_name, payload, priority, available_at, max_attempts, idempotency_key) "
		"SELECT a.queue_name, a.payload, a.priority, $5, q.max_attempts, a.key "
		"FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), "
		"                pg_catalog.unnest($3), pg_catalog.unnest($4)) WITH ORDINALITY "
		"       AS a(queue_name, payload, priority, key, ord) "
		"  JOIN jobqueue.queues q ON q.queue_name = a.queue_name "
		"ORDER BY a.ord "
		"ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL "
		"DO NOTHING "
		"RETURNING " JQ_OUTCOME_SQL("$5", JQ_QUEUE_NOTIFY_SQL) ", j.id, j.idempotency_key",
		5, {TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID},
		.name = "schedule enqueue"
	},
	/*
	 * JQ_PLAN_SCHEDULE_ADVANCE: $1 schedule names, $2 next run times (NULL:
	 * fires no more), $3 last slots enqueued, $4 last job ids (NULL: keep).
	 * In the same transaction as the enqueue.
	 */
	[JQ_PLAN_SCHEDULE_ADVANCE] = {
		"UPDATE jobqueue.schedules s SET next_run_at = a.next_run_at, "
		"  last_run_at = COALESCE(a.last_run_at, s.last_run_at), "
		"  last_job_id = COALESCE(a.last_job_id, s.last_job_id) "
		"FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), "
		"                pg_catalog.unnest($3), pg_catalog.unnest($4)) "
		"       AS a(schedule_name, next_run_at, last_run_at, last_job_id) "
		"WHERE s.schedule_name = a.schedule_name",
		4, {TEXTARRAYOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID},
		.name = "schedule advance"
	},
	/*
	 * JQ_PLAN_SCHEDULES_NEXT: when the next slot of any enabled schedule is
	 * due (one probe of schedules_due_idx), for the worker's sleep.
	 */
	[JQ_PLAN_SCHEDULES_NEXT] = {
		"SELECT pg_catalog.min(s.next_run_at) FROM jobqueue.schedules s "
		"WHERE s.enabled",
		0, {InvalidOid},
		.name = "schedules next", .read_only = true
	},
	/* JQ_PLAN_QUEUE_RATE: $1 queue.  Its rate limit and burst, or NULLs. */
	[JQ_PLAN_QUEUE_RATE] = {
		"SELECT q.rate_limit, q.rate_burst FROM jobqueue.queues q "
		"WHERE q.queue_name = $1",
		1, {TEXTOID},
		.name = "queue rate", .read_only = true
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
