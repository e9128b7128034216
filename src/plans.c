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
 * heartbeat, release, progress: JQ_LEASE_HELD_SQL) test its status as
 * "(j.status = 'running') IS TRUE", which means the same but hides the
 * test from partial-index matching.
 * Written plainly, it lets the planner use jobs_lease_idx (WHERE status =
 * 'running') instead of the primary key whenever the statistics say almost
 * no job is running, as they do after an ANALYZE at a quiet moment; the
 * kept plan then reads every running job's index entry, and every entry
 * not yet vacuumed, to find one id.
 *
 * Table size: a generic plan is built for the size the jobs table has when
 * it is planned (the planner reads the table's current number of blocks,
 * also before any ANALYZE).  A backend that prepared its statements while
 * jobs was empty (a new deployment, after a TRUNCATE) would keep plans made
 * for an empty table -- a sequential scan where an index probe is needed --
 * until something invalidated them.  The same holds for groups, which the
 * group trigger probes by key.  So jq_plan() looks at both tables' sizes
 * at most once a second (jq_plans_check_size): when one has grown or
 * shrunk tenfold since the kept plans were built, they are marked invalid,
 * as an ANALYZE would, and the plan cache builds them again at their next
 * use, for the table as it is now.  Only jobqueue's own kept plans are
 * touched.
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
 * Citus (jobs distributed by queue_name, jq_distributed_mode()): a
 * statement that moves jobs must be one Citus runs on the queue's shard.
 * So the hot statements (enqueue, claim, complete, fail, heartbeat,
 * release, progress, cancel, retry) apply no VOLATILE function and, to a
 * column, no STABLE one (not even inside CASE or COALESCE, which Citus
 * refuses with any non-IMMUTABLE function): times that depend on the row
 * are computed with to_timestamp(float8) from an epoch parameter
 * (JQ_EPOCH_PLUS_SQL), the others in C (a lease's end, a release's, a
 * retry_in's); the jitter of a backoff is drawn in C (pg_prng); history
 * entries are built in C and completed with the row's values by IMMUTABLE
 * jsonb functions.  An enqueue is a plain INSERT ... VALUES of typed
 * parameters.  Each statement's JqDistPlan says how it is planned there:
 * the kept generic plan where Citus's fast-path router prunes by the
 * parameter (one table, queue_name = $n), a custom plan per call where the
 * value must be seen (CTEs, joins, subqueries), and the statements of the
 * worker, which runs on each node against its own shards.  On the node
 * that holds the queue's shard, a statement marked with its queue's
 * parameter (queue_param) runs against the shard itself, with a kept
 * generic plan, or for the worker's statements a plan per call
 * (localshard.c).
 *
 *-------------------------------------------------------------------------
 */
#include "jobqueue.h"

#include "access/relation.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "common/pg_prng.h"
#include "datatype/timestamp.h"
#include "catalog/pg_type.h"
#include "lib/stringinfo.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

/*
 * Retry delay in seconds (float8): exponential backoff from the queue's
 * backoff_base, doubling per attempt, capped at backoff_max, then "equal
 * jitter": a uniformly random value between half of that and all of it.
 * BASE and MAX are interval expressions, ATTEMPT the number of the attempt
 * that failed, JITTER a float8 in [0, 1).  Every function in it is
 * IMMUTABLE (date_part of an interval, ^), so that Citus can run an UPDATE
 * that applies it to columns on the shard: the random value is drawn in C
 * (pg_prng) and passed as a parameter.
 */
#define JQ_BACKOFF_SECS_SQL(BASE, MAX, ATTEMPT, JITTER) \
	"(LEAST(pg_catalog.date_part('epoch', " MAX "), " \
	"pg_catalog.date_part('epoch', " BASE ") * " \
	"2.0::float8 ^ LEAST(GREATEST(" ATTEMPT " - 1, 0), 62)) " \
	"* (0.5 + 0.5 * " JITTER "))"

/*
 * A jitter in [0, 1) for each job j of a statement, from the random seed
 * SEED (an int8 parameter): the hash of the job's id, IMMUTABLE, so that
 * Citus runs an UPDATE that applies it on the shard
 */
#define JQ_ROW_JITTER_SQL(SEED) \
	"(0.5::float8 + pg_catalog.hashint8extended(j.id, " SEED ")::float8 " \
	"/ 18446744073709551616.0::float8)"

/* The retry delay as an interval (for the statements that run on one node) */
#define JQ_BACKOFF_SQL(BASE, MAX, ATTEMPT, JITTER) \
	"pg_catalog.make_interval(secs => " \
	JQ_BACKOFF_SECS_SQL(BASE, MAX, ATTEMPT, JITTER) ")"

/*
 * The time SECS (float8) seconds after the time whose Unix epoch is EPOCH
 * (a float8 parameter, jq_epoch_seconds()), computed with IMMUTABLE
 * functions only: timestamptz + interval is STABLE (it depends on the time
 * zone), to_timestamp(float8) is not.  Exact to the microsecond for any
 * time of this millennium (a float8 holds 2^53 microseconds).
 */
#define JQ_EPOCH_PLUS_SQL(EPOCH, SECS) \
	"pg_catalog.to_timestamp(" EPOCH " + " SECS ")"

/*
 * The epoch of timestamptz column COL as float8, with IMMUTABLE functions
 * only (timestamptz - timestamptz, date_part of an interval; date_part of
 * a timestamptz is STABLE)
 */
#define JQ_EPOCH_OF_SQL(COL) \
	"pg_catalog.date_part('epoch', " COL " - 'epoch'::timestamptz)"

/*
 * Append ENTRY (a jsonb expression) to a job's error history and keep only
 * the newest KEEP entries.
 */
#define JQ_APPEND_ERROR_SQL(ENTRY, KEEP) \
	"pg_catalog.jsonb_path_query_array(j.errors || (" ENTRY "), " \
	"'$[last - $keep + 1 to last]', " \
	"pg_catalog.jsonb_set('{}'::jsonb, '{keep}', (" KEEP ")::text::jsonb))"

/*
 * The state transitions of a job, each written once.  The statements below
 * combine them with the selection of the jobs (by id and token, a batch
 * from a CTE c, ...).  Inside them j is the job's row.
 *
 * Every statement that moves a job returns the same first nine columns,
 * JQ_OUTCOME_SQL (numbered JQ_OUTCOME_* in jobqueue.h): the job's queue,
 * its new status (NULL in a row for a job that the caller asked for but
 * that was not changed: a fenced complete or a refused heartbeat), whether
 * the queue's listeners are to be woken (the job is pending and ready at
 * NOW and NOTIFY, the queue's notify setting, is true), the job's id,
 * whether its end is to be announced (it finished and FINISHED, the
 * queue's notify_finished setting, is true), and whether jobs may wait for
 * it (it finished and has_dependents: read from the row, no lookup), and
 * the times the latency histograms take their values from (started_at,
 * created_at, NOW).  jq_note_outcome() counts, times, wakes, announces and
 * resolves dependencies from these.
 */
#define JQ_OUTCOME_SQL(NOW, NOTIFY, FINISHED) \
	JQ_OUTCOME_STARTED_SQL(NOW, NOTIFY, FINISHED, "j.started_at")

/*
 * JQ_OUTCOME_SQL with the start of the job's attempt given (STARTED): the
 * three last columns are the times of the latency histograms (latency.c),
 * the attempt's start, the enqueue and the statement's now.
 */
#define JQ_OUTCOME_STARTED_SQL(NOW, NOTIFY, FINISHED, STARTED) \
	"j.queue_name, j.status, " \
	"(j.status = 'pending' AND j.available_at <= " NOW " AND " NOTIFY ") IS TRUE, " \
	"j.id, " \
	"(j.status IN ('succeeded', 'dead', 'cancelled') AND " FINISHED ") IS TRUE, " \
	"(j.status IN ('succeeded', 'dead', 'cancelled') AND j.has_dependents) IS TRUE, " \
	STARTED ", j.created_at, " NOW "::timestamptz"

/*
 * The outcome of a job j that a DELETE removed because it succeeded in a
 * queue that keeps no history (JQ_SUCCEED_DELETE_SQL): RETURNING sees the
 * row as it was (running), so the status is written out.
 */
#define JQ_OUTCOME_DELETED_SQL(NOW, FINISHED) \
	"j.queue_name, 'succeeded'::jobqueue.job_status, false, j.id, " \
	"(" FINISHED ") IS TRUE, j.has_dependents, j.started_at, j.created_at, " \
	NOW "::timestamptz"

/* The outcome columns of a row for a job that was not changed */
#define JQ_REFUSED_SQL(QUEUE, ID) \
	QUEUE ", NULL::jobqueue.job_status, false, " ID ", false, false, " \
	"NULL::timestamptz, NULL::timestamptz, NULL::timestamptz"

/* The notify setting of job j's queue, looked up per job */
#define JQ_QUEUE_NOTIFY_SQL \
	"(SELECT q.notify FROM jobqueue.queues q WHERE q.queue_name = j.queue_name)"

/* The notify_finished setting of job j's queue, looked up per job */
#define JQ_QUEUE_NOTIFY_FINISHED_SQL \
	"(SELECT q.notify_finished FROM jobqueue.queues q WHERE q.queue_name = j.queue_name)"

/*
 * Does job j's queue have notify_finished?  QUEUES is the array of the
 * queues that have it (jq_completion_queues(), usually empty): no
 * lookup per job.
 */
#define JQ_NOTIFY_FINISHED_SQL(QUEUES) \
	"j.queue_name = ANY (" QUEUES ")"

/*
 * pending -> running (claim): lease to owner $3 from now $5 until EXPIRES;
 * every claim adds 1 to the token.  JQ_LEASE_SET_1_1_SQL is the claim of a
 * schema from before 1.2 (JQ_PLAN_CLAIM); the claims of 1.4 also end the
 * job's time as a debounced job (debounce_until NULL moves it out of
 * jobs_debounce_key_idx for good).
 */
#define JQ_LEASE_SET_1_1_SQL(EXPIRES) \
	"status = 'running', attempt_count = j.attempt_count + 1, " \
	"lease_owner = $3, lease_token = j.lease_token + 1, started_at = $5, " \
	"lease_expires_at = " EXPIRES
#define JQ_LEASE_SET_SQL(EXPIRES) \
	JQ_LEASE_SET_1_1_SQL(EXPIRES) ", debounce_until = NULL"

/*
 * The claim's lease of the jobs IDS (a subquery) of queue $1 (SET, one of
 * the two above), when CTE q (the queue's row, if it may be claimed from)
 * has a row.  RETURNING is the caller's.
 */
#define JQ_LEASE_UNTIL_SQL(IDS, SET) \
	"UPDATE jobqueue.jobs j SET " SET " " \
	"FROM q WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(" IDS "))"

/*
 * The lease of the claims of 1.2 on: until $4, computed in C from the
 * cached settings (jq_claim_run: now + LEAST(lease or lease_duration,
 * max_runtime)), so that the UPDATE applies no STABLE function
 * (timestamptz + interval) to the queue's columns.
 */
#define JQ_LEASE_SQL(IDS) JQ_LEASE_UNTIL_SQL(IDS, JQ_LEASE_SET_SQL("$4"))

/*
 * The trace context a claim returns of job X (columns JQ_CLAIM_TRACEPARENT
 * and after): the producer's traceparent and tracestate, and the
 * traceparent of the job's origin (trace.c)
 */
#define JQ_CLAIM_TRACE_SQL(X) \
	X ".traceparent, " X ".tracestate, " X ".trace_origin"

/* running -> succeeded (complete), storing RESULT */
#define JQ_SUCCEED_SQL(NOW, RESULT) \
	"status = 'succeeded', finished_at = " NOW ", lease_expires_at = NULL, " \
	"result = " RESULT " "

/*
 * A job that succeeds is kept (UPDATE to succeeded, with its result), or
 * deleted when its queue keeps no history (retention zero: the queue's name
 * is in DELETING, a text[] parameter from queuecache.c, usually empty;
 * QUEUE is the statement's queue, tested instead of j.queue_name: Citus's
 * fast-path router plans a generic plan only where the distribution column
 * appears once).
 * Two statements with the same selection of jobs (USING or FROM a list
 * joined to job j, and the fencing condition WHERE), each taking only the
 * jobs of its kind of queue; lifecycle.c runs the second only when the
 * first left jobs over (jq_complete_jobs).  One statement with both, as
 * data-modifying CTEs, would look every job up twice.
 *
 * JQ_SUCCEED_KEEP_SQL: running -> succeeded by an UPDATE, with the outcome.
 */
#define JQ_SUCCEED_KEEP_SQL(NOW, RESULT, FROM, WHERE, QUEUE, DELETING, FINISHED) \
	"UPDATE jobqueue.jobs j SET " JQ_SUCCEED_SQL(NOW, RESULT) \
	FROM " WHERE " WHERE " AND " QUEUE " <> ALL (" DELETING ") " \
	"RETURNING " JQ_OUTCOME_SQL(NOW, "false", JQ_NOTIFY_FINISHED_SQL(FINISHED))

/*
 * JQ_SUCCEED_DELETE_SQL: running -> gone, in the queues that keep no
 * history.  A deleted job writes no new row version and no index entry,
 * keeps no result, and frees its idempotency key; its outcome says
 * 'succeeded', so that counters, notify_finished and the release of its
 * dependents see a success (the release runs later in the same
 * transaction, so the job's dependents are released exactly when it
 * disappears).
 *
 * A job whose row another transaction holds is not deleted but left over
 * (FOR UPDATE SKIP LOCKED), for the caller's UPDATE: a producer's open
 * transaction that enqueued jobs depending on it holds it FOR KEY SHARE,
 * which only a DELETE waits for, and a completion must never wait for a
 * producer.  The job is then kept as succeeded and purged later.
 */
#define JQ_SUCCEED_DELETE_SQL(NOW, FROM, WHERE, QUEUE, DELETING, FINISHED) \
	"WITH c AS (SELECT j.id FROM jobqueue.jobs j " FROM " " \
	"           WHERE " WHERE " AND " QUEUE " = ANY (" DELETING ") " \
	"           FOR UPDATE OF j SKIP LOCKED) " \
	"DELETE FROM jobqueue.jobs j " \
	"WHERE j.queue_name = " QUEUE " AND j.id = ANY (ARRAY(SELECT c.id FROM c)) " \
	"RETURNING " JQ_OUTCOME_DELETED_SQL(NOW, JQ_NOTIFY_FINISHED_SQL(FINISHED))

/*
 * The fencing rule of every write by a lease holder (complete, fail,
 * heartbeat, release, progress): job j of queue QUEUE, by id ID, is running
 * under the caller's token TOKEN and its lease has not expired at NOW.  The
 * queue comes first, so that on Citus the statement goes to the queue's
 * shard alone (a job of another queue, or a NULL queue, matches nothing:
 * the write is refused as a fenced one is).
 */
#define JQ_LEASE_HELD_SQL(QUEUE, ID, TOKEN, NOW) \
	"j.queue_name = " QUEUE " AND j.id = " ID " AND j.lease_token = " TOKEN " " \
	"AND (j.status = 'running') IS TRUE AND j.lease_expires_at > " NOW

/*
 * The queue QUEUE (a parameter) of a call acting on job j, in the plain
 * PostgreSQL text of the statements of completion, failure and release:
 * that queue, or the job's own when it is NULL (a call by id alone,
 * jq_call_queue_or_any), so that such a call is one statement by the
 * primary key.  On Citus their text (dist_sql) tests the parameter itself,
 * which routes the statement to the queue's shard; a call by id alone
 * reads the job's queue first there.
 */
#define JQ_ANY_QUEUE_SQL(QUEUE) "COALESCE(" QUEUE ", j.queue_name)"

/*
 * The selection of a completion of many: the triples t from ids ($1),
 * tokens ($2) and results ($4), each fenced at $3, in queue QUEUE.
 */
#define JQ_COMPLETE_LIST_SQL \
	"ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), " \
	"pg_catalog.unnest($4)) AS t(id, token, result)"
#define JQ_COMPLETE_MANY_SQL(QUEUE) JQ_LEASE_HELD_SQL(QUEUE, "t.id", "t.token", "$3")

/* The completion statements, with queue QUEUE (JQ_ANY_QUEUE_SQL or "$7") */
#define JQ_COMPLETE_KEEP_SQL(QUEUE) \
	JQ_SUCCEED_KEEP_SQL("$3", "$4", "", JQ_LEASE_HELD_SQL(QUEUE, "$1", "$2", "$3"), \
						QUEUE, "$6", "$5")
#define JQ_COMPLETE_DELETE_SQL(QUEUE) \
	JQ_SUCCEED_DELETE_SQL("$3", "", JQ_LEASE_HELD_SQL(QUEUE, "$1", "$2", "$3"), \
						  QUEUE, "$6", "$5")
#define JQ_COMPLETE_REFUSED_SQL(QUEUE) \
	"SELECT " JQ_REFUSED_SQL("j.queue_name", "j.id") " FROM jobqueue.jobs j " \
	"WHERE j.queue_name = " QUEUE " AND j.id = $1"
#define JQ_COMPLETE_MANY_KEEP_SQL(QUEUE) \
	JQ_SUCCEED_KEEP_SQL("$3", "t.result", "FROM " JQ_COMPLETE_LIST_SQL, \
						JQ_COMPLETE_MANY_SQL(QUEUE), QUEUE, "$6", "$5")
#define JQ_COMPLETE_MANY_DELETE_SQL(QUEUE) \
	JQ_SUCCEED_DELETE_SQL("$3", ", " JQ_COMPLETE_LIST_SQL, JQ_COMPLETE_MANY_SQL(QUEUE), \
						  QUEUE, "$6", "$5")

/*
 * The statements of JQ_PLAN_FAIL and JQ_PLAN_RELEASE, with the job's queue
 * QUEUE (JQ_ANY_QUEUE_SQL or the parameter); SETTINGS the queue whose row
 * gives the backoff, OLD_QUEUE the queue of the release's row o.
 */
#define JQ_FAIL_SQL(SETTINGS, QUEUE) \
	"UPDATE jobqueue.jobs j SET " \
	JQ_FAILED_ATTEMPT_SQL("$5", "$7", \
		"COALESCE($6, " JQ_EPOCH_PLUS_SQL("$9", \
			JQ_BACKOFF_SECS_SQL("q.backoff_base", "q.backoff_max", \
								"j.attempt_count", "$10")) ")", \
		"$3", JQ_ATTEMPT_ENTRY_OF_SQL("$4"), "$8") \
	"FROM jobqueue.queues q " \
	"WHERE q.queue_name = " SETTINGS " AND " JQ_LEASE_HELD_SQL(QUEUE, "$1", "$2", "$7") " " \
	"RETURNING " JQ_OUTCOME_SQL("$7", "q.notify", "q.notify_finished") ", " \
	JQ_FAILED_OUTCOME_SQL
#define JQ_RELEASE_SQL(OLD_QUEUE, QUEUE) \
	"UPDATE jobqueue.jobs j SET status = 'pending', " \
	"  attempt_count = j.attempt_count - 1, available_at = $3, " \
	"  lease_owner = NULL, lease_expires_at = NULL, started_at = NULL " \
	"FROM (SELECT o.started_at FROM jobqueue.jobs o " \
	"      WHERE o.queue_name = " OLD_QUEUE " AND o.id = $1) o " \
	"WHERE " JQ_LEASE_HELD_SQL(QUEUE, "$1", "$2", "$4") " " \
	"RETURNING " JQ_OUTCOME_STARTED_SQL("$4", JQ_QUEUE_NOTIFY_SQL, "false", "o.started_at")

/*
 * The statuses the purge deletes, as a relation s(status): each is a range
 * of jobs_status_idx (status, queue, finished_at) read oldest first,
 * where "status IN (...)" would read both and sort them.
 */
#define JQ_PURGED_STATUSES_SQL \
	"(VALUES ('succeeded'::jobqueue.job_status), ('cancelled'::jobqueue.job_status)) s(status)"

/*
 * No job waits for job j (it may be purged): no row of job_dependencies
 * names it, D being that table's alias.  has_dependents is false unless a
 * job was ever enqueued to wait for j (it is set under j's row lock before
 * the dependency row is written), so most jobs skip the lookup.  The rows
 * naming j carry its queue, QUEUE (on Citus they are on its shard, and
 * Citus routes the lookup to that shard only when QUEUE is the parameter
 * the statement is routed by).
 */
#define JQ_NO_DEPENDENTS_SQL(D, QUEUE) \
	"(NOT j.has_dependents OR NOT EXISTS (SELECT FROM jobqueue.job_dependencies " D " " \
	"WHERE " D ".queue_name = " QUEUE " AND " D ".depends_on = j.id))"

/*
 * running -> pending or dead (fail, reap): a failed attempt is retried when
 * RETRYABLE and attempts are left, at READY_AT; otherwise the job is dead.
 * CODE is the error code recorded, ENTRY the jsonb entry appended to the
 * history, KEEP the history length.
 */
#define JQ_RETRY_COND_SQL(RETRYABLE) \
	"(" RETRYABLE " AND j.attempt_count < j.max_attempts)"
#define JQ_FAILED_ATTEMPT_SQL(RETRYABLE, NOW, READY_AT, CODE, ENTRY, KEEP) \
	"status = CASE WHEN " JQ_RETRY_COND_SQL(RETRYABLE) \
	"  THEN 'pending' ELSE 'dead' END::jobqueue.job_status, " \
	"available_at = CASE WHEN " JQ_RETRY_COND_SQL(RETRYABLE) \
	"  THEN " READY_AT " ELSE j.available_at END, " \
	"finished_at = CASE WHEN " JQ_RETRY_COND_SQL(RETRYABLE) \
	"  THEN NULL ELSE " NOW " END, " \
	"lease_owner = NULL, lease_expires_at = NULL, last_error_code = " CODE ", " \
	"errors = " JQ_APPEND_ERROR_SQL(ENTRY, KEEP) " "

/*
 * The columns after the outcome of a statement that ends an attempt as
 * failed (fail, reap): its error code and number, for the counters of
 * jq_error_counts()
 */
#define JQ_FAILED_OUTCOME_SQL "j.last_error_code, j.attempt_count"

/*
 * The history entry of a failed attempt: ENTRY (a jsonb parameter built in
 * C, jq_attempt_entry(): at, code, message, retryable, detail, stack) with
 * the attempt's number and owner from the row.  IMMUTABLE functions only
 * (jsonb_build_object is STABLE): Citus runs the UPDATE on the shard.
 */
#define JQ_ATTEMPT_ENTRY_OF_SQL(ENTRY) \
	"pg_catalog.jsonb_set(" ENTRY " || pg_catalog.jsonb_object('{owner}'::text[], " \
	"ARRAY[j.lease_owner]), '{attempt}', j.attempt_count::text::jsonb)"

/* The history entry of a failed attempt, built in the statement (reap) */
#define JQ_ATTEMPT_ENTRY_SQL(NOW, CODE, MESSAGE, RETRYABLE) \
	"pg_catalog.jsonb_build_object('attempt', j.attempt_count, 'at', " NOW ", " \
	"'code', " CODE ", 'message', " MESSAGE ", 'retryable', " RETRYABLE ", " \
	"'owner', j.lease_owner)"

/*
 * The history entry of a job cancelled because dependency DEP ended in
 * STATUS (text)
 */
#define JQ_DEPENDENCY_ENTRY_SQL(NOW, DEP, STATUS) \
	"pg_catalog.jsonb_build_object('event', 'dependency_failed', 'at', " NOW ", " \
	"'code', '" JQ_DEPENDENCY_FAILED_CODE "', 'dependency', " DEP ", " \
	"'dependency_status', " STATUS ")"

/*
 * The trace context of the session (jobqueue.traceparent and
 * jobqueue.tracestate, trace.c), NULL when not set: also the DEFAULT of
 * the columns of jobs and schedules
 */
#define JQ_SESSION_TRACEPARENT_SQL \
	"NULLIF(pg_catalog.current_setting('jobqueue.traceparent', true), '')"
#define JQ_SESSION_TRACESTATE_SQL \
	"NULLIF(pg_catalog.current_setting('jobqueue.tracestate', true), '')"

/*
 * dead or cancelled -> pending (replay): a fresh attempt count, pending at
 * RUN_AT; the replay is recorded in the history: ENTRY (a jsonb parameter
 * built in C, jq_replay_entry(): event, at, by) with the status replayed.
 * A job with dependencies that have not succeeded yet waits for them again
 * (waiting; jq_retry checked that none of them failed).  TRACEPARENT and
 * TRACESTATE are the session's trace context (jobqueue.traceparent and
 * jobqueue.tracestate, NULL when not set), read in C: current_setting()
 * is STABLE.  A deadline still ahead of RUN_AT is kept; one that has
 * passed (an expired job) is replaced as at an enqueue: RUN_AT plus the
 * queue's max_wait, none without one or for a job that waits again.
 */
#define JQ_REPLAY_SQL(RUN_AT, ENTRY, KEEP, TRACEPARENT, TRACESTATE) \
	JQ_REPLAY_PLUS_SQL(RUN_AT, ENTRY, KEEP, TRACEPARENT, TRACESTATE, JQ_TS_PLUS_SQL)
/*
 * JQ_REPLAY_SQL with the deadline computed by PLUS(time, interval):
 * JQ_TS_PLUS_SQL, or on Citus JQ_TS_PLUS_EPOCH_SQL (timestamptz + interval
 * is STABLE, which Citus refuses in a CASE of an UPDATE)
 */
#define JQ_TS_PLUS_SQL(TS, IV) TS " + " IV
#define JQ_TS_PLUS_EPOCH_SQL(TS, IV) \
	JQ_EPOCH_PLUS_SQL(JQ_EPOCH_OF_SQL(TS), "pg_catalog.date_part('epoch', " IV ")")
#define JQ_REPLAY_PLUS_SQL(RUN_AT, ENTRY, KEEP, TRACEPARENT, TRACESTATE, PLUS) \
	"status = CASE WHEN j.dependencies_left > 0 THEN 'waiting' ELSE 'pending' " \
	"  END::jobqueue.job_status, attempt_count = 0, available_at = " RUN_AT ", " \
	"start_by = CASE WHEN j.start_by > " RUN_AT " THEN j.start_by " \
	"  WHEN j.dependencies_left > 0 THEN NULL " \
	"  ELSE " PLUS(RUN_AT, "(SELECT q.max_wait FROM jobqueue.queues q " \
	"                     WHERE q.queue_name = j.queue_name)") " END, " \
	"finished_at = NULL, started_at = NULL, lease_owner = NULL, " \
	"lease_expires_at = NULL, trace_origin = j.traceparent, " \
	"traceparent = COALESCE(" TRACEPARENT ", j.traceparent), " \
	"tracestate = CASE WHEN " TRACEPARENT "::text IS NULL THEN j.tracestate " \
	"  ELSE " TRACESTATE " END, " \
	"errors = " JQ_APPEND_ERROR_SQL( \
		ENTRY " || pg_catalog.jsonb_object('{previous_status}'::text[], " \
		"ARRAY[CASE WHEN j.status = 'dead' THEN 'dead' ELSE 'cancelled' END])", KEEP) " "

/*
 * Reap the jobs of CTE c (running jobs whose lease expired, locked): a
 * failed attempt, always retryable, with the queue's backoff.  A job whose
 * queue row is missing (deleted by hand; nobody can claim the job) gets no
 * backoff, so that it is still reaped instead of filling every batch.
 */
#define JQ_REAP_SQL \
	"UPDATE jobqueue.jobs j SET " \
	JQ_FAILED_ATTEMPT_SQL("true", "$2", \
		"$2 + COALESCE((SELECT " \
		JQ_BACKOFF_SQL("q.backoff_base", "q.backoff_max", "j.attempt_count", \
					   "pg_catalog.random()") \
		" FROM jobqueue.queues q WHERE q.queue_name = j.queue_name), " \
		"interval '0')", \
		"'" JQ_LEASE_EXPIRED_CODE "'", \
		JQ_ATTEMPT_ENTRY_SQL("$2", "'" JQ_LEASE_EXPIRED_CODE "'", \
							 "'lease expired at ' || j.lease_expires_at::text", \
							 "true"), \
		"$3") \
	"WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) " \
	"RETURNING " JQ_OUTCOME_SQL("$2", JQ_QUEUE_NOTIFY_SQL, JQ_QUEUE_NOTIFY_FINISHED_SQL) ", " \
	JQ_FAILED_OUTCOME_SQL

/*
 * The INSERT ... SELECT of an enqueue, with CTEs CTES (a WITH list, may
 * reference parameters), returning RETURNING (columns of j).  On plain
 * PostgreSQL a plain INSERT ... RETURNING; on Citus (JQ_DIST_INSERT_SQL)
 * the INSERT is a data-modifying CTE whose rows an outer SELECT turns into
 * the outcome: Citus runs an INSERT ... SELECT of rows that no shard holds
 * by reading them on the node and copying them to the shard, and then
 * runs RETURNING on the shard without the statement's parameters and CTEs
 * ("there is no parameter", "relation "q" does not exist").  The outer
 * SELECT runs on the node, with both.  The ids are drawn in payload order,
 * and the rows come back in it.
 */
#define JQ_INSERT_SQL(CTES, INSERT, RETURNING) \
	CTES " " INSERT " RETURNING " RETURNING
#define JQ_DIST_INSERT_SQL(CTES, INSERT, RETURNING) \
	CTES JQ_DIST_INSERT_I_SQL(", i", INSERT, RETURNING)
#define JQ_DIST_INSERT_I_SQL(I, INSERT, RETURNING) \
	I " AS (" INSERT " RETURNING j.*) SELECT " RETURNING " FROM i AS j ORDER BY j.id"
/* JQ_DIST_INSERT_SQL for a statement without CTEs of its own (CTES "") */
#define JQ_DIST_INSERT_FIRST_SQL(CTES, INSERT, RETURNING) \
	CTES JQ_DIST_INSERT_I_SQL("WITH i", INSERT, RETURNING)

/* The INSERT of the due slots of schedules (JQ_PLAN_SCHEDULE_ENQUEUE), in FORM */
#define JQ_SCHEDULE_ENQUEUE_SQL(FORM) \
	FORM("", \
		 "INSERT INTO jobqueue.jobs AS j " \
		 "  (queue_name, payload, priority, available_at, max_attempts, idempotency_key, " \
		 "   group_key, traceparent, tracestate) " \
		 "SELECT a.queue_name, a.payload, a.priority, $5, q.max_attempts, a.key, " \
		 "       " JQ_NO_GROUP_SQL ", s.traceparent, s.tracestate " \
		 "FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), " \
		 "                pg_catalog.unnest($3), pg_catalog.unnest($4)) WITH ORDINALITY " \
		 "       AS a(queue_name, payload, priority, key, ord) " \
		 "  JOIN jobqueue.queues q ON q.queue_name = a.queue_name " \
		 "  LEFT JOIN jobqueue.schedules s ON s.schedule_name = a.payload->>'jq_schedule' " \
		 "ORDER BY a.ord " \
		 "ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL " \
		 "DO NOTHING", \
		 JQ_OUTCOME_SQL("$5", JQ_QUEUE_NOTIFY_SQL, "false") ", j.id, j.idempotency_key")

/* Ordering and fairness (ordering.c): JQ_GROUP_POLICY_SQL in jobqueue.h */

/*
 * The group key of a job enqueued without one: '' (the group of the jobs
 * without a group) in a queue with a group policy, so that the claims of
 * such a queue find every job through the group indexes; NULL otherwise.
 */
#define JQ_NO_GROUP_SQL \
	"CASE WHEN " JQ_GROUP_POLICY_SQL " THEN '' END"

/*
 * Effective priority of job j under queue q's priority_aging (AGING_SECS,
 * the interval in seconds as float8, NULL for none): priority plus one per
 * full aging interval waited since available_at.  In float8, so that a
 * long wait cannot overflow an integer.
 */
#define JQ_EFFECTIVE_PRIORITY_SQL(NOW, AGING_SECS) \
	"(j.priority::float8 + COALESCE(pg_catalog.floor(" \
	"pg_catalog.date_part('epoch', " NOW " - j.available_at) / " AGING_SECS "), 0))"

/*
 * Job X may still start at $5 (controls.c): it has no deadline, or its
 * start_by is later.  Every claim (but that of a schema from before 1.2)
 * tests it on the rows it locks, so a job past its deadline is never
 * claimed, even before a claim or the worker has expired it.
 */
#define JQ_NOT_EXPIRED_SQL(X) \
	"(" X ".start_by IS NULL OR " X ".start_by > $5)"

/*
 * Can group gr of queue q start a job now (CTE q: lim, ordered)?  Below
 * its limit; for strict order, nothing running and its head (the oldest
 * unfinished job) pending and due; otherwise a ready job (one probe of
 * the group's jobs, never a hash of the queue's).  The group of the jobs
 * without a group ('') has neither limit nor order.
 */
/*
 * Per-group rate limits: the tokens group row G has at NOW (epoch seconds)
 * under rate RATE (jobs started per second, NULL: no limit) and bucket size
 * BURST: what it had at G.rate_epoch plus what flowed in since, at most
 * BURST (a row never debited, rate_epoch 0, is full).  The claim that
 * leases jobs of the group debits them (JQ_GROUP_LEASE_RATED_SQL) on the
 * row it holds locked, so the tokens are exact like the running counter.
 */
#define JQ_GROUP_TOKENS_SQL(G, NOW, RATE, BURST) \
	"CASE WHEN " RATE " IS NOT NULL THEN LEAST(" BURST "::float8, " \
	G ".rate_tokens + " RATE " * GREATEST(" NOW " - " G ".rate_epoch, 0)) END"

/*
 * A group's rate and bucket size from its override row OV (may be all
 * NULL) and the queue's defaults in q: the override, else the queue's
 * group_rate_limit / group_rate_burst, the burst by default ceil(rate).
 */
#define JQ_GROUP_RATE_SQL(OV) "COALESCE(" OV ".rate_limit, q.grate)"
#define JQ_GROUP_BURST_SQL(OV) \
	"COALESCE(" OV ".rate_burst, q.gburst, " \
	"GREATEST(1, pg_catalog.ceil(COALESCE(" OV ".rate_limit, q.grate)))::int)"

/*
 * Fair share: the usage of group row G (seconds, as of G.usage_epoch)
 * decayed to NOW (epoch seconds) with half-life HL (seconds): usage *
 * 2^(-(NOW - usage_epoch) / HL).  Past 60 half-lives it is 0 (and power()
 * never underflows).  Immutable arithmetic only, operators qualified: it
 * runs in the trigger's statement under any search_path.
 */
#define JQ_DECAYED_USAGE_SQL(G, NOW, HL) \
	"(CASE WHEN (" G ".usage_epoch OPERATOR(pg_catalog.-) " NOW ") " \
	"           OPERATOR(pg_catalog./) " HL " OPERATOR(pg_catalog.<) -60::float8 THEN 0::float8 " \
	"      ELSE " G ".usage OPERATOR(pg_catalog.*) pg_catalog.power(2::float8, " \
	"           LEAST(" G ".usage_epoch OPERATOR(pg_catalog.-) " NOW ", 0::float8) " \
	"           OPERATOR(pg_catalog./) " HL ") END)"

/*
 * Fair share: what the running jobs of group G of queue $1 have used so
 * far at NOW (a timestamptz): each its declared cost, else its time since
 * its claim.  Read only for a group with running jobs.
 */
#define JQ_RUNNING_USAGE_SQL(G, NOW) \
	"CASE WHEN " G ".running > 0 THEN (" \
	"  SELECT COALESCE(pg_catalog.sum(COALESCE(rj.cost, " \
	"           GREATEST(pg_catalog.date_part('epoch', " NOW " - rj.started_at), 0))), 0) " \
	"  FROM jobqueue.jobs rj WHERE rj.queue_name = $1 AND rj.group_key = " G ".group_key " \
	"    AND rj.status = 'running') ELSE 0 END"

#define JQ_GROUP_ADMISSIBLE_SQL \
	"(gr.group_key = '' OR o.lim IS NULL OR gr.running < o.lim) " \
	"AND (gr.group_key = '' OR o.avail IS NULL OR o.avail >= 1) " \
	"AND (gr.group_key = '' OR NOT q.ordered OR gr.running = 0) " \
	"AND CASE WHEN q.ordered AND gr.group_key <> '' THEN (" \
	"  SELECT h.status = 'pending' AND h.available_at <= $5 " \
	"  FROM jobqueue.jobs h WHERE h.queue_name = $1 AND h.group_key = gr.group_key " \
	"    AND h.status IN ('pending', 'running', 'dead') " \
	"  ORDER BY h.id LIMIT 1) " \
	"ELSE COALESCE((SELECT true FROM jobqueue.jobs r WHERE r.queue_name = $1 " \
	"  AND r.group_key = gr.group_key AND r.status = 'pending' " \
	"  AND r.available_at <= $5 LIMIT 1), false) END "

/*
 * Fair share: the key of a group with charged usage USAGE (seconds, as of
 * EPOCH, Unix epoch seconds) and weight W under half-life HL (seconds):
 * log2(USAGE / W) + EPOCH / HL, -Infinity for no usage.  Decay to a later
 * time T multiplies every group's usage by the same 2^(-(T - EPOCH) / HL),
 * which adds the same to every log2(usage / weight) as T / HL takes away:
 * the key of a group stays put until it is charged again, and the order of
 * the keys is the order of usage per weight at any time, so an index
 * (groups_share_idx) serves it.  Logarithms, so no overflow however long
 * the queue lives.  Operators qualified (it runs in the trigger's
 * statement under any search_path).
 */
#define JQ_SHARE_KEY_SQL(USAGE, EPOCH, W, HL) \
	"(CASE WHEN (" USAGE ") OPERATOR(pg_catalog.>) 0::float8 " \
	"      THEN pg_catalog.ln((" USAGE ") OPERATOR(pg_catalog./) (" W ")) " \
	"             OPERATOR(pg_catalog./) pg_catalog.ln(2::float8) " \
	"           OPERATOR(pg_catalog.+) (" EPOCH ") OPERATOR(pg_catalog./) (" HL ") " \
	"      ELSE '-Infinity'::float8 END)"

/*
 * Has the group of row G of jobqueue.groups (of queue Q, a row of
 * jobqueue.queues, NULL when the queue is gone) no fair-share usage left
 * at NOW (Unix epoch seconds): none, or less than a millisecond once
 * decayed?  Until then the row of a group without jobs is kept, so that a
 * tenant that pauses comes back with the usage it had.  Tested in the log
 * domain (power() would underflow after a thousand half-lives).
 */
#define JQ_USAGE_SPENT_SQL(G, Q, NOW) \
	"(CASE WHEN " G ".usage > 0 AND " Q ".queue_name IS NOT NULL " \
	"      THEN pg_catalog.ln(" G ".usage) / pg_catalog.ln(2::float8) " \
	"           + (" G ".usage_epoch - " NOW ") " \
	"             / pg_catalog.date_part('epoch', " Q ".fair_share_half_life) " \
	"           < pg_catalog.ln(0.001::float8) / pg_catalog.ln(2::float8) " \
	"      ELSE true END)"

/* A group's fair-share weight: its override, else 1 (G: its row) */
#define JQ_GROUP_WEIGHT_SQL(G) JQ_GROUP_WEIGHT_AND_SQL(G, "")
/* The same, with TEST added to the lookup (a queue test, for Citus) */
#define JQ_GROUP_WEIGHT_AND_SQL(G, TEST) \
	"COALESCE((SELECT gl.weight FROM jobqueue.group_limits gl " \
	"          WHERE gl.queue_name OPERATOR(pg_catalog.=) " G ".queue_name " \
	"            AND gl.group_key OPERATOR(pg_catalog.=) " G ".group_key" TEST "), 1::float8)"

/*
 * One step of the fair-share walk (JQ_PLAN_CLAIM_FAIR): the next group of
 * queue $1 in share_key order for which COND holds that can start a job,
 * its row locked (SKIP LOCKED), with its limit, rate tokens and weight;
 * nz: 1 when it has no running job.
 */
#define JQ_FAIR_STEP_SQL(COND) \
	"SELECT gr.group_key, gr.share_key, gr.running, o.lim, o.avail, o.wt, " \
	"       (gr.running = 0)::int AS nz " \
	"FROM jobqueue.groups gr CROSS JOIN q CROSS JOIN LATERAL (" \
	"  SELECT COALESCE(gl.concurrency, q.lim) AS lim, COALESCE(gl.weight, 1::float8) AS wt, " \
	"         " JQ_GROUP_TOKENS_SQL("gr", "$6", JQ_GROUP_RATE_SQL("gl"), JQ_GROUP_BURST_SQL("gl")) " AS avail " \
	"  FROM (SELECT) one LEFT JOIN jobqueue.group_limits gl " \
	"    ON gl.queue_name = $1 AND gl.group_key = gr.group_key) o " \
	"WHERE gr.queue_name = $1 AND " COND " AND " JQ_GROUP_ADMISSIBLE_SQL \
	"ORDER BY gr.share_key, gr.group_key LIMIT 1 FOR NO KEY UPDATE OF gr SKIP LOCKED"

/*
 * One step of the deadline walk of a queue with a group policy
 * (JQ_PLAN_CLAIM_GROUPS_DEADLINE): the next ready job of queue $1 in ORDER
 * for which WHERE holds, whose group can start one more job after the
 * jobs TAKEN (a text[] of their group keys) that this claim has chosen
 * already: below its limit (override, else group_concurrency) counting
 * them, and with a rate token for each.  Its group's row is locked (FOR NO
 * KEY UPDATE SKIP LOCKED, the conditions rechecked on the newest version,
 * as in JQ_GROUP_BRANCH_SQL): a group another claim serves is passed over;
 * a group this claim locked already is not.  The job itself is locked
 * later (l).
 */
#define JQ_EDF_STEP_SQL(WHERE, TAKEN, ORDER) \
	"SELECT j.id, j.start_by, j.priority, j.available_at, j.group_key, o.avail " \
	"FROM jobqueue.jobs j JOIN jobqueue.groups gr " \
	"  ON gr.queue_name = $1 AND gr.group_key = j.group_key " \
	"CROSS JOIN q CROSS JOIN LATERAL (" \
	"  SELECT COALESCE(gl.concurrency, q.lim) AS lim, " \
	"         " JQ_GROUP_TOKENS_SQL("gr", "$6", JQ_GROUP_RATE_SQL("gl"), JQ_GROUP_BURST_SQL("gl")) " AS avail " \
	"  FROM (SELECT) one LEFT JOIN jobqueue.group_limits gl " \
	"    ON gl.queue_name = $1 AND gl.group_key = j.group_key) o " \
	"CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS k FROM pg_catalog.unnest(" TAKEN ") t " \
	"                    WHERE t = j.group_key) tk " \
	"WHERE j.queue_name = $1 AND j.status = 'pending' AND j.available_at <= $5 " \
	"  AND " WHERE " " \
	"  AND (gr.group_key = '' OR o.lim IS NULL OR gr.running + tk.k < o.lim) " \
	"  AND (gr.group_key = '' OR o.avail IS NULL OR o.avail >= tk.k + 1) " \
	"ORDER BY " ORDER " LIMIT 1 FOR NO KEY UPDATE OF gr SKIP LOCKED"

/*
 * The groups of queue $1 that have pending jobs, in key order, found by a
 * skip scan of jobs_group_idx (one index probe per group): NAME(key), the
 * keys from the first one for which START holds (a condition on j) on, as
 * long as WHILE holds (a condition on NAME.key).  The claims of the group
 * policies walk these rather than jobqueue.groups, so that their cost
 * follows the groups that have work, not every group the queue ever had.
 * A recursive CTE is evaluated as far as its reader asks: the LIMIT of
 * the claim stops the scan.
 */
#define JQ_GROUP_KEYS_SQL(NAME, START, WHILE) \
	NAME "(key) AS (" \
	"  (SELECT j.group_key FROM jobqueue.jobs j " \
	"   WHERE j.queue_name = $1 AND j.status = 'pending' AND j.group_key IS NOT NULL " \
	"     AND " START " ORDER BY j.group_key LIMIT 1) " \
	"  UNION ALL " \
	"  SELECT (SELECT j.group_key FROM jobqueue.jobs j " \
	"          WHERE j.queue_name = $1 AND j.status = 'pending' " \
	"            AND j.group_key IS NOT NULL AND j.group_key > " NAME ".key " \
	"          ORDER BY j.group_key LIMIT 1) " \
	"  FROM " NAME " WHERE " NAME ".key IS NOT NULL AND " WHILE ")"

/*
 * The three walks of a rotation that starts after cursor $6: from the
 * first group when there is no cursor (k0), after the cursor (k1), and
 * from the first group up to the cursor (k2).
 */
#define JQ_GROUP_WALKS_SQL \
	JQ_GROUP_KEYS_SQL("k0", "$6::text IS NULL", "true") ", " \
	JQ_GROUP_KEYS_SQL("k1", "j.group_key > $6", "true") ", " \
	JQ_GROUP_KEYS_SQL("k2", "$6::text IS NOT NULL", "k2.key < $6") " "

/*
 * One branch of the rotation over the groups: the groups of walk K, in its
 * order (the LATERAL join keeps it), that can start a job, each with its
 * row of jobqueue.groups locked (FOR NO KEY UPDATE SKIP LOCKED, after
 * the conditions, which READ COMMITTED rechecks on the newest row version;
 * not FOR UPDATE, which would skip a group whose row an enqueue's open
 * transaction holds FOR KEY SHARE).  A group without a row (restored
 * without triggers, not yet repaired) is not served.  o.lim: the group's
 * limit, its override in jobqueue.group_limits (one primary key probe,
 * only for the groups visited) or else the queue's group_concurrency;
 * o.avail: its rate tokens (NULL: no group rate limit), at least 1 to be
 * served.
 */
#define JQ_GROUP_BRANCH_SQL(K, WHILE) \
	"SELECT * FROM (SELECT b.group_key, b.running, b.lim, b.avail FROM " K " k CROSS JOIN LATERAL (" \
	"  SELECT gr.group_key, gr.running, o.lim, o.avail FROM jobqueue.groups gr, q, " \
	"    LATERAL (SELECT COALESCE(ov.concurrency, q.lim) AS lim, " \
	"               " JQ_GROUP_TOKENS_SQL("gr", "$7", JQ_GROUP_RATE_SQL("ov"), JQ_GROUP_BURST_SQL("ov")) " AS avail " \
	"             FROM (SELECT) one LEFT JOIN jobqueue.group_limits ov " \
	"               ON ov.queue_name = $1 AND ov.group_key = k.key) o " \
	"  WHERE gr.queue_name = $1 AND gr.group_key = k.key AND " JQ_GROUP_ADMISSIBLE_SQL \
	"  FOR NO KEY UPDATE OF gr SKIP LOCKED) b " \
	"  WHERE k.key IS NOT NULL AND " WHILE " LIMIT $2) b "

/*
 * The INSERT of jq_enqueue on a schema with groups (1.2): CONFLICT is the
 * ON CONFLICT clause for the idempotency key, or empty for a job without
 * a key.  $1 queue, $2 payload, $3 priority, $4 run_at, $5 max_attempts
 * (resolved), $6 idempotency key, $7 now, $8 group key (resolved: '' for
 * no group in a queue with a group policy), $9 the queue's notify.  A
 * plain INSERT ... VALUES of typed parameters, which Citus routes to the
 * queue's shard with a kept generic plan: what the queue's row decides
 * comes from the backend's cache of queue settings (queuecache.c), read
 * after the lock on jobs that jq_drop_queue and a change of the group
 * policy wait for (jq_enqueue_values in lifecycle.c).
 */
#define JQ_ENQUEUE_GROUPED_SQL(CONFLICT) JQ_ENQUEUE_GROUPED_ID_SQL("", "", CONFLICT)
#define JQ_ENQUEUE_GROUPED_ID_SQL(ID_COLUMN, ID_VALUE, CONFLICT) \
	"INSERT INTO jobqueue.jobs AS j " \
	"  (" ID_COLUMN "queue_name, payload, priority, available_at, max_attempts, " \
	"   idempotency_key, group_key) " \
	"VALUES (" ID_VALUE "$1, $2, $3, COALESCE($4, $7), $5, $6, $8) " \
	CONFLICT \
	"RETURNING " JQ_OUTCOME_SQL("$7", "$9", "false") ", j.id"

/*
 * The id of a job inserted into a shard of jobs (local_sql), which has no
 * identity of its own: drawn from jobs's sequence, as Citus does for an
 * INSERT into jobs on this node (each node has its own range, jq_distribute).
 */
#define JQ_ID_COLUMN_SQL "id, "
#define JQ_NEXT_ID_VALUE_SQL "pg_catalog.nextval('jobqueue.jobs_id_seq'::pg_catalog.regclass)"
#define JQ_NEXT_ID_SQL JQ_NEXT_ID_VALUE_SQL ", "

/*
 * The INSERT of JQ_PLAN_ENQUEUE_DEPENDENT_ONE (ID_COLUMN, ID_VALUE: the id,
 * for a shard, as JQ_ENQUEUE_GROUPED_ID_SQL)
 */
#define JQ_ENQUEUE_DEPENDENT_ONE_SQL(ID_COLUMN, ID_VALUE) \
	"INSERT INTO jobqueue.jobs AS j " \
	"  (" ID_COLUMN "queue_name, payload, priority, available_at, max_attempts, " \
	"   idempotency_key, status, dependencies_left, finished_at, " \
	"   last_error_code, errors, group_key) " \
	"VALUES (" ID_VALUE "$1, $2, $3, COALESCE($4, $7), $5, $6, " \
	"  CASE WHEN $9::bigint IS NOT NULL THEN 'cancelled' " \
	"       WHEN pg_catalog.cardinality($8) > 0 THEN 'waiting' " \
	"       ELSE 'pending' END::jobqueue.job_status, " \
	"  pg_catalog.cardinality($8), " \
	"  CASE WHEN $9::bigint IS NOT NULL THEN $7 END, " \
	"  CASE WHEN $9::bigint IS NOT NULL THEN '" JQ_DEPENDENCY_FAILED_CODE "' END, " \
	"  CASE WHEN $9::bigint IS NOT NULL THEN pg_catalog.jsonb_build_array(" \
	"    " JQ_DEPENDENCY_ENTRY_SQL("$7", "$9", "$10") ") " \
	"       ELSE '[]'::jsonb END, " \
	"  $11) " \
	JQ_ENQUEUE_KEY_CONFLICT_SQL \
	"RETURNING " JQ_OUTCOME_SQL("$7", "$12", JQ_NOTIFY_FINISHED_SQL("$13"))

/* The ON CONFLICT clause of an enqueue with an idempotency key */
#define JQ_ENQUEUE_KEY_CONFLICT_SQL \
	"ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL " \
	"DO NOTHING "

/* pending -> cancelled, past its deadline (controls.c), at NOW */
#define JQ_EXPIRED_SET_SQL(NOW) \
	"status = 'cancelled', finished_at = " NOW ", lease_expires_at = NULL, " \
	"last_error_code = '" JQ_EXPIRED_CODE "'"

/*
 * The INSERT of jq_enqueue_many on a schema with groups: $1 queue, $2
 * payloads, $3 priority, $4 run_at, $5 now, $6 group keys (NULL, or one
 * per payload), then the values VALS of more columns COLS.  FORM:
 * JQ_INSERT_SQL or JQ_DIST_INSERT_SQL.
 */
#define JQ_ENQUEUE_MANY_GROUPED_COLS_SQL(FORM, COLS, VALS) \
	FORM("WITH q AS (SELECT q.max_attempts, q.notify, " JQ_NO_GROUP_SQL " AS no_group " \
		 "           FROM jobqueue.queues q WHERE q.queue_name = $1)", \
		 "INSERT INTO jobqueue.jobs AS j " \
		 "  (queue_name, payload, priority, available_at, max_attempts, group_key" COLS ") " \
		 "SELECT $1, p.payload, $3, COALESCE($4, $5), q.max_attempts, " \
		 "       COALESCE(p.group_key, q.no_group)" VALS " " \
		 "FROM q, ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($6)) " \
		 "       WITH ORDINALITY AS p(payload, group_key, ord) " \
		 "ORDER BY p.ord", \
		 JQ_OUTCOME_SQL("$5", "(SELECT q.notify FROM q)", "false") ", j.id")
#define JQ_ENQUEUE_MANY_GROUPED_SQL(FORM) JQ_ENQUEUE_MANY_GROUPED_COLS_SQL(FORM, "", "")

/*
 * The INSERT of a job with controls (controls.c): JQ_ENQUEUE_GROUPED_SQL
 * with the job's deadline $9 and declared cost $10; $11 is the queue's
 * notify (JQ_ENQUEUE_GROUPED_SQL's $9).
 */
#define JQ_ENQUEUE_CONTROLLED_SQL(CONFLICT) JQ_ENQUEUE_CONTROLLED_ID_SQL("", "", CONFLICT)
#define JQ_ENQUEUE_CONTROLLED_ID_SQL(ID_COLUMN, ID_VALUE, CONFLICT) \
	"INSERT INTO jobqueue.jobs AS j " \
	"  (" ID_COLUMN "queue_name, payload, priority, available_at, max_attempts, " \
	"   idempotency_key, group_key, start_by, cost) " \
	"VALUES (" ID_VALUE "$1, $2, $3, COALESCE($4, $7), $5, $6, $8, $9, $10) " \
	CONFLICT \
	"RETURNING " JQ_OUTCOME_SQL("$7", "$11", "false") ", j.id"

/*
 * One branch of the rotation of the strictly ordered claim over the groups
 * (RANGE is a condition on gr): the group's head, the lowest id among its
 * pending, running and dead jobs, read in the statement's snapshot, when it
 * is pending and due, locked FOR UPDATE SKIP LOCKED; for the group of the
 * jobs without a group (''), its best ready job.  A head another claim
 * holds is skipped, and a head that a transaction committed since the
 * snapshot moved is rechecked in its newest version (READ COMMITTED's
 * EvalPlanQual: status and available_at), so one head is never handed out
 * twice and a running head never has a successor claimed.  running = 0 in
 * the snapshot only spares the head lookup of a group that is busy.  The
 * head is read again by its ctid (a TID scan, no second index descent);
 * EvalPlanQual does not recheck the ctid, only the filters, on the newest
 * version.  (The planner may put a Memoize over the TID scan: every head
 * comes once per statement, so it never answers from its cache.)
 */
#define JQ_HEAD_BRANCH_SQL(K, WHILE) \
	"SELECT * FROM (SELECT k.key AS group_key, x.id, x.priority, x.available_at " \
	"  FROM " K " k CROSS JOIN LATERAL (" \
	"    SELECT j.id, j.priority, j.available_at FROM (" \
	"      SELECT * FROM (SELECT h.ctid AS tid, h.status, h.available_at " \
	"        FROM jobqueue.jobs h " \
	"        WHERE k.key <> '' AND h.queue_name = $1 " \
	"          AND h.group_key = k.key " \
	"          AND h.status IN ('pending', 'running', 'dead') " \
	"        ORDER BY h.id LIMIT 1) hh " \
	"      UNION ALL " \
	"      SELECT * FROM (SELECT r.ctid, r.status, r.available_at " \
	"        FROM jobqueue.jobs r " \
	"        WHERE k.key = '' AND r.queue_name = $1 AND r.group_key = '' " \
	"          AND r.status = 'pending' AND r.available_at <= $5 " \
	"        ORDER BY r.priority DESC, r.available_at, r.id LIMIT 1) hr) hd " \
	"    JOIN jobqueue.jobs j ON j.ctid = hd.tid " \
	"    WHERE hd.status = 'pending' AND hd.available_at <= $5 " \
	"      AND j.queue_name = $1 AND j.status = 'pending' AND j.available_at <= $5 " \
	"      AND " JQ_NOT_EXPIRED_SQL("j") " " \
	"    FOR NO KEY UPDATE OF j SKIP LOCKED) x " \
	"  WHERE k.key IS NOT NULL AND " WHILE " AND EXISTS (SELECT FROM q) " \
	"  LIMIT $2) b "

/*
 * The parts the two group claims (JQ_PLAN_CLAIM_GROUPS, _ORDERED) share.
 * Inside them q is the queue's CTE (rr: round_robin, aging), g0 the groups
 * served in rotation order, g one of them with its cap, x a candidate.
 *
 * JQ_RR_SHARE_SQL: a round_robin group's share of a claim of $2 jobs over
 * the n.ng groups of g0, rounded up ($2 otherwise).
 */
#define JQ_RR_SHARE_SQL \
	"CASE WHEN q.rr THEN ($2 + n.ng - 1) / n.ng ELSE $2 END"
#define JQ_GROUPS_COUNTED_SQL \
	"FROM g0, q, (SELECT pg_catalog.count(*) AS ng FROM g0) n"

/*
 * The rank of candidate x of group g: for round_robin by its turn within
 * its group, then the group's rotation position; then by effective
 * priority and claim order.
 */
#define JQ_GROUP_RANK_SQL \
	"pg_catalog.row_number() OVER (" \
	"  ORDER BY CASE WHEN q.rr THEN x.turn END, CASE WHEN q.rr THEN g.pos END, " \
	"           x.eff DESC, x.available_at, x.id) AS rank"

/*
 * Candidates of group g when COND: its g.cap best ready jobs, from the
 * group GROUP (an expression), with their effective priority.
 */
#define JQ_GROUP_READY_SQL(COND, GROUP) \
	"SELECT * FROM (" \
	"  SELECT j.id, j.available_at, " \
	"         " JQ_EFFECTIVE_PRIORITY_SQL("$5", "q.aging") " AS eff " \
	"  FROM jobqueue.jobs j " \
	"  WHERE " COND " AND j.queue_name = $1 " \
	"    AND j.group_key = " GROUP " AND j.status = 'pending' " \
	"    AND j.available_at <= $5 " \
	"  ORDER BY j.priority DESC, j.available_at, j.id LIMIT g.cap) a "

/*
 * Lease the jobs IDS (a subquery) and return them in rank order (CTE c),
 * with their group and its rotation position, for the cursor.
 */
/*
 * JQ_GROUP_LEASE_SQL, and the leased jobs debited from their groups' rate
 * tokens (rt: the groups of g0 with a rate limit, whose rows this
 * statement holds locked; NOW epoch seconds).
 */
#define JQ_GROUP_LEASE_RATED_SQL(IDS, NOW) \
	"u AS (" JQ_LEASE_SQL(IDS) " " \
	"      RETURNING j.id, j.payload, j.attempt_count, j.lease_token, " \
	"                j.lease_expires_at, j.available_at, " JQ_CLAIM_TRACE_SQL("j") "), " \
	"rt AS (UPDATE jobqueue.groups gr SET rate_tokens = GREATEST(g0.avail - x.n, 0), " \
	"         rate_epoch = " NOW " " \
	"       FROM (SELECT c.group_key, pg_catalog.count(*) AS n FROM u JOIN c ON c.id = u.id " \
	"             GROUP BY c.group_key) x JOIN g0 ON g0.group_key = x.group_key " \
	"       WHERE gr.queue_name = $1 AND gr.group_key = x.group_key " \
	"         AND g0.avail IS NOT NULL) " \
	"SELECT u.id, u.payload, u.attempt_count, u.lease_token, u.lease_expires_at, " \
	"       u.available_at, " JQ_CLAIM_TRACE_SQL("u") ", c.group_key, c.pos " \
	"FROM u JOIN c ON c.id = u.id ORDER BY c.rank"

#define JQ_GROUP_LEASE_SQL(IDS) \
	"u AS (" JQ_LEASE_SQL(IDS) " " \
	"      RETURNING j.id, j.payload, j.attempt_count, j.lease_token, " \
	"                j.lease_expires_at, j.available_at, " JQ_CLAIM_TRACE_SQL("j") ") " \
	"SELECT u.id, u.payload, u.attempt_count, u.lease_token, u.lease_expires_at, " \
	"       u.available_at, " JQ_CLAIM_TRACE_SQL("u") ", c.group_key, c.pos " \
	"FROM u JOIN c ON c.id = u.id ORDER BY c.rank"

/* JQ_PLAN_JOB, with DEPENDENCIES the list of a job that has some */
#define JQ_JOB_SQL(DEPENDENCIES) \
	"SELECT j.id, j.queue_name, j.status, j.attempt_count, j.max_attempts, " \
	"  j.priority, " \
	"  j.result, j.progress, j.last_error_code, j.errors, j.created_at, " \
	"  j.available_at, j.started_at, j.finished_at, " \
	"  CASE WHEN j.dependencies_left > 0 THEN " DEPENDENCIES " END, " \
	"  j.debounce_key, j.start_by, j.cost " \
	"FROM jobqueue.jobs j WHERE j.queue_name = $2 AND j.id = $1"

/*
 * JQ_PLAN_ENQUEUE_DEPENDENT, with the INSERT of the dependency rows ROWS
 * (", e AS (...) ", or " " where they are written apart)
 */
#define JQ_ENQUEUE_DEPENDENT_SQL(ROWS) \
	"WITH q AS (SELECT q.max_attempts, q.notify, q.notify_finished, " \
	"                  " JQ_NO_GROUP_SQL " AS no_group " \
	"           FROM jobqueue.queues q WHERE q.queue_name = $1), " \
	"i AS (INSERT INTO jobqueue.jobs AS j " \
	"        (queue_name, payload, priority, available_at, max_attempts, " \
	"         idempotency_key, status, dependencies_left, finished_at, " \
	"         last_error_code, errors, group_key) " \
	"      SELECT $1, p.payload, $3, COALESCE($4, $7), COALESCE($5, q.max_attempts), $6, " \
	"        CASE WHEN $9::bigint IS NOT NULL THEN 'cancelled' " \
	"             WHEN pg_catalog.cardinality($8) > 0 THEN 'waiting' " \
	"             ELSE 'pending' END::jobqueue.job_status, " \
	"        pg_catalog.cardinality($8), " \
	"        CASE WHEN $9::bigint IS NOT NULL THEN $7 END, " \
	"        CASE WHEN $9::bigint IS NOT NULL THEN '" JQ_DEPENDENCY_FAILED_CODE "' END, " \
	"        CASE WHEN $9::bigint IS NOT NULL THEN pg_catalog.jsonb_build_array(" \
	"          " JQ_DEPENDENCY_ENTRY_SQL("$7", "$9", "$10") ") " \
	"             ELSE '[]'::jsonb END, " \
	"        COALESCE(p.group_key, q.no_group) " \
	"      FROM q, ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($11)) " \
	"             WITH ORDINALITY AS p(payload, group_key, ord) " \
	"      ORDER BY p.ord " \
	"      ON CONFLICT (queue_name, idempotency_key) WHERE idempotency_key IS NOT NULL " \
	"      DO NOTHING " \
	"      RETURNING j.*)" ROWS \
	"SELECT " JQ_OUTCOME_SQL("$7", "(SELECT q.notify FROM q)", \
							 "(SELECT q.notify_finished FROM q)") " " \
	"FROM i AS j ORDER BY j.id"

/*
 * JQ_PLAN_PURGE, the final DELETE's condition starting with FILTER, with
 * the DELETE of the purged jobs' own dependency rows OWN_ROWS
 */
#define JQ_PURGE_OWN_ROWS_SQL \
	"e AS (DELETE FROM jobqueue.job_dependencies d " \
	"      WHERE d.job_id = ANY (ARRAY(SELECT c.id FROM c))) "
#define JQ_PURGE_SQL(FILTER, OWN_ROWS) \
	"WITH c AS (SELECT p.id FROM jobqueue.queues q CROSS JOIN " JQ_PURGED_STATUSES_SQL " " \
	"           CROSS JOIN LATERAL (" \
	"             SELECT j.id FROM jobqueue.jobs j " \
	"             WHERE j.queue_name = $1 AND j.status = s.status " \
	"               AND j.finished_at < $4 - COALESCE($2, q.retention) " \
	"               AND " JQ_NO_DEPENDENTS_SQL("d", "$1") " " \
	"             ORDER BY j.finished_at LIMIT $3 " \
	"             FOR UPDATE OF j SKIP LOCKED) p " \
	"           WHERE q.queue_name = $1 LIMIT $3) " \
	OWN_ROWS \
	"DELETE FROM jobqueue.jobs j WHERE " FILTER "j.id = ANY (ARRAY(SELECT c.id FROM c))"

/*
 * How a statement is planned when jobqueue.jobs is distributed by Citus
 * (jq_distributed_mode()).  On plain PostgreSQL every statement keeps its
 * generic plan.
 *
 * JQ_DIST_CUSTOM (the default): a custom plan per call.  Citus routes a
 * statement to one shard only when it sees the value of queue_name, and
 * with a generic plan it sees a parameter; only its fast path (below)
 * prunes by a parameter.  Every statement with a CTE, a join, a subquery
 * or a sublink in RETURNING is of this kind, and so is anything not
 * marked otherwise: a custom plan is correct wherever a generic one is.
 *
 * JQ_DIST_GENERIC: the kept generic plan, also on Citus.  One table, no
 * subquery, queue_name = $n among the ANDed conditions: Citus's fast-path
 * router plans it once and prunes to the shard at each execution.
 *
 * JQ_DIST_NODE: not a single-shard statement (a reap, purge or announce of
 * the worker, which on Citus does not run them yet, worker_tasks.c; a read
 * across queues).  A custom plan, as for JQ_DIST_CUSTOM.
 *
 * dist_sql, when set, is the statement's text in distributed mode (same
 * parameters, same columns): JQ_DIST_INSERT_SQL.
 *
 * dist_queue_row: in distributed mode the statement reads the queue's row
 * from one more parameter, its text form (JQ_PLAN_QUEUE_ROW), instead of
 * from jobqueue.queues: its one "FROM jobqueue.queues q " becomes
 * JQ_QUEUE_ROW_FROM_SQL.  These are the claims with a policy and the
 * expiry of a queue's jobs past their start_by that a deadline claim runs
 * first: jq_claim is delegated with force_delegation, for which Citus
 * refuses a statement over two colocation groups (the reference table and
 * the queue's shard).  jq_plan_takes_queue_row() tells the caller, and
 * jq_execute_queue() (spi.c) passes the row.
 */
#define JQ_QUEUES_FROM_SQL "FROM jobqueue.queues q "
#define JQ_QUEUE_ROW_FROM_SQL "FROM (SELECT ($%d::pg_catalog.text::jobqueue.queues).*) q "

typedef enum JqDistPlan
{
	JQ_DIST_CUSTOM = 0,
	JQ_DIST_GENERIC,
	JQ_DIST_NODE
} JqDistPlan;

typedef struct JqPlanSpec
{
	const char *sql;
	int			nargs;
	Oid			argtypes[13];
	const char *name;			/* for error messages */
	bool		read_only;		/* a SELECT: runs in the caller's snapshot */
	JqDistPlan	dist;			/* its plan in distributed mode */
	const char *dist_sql;		/* its text there, when not sql */
	bool		dist_queue_row; /* there, the queue's row as a last parameter */
	int			queue_param;	/* see below */
	const char *local_sql;		/* its text against the shards, when not dist_sql */
} JqPlanSpec;

/*
 * queue_param: the parameter ($n) naming the one queue whose rows the
 * statement reads and writes, of jobqueue.jobs and the tables colocated
 * with it, besides reading jobqueue.queues; no other table, and no
 * function that reads one.  On Citus such a statement may run against the
 * queue's shards on this node instead (localshard.c), with its text there
 * (dist_sql) or local_sql: an INSERT into jobs names the id, since a shard
 * has no identity column.  A statement of the worker (JQ_DIST_NODE), whose
 * queue may also be NULL for every queue ($n IS NULL OR ...), gets a custom
 * plan there, for the queue it names (jq_plan_local_custom).  0: not such
 * a statement.
 */

static const JqPlanSpec plan_specs[JQ_NUM_PLANS] = {
	/*
	 * JQ_PLAN_ENQUEUE: $1 queue, $2 payload, $3 priority, $4 run_at, $5
	 * max_attempts, $6 idempotency key, $7 now.  No row back means either no
	 * such queue or an existing idempotency key.  Outcome (with the id).
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
		"RETURNING " JQ_OUTCOME_SQL("$7", "(SELECT q.notify FROM q)", "false"),
		7, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID},
		.name = "enqueue"
	},
	/* JQ_PLAN_ENQUEUE_EXISTING: $1 queue, $2 idempotency key */
	[JQ_PLAN_ENQUEUE_EXISTING] = {
		"SELECT j.id FROM jobqueue.jobs j "
		"WHERE j.queue_name = $1 AND j.idempotency_key = $2",
		2, {TEXTOID, TEXTOID},
		.name = "enqueue existing", .queue_param = 1
	},
	/*
	 * JQ_PLAN_ENQUEUE_MANY: $1 queue, $2 payloads, $3 priority, $4 run_at,
	 * $5 now.  Identity values are drawn in payload order.  Outcome (with
	 * the id).
	 */
	[JQ_PLAN_ENQUEUE_MANY] = {
		"WITH q AS (SELECT q.max_attempts, q.notify FROM jobqueue.queues q "
		"           WHERE q.queue_name = $1) "
		"INSERT INTO jobqueue.jobs AS j "
		"  (queue_name, payload, priority, available_at, max_attempts) "
		"SELECT $1, p.payload, $3, COALESCE($4, $5), q.max_attempts "
		"FROM q, pg_catalog.unnest($2) WITH ORDINALITY AS p(payload, ord) "
		"ORDER BY p.ord "
		"RETURNING " JQ_OUTCOME_SQL("$5", "(SELECT q.notify FROM q)", "false"),
		5, {TEXTOID, JSONBARRAYOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID},
		.name = "enqueue many"
	},
	/* JQ_PLAN_QUEUE_EXISTS: $1 queue */
	[JQ_PLAN_QUEUE_EXISTS] = {
		"SELECT q.paused, q.notify FROM jobqueue.queues q WHERE q.queue_name = $1",
		1, {TEXTOID},
		.name = "queue exists", .queue_param = 1, .read_only = true
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
		"      LIMIT $2 FOR NO KEY UPDATE OF j SKIP LOCKED), "
		"u AS (" JQ_LEASE_UNTIL_SQL("SELECT c.id FROM c",
								JQ_LEASE_SET_1_1_SQL("$5 + LEAST(COALESCE($4, q.lease_duration), "
													 "q.max_runtime)")) " "
		"      RETURNING j.id, j.payload, j.attempt_count, j.lease_token, "
		"                j.lease_expires_at, j.priority, j.available_at) "
		"SELECT u.id, u.payload, u.attempt_count, u.lease_token, u.lease_expires_at, "
		"       u.available_at, NULL::text, NULL::text, NULL::text "
		"FROM u ORDER BY u.priority DESC, u.available_at, u.id",
		5, {TEXTOID, INT4OID, TEXTOID, INTERVALOID, TIMESTAMPTZOID},
		.name = "claim"
	},
	/*
	 * JQ_PLAN_COMPLETE_KEEP: $1 id, $2 token, $3 now, $4 result, $5 the
	 * queues with notify_finished, $6 the queues that keep no history
	 * (queuecache.c), $7 the job's queue (JQ_ANY_QUEUE_SQL).  Only the
	 * current lease holder, before its lease expires, may complete.  Outcome; no row when the completion is
	 * refused (then JQ_PLAN_COMPLETE_REFUSED) or the job's queue keeps no
	 * history (then JQ_PLAN_COMPLETE_DELETE, with the same parameters).
	 */
	[JQ_PLAN_COMPLETE_KEEP] = {
		JQ_COMPLETE_KEEP_SQL(JQ_ANY_QUEUE_SQL("$7")),
		7, {INT8OID, INT8OID, TIMESTAMPTZOID, JSONBOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID},
		.name = "complete keep", .queue_param = 7, .dist = JQ_DIST_GENERIC,
		.dist_sql = JQ_COMPLETE_KEEP_SQL("$7")
	},
	[JQ_PLAN_COMPLETE_DELETE] = {
		JQ_COMPLETE_DELETE_SQL(JQ_ANY_QUEUE_SQL("$7")),
		7, {INT8OID, INT8OID, TIMESTAMPTZOID, JSONBOID, TEXTARRAYOID, TEXTARRAYOID, TEXTOID},
		.name = "complete delete", .queue_param = 7,
		.dist_sql = JQ_COMPLETE_DELETE_SQL("$7")
	},
	/*
	 * JQ_PLAN_COMPLETE_MANY_KEEP: $1 ids, $2 tokens, $3 now, $4 results
	 * (NULL: none), $5 and $6 as for JQ_PLAN_COMPLETE_KEEP, $7 the jobs'
	 * queue; the same rule per job.  The triples come from ROWS FROM (the multi-array unnest(a,
	 * b) is a parser shorthand for it that exists only unqualified), which
	 * pads a NULL or shorter results array with NULLs.  Outcome of the jobs
	 * completed; JQ_PLAN_COMPLETE_MANY_DELETE for the jobs of the queues
	 * that keep no history; when fewer than asked were completed,
	 * JQ_PLAN_COMPLETE_MANY_REFUSED.
	 */
	[JQ_PLAN_COMPLETE_MANY_KEEP] = {
		JQ_COMPLETE_MANY_KEEP_SQL(JQ_ANY_QUEUE_SQL("$7")),
		7, {INT8ARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID, JSONBARRAYOID, TEXTARRAYOID,
		TEXTARRAYOID, TEXTOID},
		.name = "complete many keep", .queue_param = 7,
		.dist_sql = JQ_COMPLETE_MANY_KEEP_SQL("$7")
	},
	[JQ_PLAN_COMPLETE_MANY_DELETE] = {
		JQ_COMPLETE_MANY_DELETE_SQL(JQ_ANY_QUEUE_SQL("$7")),
		7, {INT8ARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID, JSONBARRAYOID, TEXTARRAYOID,
		TEXTARRAYOID, TEXTOID},
		.name = "complete many delete", .queue_param = 7,
		.dist_sql = JQ_COMPLETE_MANY_DELETE_SQL("$7")
	},
	/*
	 * JQ_PLAN_COMPLETE_REFUSED: $1 id, $2 queue.  After JQ_PLAN_COMPLETE_*
	 * changed nothing: the outcome of a refused completion, with the job's
	 * queue (no row when the queue has no such job).
	 */
	[JQ_PLAN_COMPLETE_REFUSED] = {
		JQ_COMPLETE_REFUSED_SQL(JQ_ANY_QUEUE_SQL("$2")),
		2, {INT8OID, TEXTOID},
		.name = "complete refused", .queue_param = 2, .read_only = true, .dist = JQ_DIST_GENERIC,
		.dist_sql = JQ_COMPLETE_REFUSED_SQL("$2")
	},
	/*
	 * JQ_PLAN_COMPLETE_MANY_REFUSED: $1 ids asked for, $2 ids completed, $3
	 * the queue the ids were completed in (NULL: each job's own queue, a
	 * read of every queue: the refused ids of a call by ids alone).  After
	 * JQ_PLAN_COMPLETE_MANY_* completed fewer than asked: a row with
	 * status NULL for each other id (its queue NULL when that queue has no
	 * such job).
	 */
	[JQ_PLAN_COMPLETE_MANY_REFUSED] = {
		"SELECT " JQ_REFUSED_SQL("j.queue_name", "r.id") " "
		"FROM (SELECT DISTINCT a.id FROM pg_catalog.unnest($1) AS a(id) "
		"      WHERE a.id <> ALL ($2)) r "
		"  LEFT JOIN jobqueue.jobs j ON j.id = r.id "
		"    AND ($3::text IS NULL OR j.queue_name = $3)",
		3, {INT8ARRAYOID, INT8ARRAYOID, TEXTOID},
		.name = "complete many refused", .queue_param = 3, .read_only = true
	},
	/*
	 * JQ_PLAN_FAIL: $1 id, $2 token, $3 error code, $4 the history entry
	 * (jq_attempt_entry: at, code, message, retryable, detail, stack), $5
	 * retryable, $6 retry at (NULL: the queue's backoff), $7 now, $8
	 * history length, $9 now's epoch, $10 jitter (a float8 in [0, 1), from
	 * pg_prng), $11 the job's queue (JQ_ANY_QUEUE_SQL).  Retry when the error is retryable and
	 * attempts are left, else dead.  Outcome.  The new available_at, the history entry and
	 * every other value written come from IMMUTABLE functions of the row
	 * and the parameters.
	 */
	[JQ_PLAN_FAIL] = {
		JQ_FAIL_SQL("j.queue_name", JQ_ANY_QUEUE_SQL("$11")),
		11, {INT8OID, INT8OID, TEXTOID, JSONBOID, BOOLOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
		INT4OID, FLOAT8OID, FLOAT8OID, TEXTOID},
		.name = "fail", .queue_param = 11,
		.dist_sql = JQ_FAIL_SQL("$11", "$11")
	},
	/*
	 * JQ_PLAN_HEARTBEAT: $1 id, $2 token, $3 the new expiry (now + extend
	 * or the queue's lease_duration), $4 now, $5 the job's queue, $6 now -
	 * max_runtime (a job that started later has runtime left), $7
	 * max_runtime in seconds; $3 and $6 computed in C from the cached
	 * settings (queuecache.c).  Never past started_at + max_runtime, also
	 * computed with IMMUTABLE functions (JQ_EPOCH_PLUS_SQL).  Outcome, then
	 * the new expiry; when refused (the lease is lost or the runtime used
	 * up) the job's queue with status NULL, as for
	 * JQ_PLAN_COMPLETE_REFUSED.
	 */
	[JQ_PLAN_HEARTBEAT] = {
		"WITH u AS (UPDATE jobqueue.jobs j SET lease_expires_at = LEAST($3, "
		"               " JQ_EPOCH_PLUS_SQL(JQ_EPOCH_OF_SQL("j.started_at"), "$7") ") "
		"           WHERE " JQ_LEASE_HELD_SQL("$5", "$1", "$2", "$4") " "
		"             AND j.started_at > $6 "
		"           RETURNING " JQ_OUTCOME_SQL("$4", "false", "false") ", j.lease_expires_at) "
		"SELECT * FROM u "
		"UNION ALL "
		"SELECT " JQ_REFUSED_SQL("j.queue_name", "j.id") ", NULL::timestamptz "
		"FROM jobqueue.jobs j WHERE j.queue_name = $5 AND j.id = $1 "
		"  AND NOT EXISTS (SELECT FROM u)",
		7, {INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, TIMESTAMPTZOID,
		FLOAT8OID},
		.name = "heartbeat", .queue_param = 5
	},
	/*
	 * JQ_PLAN_RELEASE: $1 id, $2 token, $3 ready at (now + delay, computed
	 * in C: timestamptz + interval is STABLE), $4 now, $5 the job's queue
	 * (JQ_ANY_QUEUE_SQL; OLD_QUEUE the same for row o).  The attempt is
	 * given back, the token stays incremented so the old holder is fenced.
	 * Outcome, with the attempt's start read from the row before the
	 * UPDATE (o), which clears it.
	 */
	[JQ_PLAN_RELEASE] = {
		JQ_RELEASE_SQL("COALESCE($5, o.queue_name)", JQ_ANY_QUEUE_SQL("$5")),
		5, {INT8OID, INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID},
		.name = "release", .queue_param = 5,
		.dist_sql = JQ_RELEASE_SQL("$5", "$5")
	},
	/*
	 * JQ_PLAN_CANCEL: $1 id, $2 now, $3 the job's queue.  Outcome.  A job that has not finished
	 * (pending, running, waiting) is written as the statuses of 1.0 it is
	 * not: on a schema not updated yet, the statement then fails on the
	 * first column 1.2 added (42703), as every other job function does,
	 * instead of on the enum value 'waiting' (22P02).
	 */
	[JQ_PLAN_CANCEL] = {
		"UPDATE jobqueue.jobs j SET status = 'cancelled', finished_at = $2, "
		"  lease_expires_at = NULL "
		"WHERE j.queue_name = $3 AND j.id = $1 "
		"  AND j.status NOT IN ('succeeded', 'dead', 'cancelled') "
		"RETURNING " JQ_OUTCOME_SQL("$2", "false", JQ_QUEUE_NOTIFY_FINISHED_SQL),
		3, {INT8OID, TIMESTAMPTZOID, TEXTOID},
		.name = "cancel", .queue_param = 3
	},
	/*
	 * JQ_PLAN_RETRY: $1 id, $2 run_at, $3 now, $4 user, $5 history length,
	 * $6 the job's queue, $7 and $8 the session's trace context, $9 the
	 * history entry (jq_replay_entry).  The replay is recorded in the
	 * history, which is otherwise kept.  Outcome.
	 */
	[JQ_PLAN_RETRY] = {
		"UPDATE jobqueue.jobs j SET " JQ_REPLAY_SQL("COALESCE($2, $3)", "$9", "$5", "$7", "$8")
		"WHERE j.queue_name = $6 AND j.id = $1 AND j.status IN ('dead', 'cancelled') "
		"RETURNING " JQ_OUTCOME_SQL("$3", JQ_QUEUE_NOTIFY_SQL, "false"),
		9, {INT8OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, INT4OID, TEXTOID, TEXTOID,
		TEXTOID, JSONBOID},
		.name = "retry", .queue_param = 6,
		.dist_sql =
		"UPDATE jobqueue.jobs j SET "
		JQ_REPLAY_PLUS_SQL("COALESCE($2, $3)", "$9", "$5", "$7", "$8", JQ_TS_PLUS_EPOCH_SQL)
		"WHERE j.queue_name = $6 AND j.id = $1 AND j.status IN ('dead', 'cancelled') "
		"RETURNING " JQ_OUTCOME_SQL("$3", JQ_QUEUE_NOTIFY_SQL, "false")
	},
	/*
	 * JQ_PLAN_RETRY_DEAD: $1 queue, $2 error code or NULL, $3 max jobs, $4
	 * now, $5 user, $6 history length, $7 and $8 the session's trace
	 * context, $9 the history entry (jq_replay_entry).  Oldest dead jobs
	 * first.  Outcome.
	 */
	[JQ_PLAN_RETRY_DEAD] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $1 AND j.status = 'dead' "
		"             AND ($2::text IS NULL OR j.last_error_code = $2) "
		"           ORDER BY j.finished_at, j.id LIMIT $3 "
		"           FOR NO KEY UPDATE OF j SKIP LOCKED) "
		"UPDATE jobqueue.jobs j SET " JQ_REPLAY_SQL("$4", "$9", "$6", "$7", "$8")
		"WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING " JQ_OUTCOME_SQL("$4", JQ_QUEUE_NOTIFY_SQL, "false"),
		9, {TEXTOID, TEXTOID, INT4OID, TIMESTAMPTZOID, TEXTOID, INT4OID, TEXTOID, TEXTOID,
		JSONBOID},
		.name = "retry dead",
		.dist_sql =
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $1 AND j.status = 'dead' "
		"             AND ($2::text IS NULL OR j.last_error_code = $2) "
		"           ORDER BY j.finished_at, j.id LIMIT $3 "
		"           FOR NO KEY UPDATE OF j SKIP LOCKED) "
		"UPDATE jobqueue.jobs j SET "
		JQ_REPLAY_PLUS_SQL("$4", "$9", "$6", "$7", "$8", JQ_TS_PLUS_EPOCH_SQL)
		"WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING " JQ_OUTCOME_SQL("$4", JQ_QUEUE_NOTIFY_SQL, "false")
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
		"           FOR NO KEY UPDATE OF j SKIP LOCKED) "
		JQ_REAP_SQL,
		4, {INT4OID, TIMESTAMPTZOID, INT4OID, INT8ARRAYOID},
		.name = "reap", .dist = JQ_DIST_NODE
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
		.name = "reap candidates", .dist = JQ_DIST_NODE, .read_only = true
	},
	/* JQ_PLAN_REAP_ONE: $1 id, $2 now, $3 history length; as JQ_PLAN_REAP */
	[JQ_PLAN_REAP_ONE] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.id = $1 AND j.status = 'running' "
		"             AND j.lease_expires_at <= $2 "
		"           FOR NO KEY UPDATE OF j SKIP LOCKED) "
		JQ_REAP_SQL,
		3, {INT8OID, TIMESTAMPTZOID, INT4OID},
		.name = "reap one", .dist = JQ_DIST_NODE
	},
	/*
	 * JQ_PLAN_PURGE: $1 queue, $2 older_than or NULL (the queue's
	 * retention), $3 max jobs, $4 now.  A job that others still wait for
	 * (a row of job_dependencies names it) is kept; a purged job's own
	 * dependency rows go with it.
	 */
	[JQ_PLAN_PURGE] = {
		JQ_PURGE_SQL("", ", " JQ_PURGE_OWN_ROWS_SQL),
		4, {TEXTOID, INTERVALOID, INT4OID, TIMESTAMPTZOID},
		.name = "purge",
		/*
		 * the DELETE of jobs on the queue's shard, not on every shard; the
		 * purged jobs' own rows are on their dependencies' shards, dropped
		 * first (JQ_PLAN_PURGE_WAITERS)
		 */
		.dist_sql = JQ_PURGE_SQL("j.queue_name = $1 AND ", "")
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
	 * passed in ($1, $2] (delayed and backed-off jobs that just became
	 * ready), each with the latest such available_at, so that the worker can
	 * leave out a queue it has announced since (a job ready at its commit
	 * was announced then).
	 *
	 * Cheap at any backlog: available_at is the third column of the claim
	 * index, after priority, so instead of reading every pending job of a
	 * queue the recursive part skips from one distinct priority to the next
	 * (one index probe each) and the range is one probe per priority.
	 */
	[JQ_PLAN_READY_QUEUES] = {
		"SELECT q.queue_name, r.latest FROM jobqueue.queues q CROSS JOIN LATERAL ("
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
		"  SELECT pg_catalog.max((SELECT j.available_at FROM jobqueue.jobs j "
		"      WHERE j.queue_name = q.queue_name AND j.status = 'pending' "
		"        AND j.priority = p.priority "
		"        AND j.available_at > $1 AND j.available_at <= $2 "
		"      ORDER BY j.available_at DESC LIMIT 1)) AS latest "
		"  FROM p WHERE p.priority IS NOT NULL) r "
		"WHERE q.notify AND NOT q.paused AND r.latest IS NOT NULL",
		2, {TIMESTAMPTZOID, TIMESTAMPTZOID},
		.name = "ready queues", .dist = JQ_DIST_NODE, .read_only = true
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
		.name = "next lease expiry", .dist = JQ_DIST_NODE, .read_only = true
	},
	/*
	 * JQ_PLAN_PURGE_DUE: $1 max jobs, $2 now.  One batch of finished jobs
	 * past their queue's retention, across queues (the worker's purge: one
	 * transaction for many queues, not one per queue), oldest first within
	 * each queue and status: an index probe of jobs_status_idx per queue
	 * and status.  Returns how many jobs of each queue were deleted, for
	 * the counters.
	 */
	[JQ_PLAN_PURGE_DUE] = {
		"WITH c AS (SELECT p.id FROM jobqueue.queues q CROSS JOIN " JQ_PURGED_STATUSES_SQL " "
		"           CROSS JOIN LATERAL ("
		"             SELECT j.id FROM jobqueue.jobs j "
		"             WHERE j.queue_name = q.queue_name AND j.status = s.status "
		"               AND j.finished_at < $2 - q.retention "
		"               AND " JQ_NO_DEPENDENTS_SQL("dd", "j.queue_name") " "
		"             ORDER BY j.finished_at LIMIT $1 "
		"             FOR UPDATE OF j SKIP LOCKED) p "
		"           LIMIT $1), "
		"e AS (DELETE FROM jobqueue.job_dependencies dd "
		"      WHERE dd.job_id = ANY (ARRAY(SELECT c.id FROM c))), "
		"d AS (DELETE FROM jobqueue.jobs j WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"      RETURNING j.queue_name) "
		"SELECT d.queue_name, pg_catalog.count(*) FROM d GROUP BY d.queue_name",
		2, {INT4OID, TIMESTAMPTZOID},
		.name = "purge due", .dist = JQ_DIST_NODE
	},

	/*----------
	 * Results, progress and dependencies
	 *----------
	 */

	/*
	 * JQ_PLAN_PROGRESS: $1 id, $2 token, $3 progress, $4 now, $5 the job's
	 * queue.  Fenced as heartbeat is; the lease is not extended.  Outcome.
	 */
	[JQ_PLAN_PROGRESS] = {
		"UPDATE jobqueue.jobs j SET progress = $3 "
		"WHERE " JQ_LEASE_HELD_SQL("$5", "$1", "$2", "$4") " "
		"RETURNING " JQ_OUTCOME_SQL("$4", "false", "false"),
		5, {INT8OID, INT8OID, JSONBOID, TIMESTAMPTZOID, TEXTOID},
		.name = "progress", .queue_param = 5, .dist = JQ_DIST_GENERIC
	},
	/*
	 * JQ_PLAN_JOB: $1 id, $2 its queue.  The columns of jq_job(), in its order.  When
	 * jobs gets group_key (fair claiming), it goes after j.priority here
	 * and in the function's definition.
	 */
	[JQ_PLAN_JOB] = {
		JQ_JOB_SQL("ARRAY(SELECT d.depends_on FROM jobqueue.job_dependencies d "
				   "WHERE d.job_id = j.id ORDER BY d.depends_on)"),
		2, {INT8OID, TEXTOID},
		.name = "job", .queue_param = 2, .read_only = true,
		/*
		 * the rows are on the dependencies' shards: an empty array says
		 * there are some, and jq_job reads them (JQ_PLAN_JOB_DEPENDENCIES)
		 */
		.dist_sql = JQ_JOB_SQL("'{}'::bigint[]")
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_LOCK: $1 dependency ids (distinct).  On a
	 * schema from before 1.4 (no check at commit, see
	 * JQ_PLAN_DEPENDENCIES_READ): locks the dependencies in id order until
	 * the enqueue commits and sets has_dependents, as an UPDATE, so that a
	 * completion or failure of one of them either comes first (and we read
	 * its new status) or waits for our commit (and then reads
	 * has_dependents from the row, and finds our rows of
	 * job_dependencies).  One row: the smallest id that does not exist,
	 * the ids that have not succeeded, the smallest id that is dead or
	 * cancelled, its status, and the queues of the ids that have not
	 * succeeded.
	 */
	[JQ_PLAN_DEPENDENCIES_LOCK] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j WHERE j.id = ANY ($1) "
		"           ORDER BY j.id FOR NO KEY UPDATE OF j), "
		"u AS (UPDATE jobqueue.jobs j SET has_dependents = true "
		"      WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"      RETURNING j.id, j.status, j.queue_name) "
		"SELECT (SELECT pg_catalog.min(a.id) FROM pg_catalog.unnest($1) AS a(id) "
		"        WHERE NOT EXISTS (SELECT FROM u WHERE u.id = a.id)), "
		"  ARRAY(SELECT u.id FROM u WHERE u.status <> 'succeeded' ORDER BY u.id), "
		"  (SELECT u.id FROM u WHERE u.status IN ('dead', 'cancelled') "
		"   ORDER BY u.id LIMIT 1), "
		"  (SELECT u.status::text FROM u WHERE u.status IN ('dead', 'cancelled') "
		"   ORDER BY u.id LIMIT 1), "
		"  ARRAY(SELECT u.queue_name FROM u WHERE u.status <> 'succeeded' ORDER BY u.id)",
		1, {INT8ARRAYOID},
		.name = "lock dependencies"
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_READ: $1 dependency ids (distinct).  The result
	 * of JQ_PLAN_DEPENDENCIES_LOCK, from the newest committed version of
	 * each dependency, locked FOR KEY SHARE (in id order) only: that lock
	 * keeps a dependency from being deleted before the enqueue commits,
	 * and conflicts with no UPDATE of a job, so that the dependency's
	 * holder (heartbeat, complete, fail), claims and reaps never wait for
	 * the producer's transaction.  What finishes meanwhile is settled at
	 * commit (JQ_PLAN_DEPENDENCIES_SETTLE).
	 */
	[JQ_PLAN_DEPENDENCIES_READ] = {
		"WITH u AS (SELECT j.id, j.status, j.queue_name FROM jobqueue.jobs j "
		"           WHERE j.id = ANY ($1) ORDER BY j.id FOR KEY SHARE OF j) "
		"SELECT (SELECT pg_catalog.min(a.id) FROM pg_catalog.unnest($1) AS a(id) "
		"        WHERE NOT EXISTS (SELECT FROM u WHERE u.id = a.id)), "
		"  ARRAY(SELECT u.id FROM u WHERE u.status <> 'succeeded' ORDER BY u.id), "
		"  (SELECT u.id FROM u WHERE u.status IN ('dead', 'cancelled') "
		"   ORDER BY u.id LIMIT 1), "
		"  (SELECT u.status::text FROM u WHERE u.status IN ('dead', 'cancelled') "
		"   ORDER BY u.id LIMIT 1), "
		"  ARRAY(SELECT u.queue_name FROM u WHERE u.status <> 'succeeded' ORDER BY u.id)",
		1, {INT8ARRAYOID},
		.name = "read dependencies"
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_SETTLE: $1 dependency ids (distinct), of the
	 * jobs that this transaction made wait; run when it commits (the
	 * deferred trigger on job_dependencies, dependencies.c).  Locks them
	 * in id order (FOR NO KEY UPDATE: a finishing statement under way
	 * commits first, and the next one waits for our commit, brief as it
	 * is) and sets has_dependents where it is not set yet, so that a later
	 * finishing statement reads it from the row and finds our rows of
	 * job_dependencies.  One row: the dependencies that have succeeded and
	 * those that are dead or cancelled, from their newest versions, for
	 * the caller to resolve as their finishing statements would have.
	 */
	[JQ_PLAN_DEPENDENCIES_SETTLE] = {
		"WITH c AS (SELECT j.id, j.status FROM jobqueue.jobs j WHERE j.id = ANY ($1) "
		"           ORDER BY j.id FOR NO KEY UPDATE OF j), "
		"u AS (UPDATE jobqueue.jobs j SET has_dependents = true "
		"      WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) AND NOT j.has_dependents) "
		"SELECT ARRAY(SELECT c.id FROM c WHERE c.status = 'succeeded' ORDER BY c.id), "
		"  ARRAY(SELECT c.id FROM c WHERE c.status IN ('dead', 'cancelled') ORDER BY c.id)",
		1, {INT8ARRAYOID},
		.name = "settle dependencies"
	},
	/*
	 * JQ_PLAN_ENQUEUE_DEPENDENT: $1 queue, $2 payloads, $3 priority, $4
	 * run_at, $5 max_attempts, $6 idempotency key, $7 now, $8 the
	 * dependencies that have not succeeded, $9 the first that is dead or
	 * cancelled (NULL if none), $10 its status, $11 group keys (NULL, or
	 * one per payload), $12 the queues of $8.  JQ_PLAN_ENQUEUE and
	 * JQ_PLAN_ENQUEUE_MANY for jobs with dependencies: each job waits for
	 * $8 (one row of job_dependencies each), or is cancelled at once when
	 * $9 failed.  Outcome, in payload order.
	 */
	[JQ_PLAN_ENQUEUE_DEPENDENT] = {
		JQ_ENQUEUE_DEPENDENT_SQL(", e AS (INSERT INTO jobqueue.job_dependencies "
								 "  (job_id, depends_on, queue_name, job_queue) "
								 "  SELECT i.id, d.id, d.queue_name, $1 FROM i, "
								 "    ROWS FROM (pg_catalog.unnest($8), pg_catalog.unnest($12)) "
								 "      AS d(id, queue_name)) "),
		12, {TEXTOID, JSONBARRAYOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT8ARRAYOID, INT8OID, TEXTOID, TEXTARRAYOID, TEXTARRAYOID},
		.name = "enqueue dependent",
		/* the rows go to their dependencies' shards (JQ_PLAN_DEPENDENCIES_ADD) */
		.dist_sql = JQ_ENQUEUE_DEPENDENT_SQL(" ")
	},
	/*
	 * JQ_PLAN_DEPENDENTS_RELEASE: $1 jobs that succeeded, $2 now, $3 rows
	 * of job_dependencies per batch.  Deletes up to $3 rows naming the
	 * jobs of $1 and counts them off their dependents' dependencies_left
	 * (under the dependent's row lock, so two dependencies finishing at
	 * once are both counted); a waiting dependent that reaches zero
	 * becomes pending, ready now at the latest.  Outcome; no row when
	 * nothing was left to do.
	 */
	[JQ_PLAN_DEPENDENTS_RELEASE] = {
		"WITH e AS (DELETE FROM jobqueue.job_dependencies d "
		"           WHERE d.ctid = ANY (ARRAY("
		"             SELECT d2.ctid FROM jobqueue.job_dependencies d2 "
		"             WHERE d2.depends_on = ANY ($1) LIMIT $3)) "
		"           RETURNING d.job_id, d.depends_on), "
		"n AS (SELECT e.job_id, pg_catalog.count(*)::int AS n, "
		"        pg_catalog.max(e.depends_on) AS dep FROM e GROUP BY e.job_id) "
		"UPDATE jobqueue.jobs j SET "
		"  dependencies_left = j.dependencies_left - n.n, "
		"  trace_origin = CASE WHEN j.status = 'waiting' AND j.dependencies_left = n.n "
		"    THEN (SELECT x.traceparent FROM jobqueue.jobs x WHERE x.id = n.dep) "
		"    ELSE j.trace_origin END, "
		"  status = CASE WHEN j.status = 'waiting' AND j.dependencies_left = n.n "
		"    THEN 'pending' ELSE j.status END::jobqueue.job_status, "
		"  available_at = CASE WHEN j.status = 'waiting' AND j.dependencies_left = n.n "
		"    THEN GREATEST(j.available_at, $2) ELSE j.available_at END "
		"FROM n WHERE j.id = n.job_id "
		"RETURNING " JQ_OUTCOME_SQL("$2", JQ_QUEUE_NOTIFY_SQL, "false"),
		3, {INT8ARRAYOID, TIMESTAMPTZOID, INT4OID},
		.name = "release dependents"
	},
	/*
	 * JQ_PLAN_DEPENDENTS_CANCEL: $1 jobs that ended dead or cancelled, $2
	 * now, $3 history length.  Their waiting dependents are cancelled, with
	 * a history entry naming the (first) dependency that failed; their
	 * rows of job_dependencies stay, for jq_retry.  One level: the caller
	 * repeats with the jobs cancelled here, each time in a new snapshot
	 * that sees dependents enqueued meanwhile.  Outcome.
	 */
	[JQ_PLAN_DEPENDENTS_CANCEL] = {
		"WITH c AS (SELECT d.job_id AS id, pg_catalog.min(d.depends_on) AS dep "
		"           FROM jobqueue.job_dependencies d WHERE d.depends_on = ANY ($1) "
		"           GROUP BY d.job_id), "
		"f AS (SELECT c.id, c.dep, "
		"        (SELECT x.status::text FROM jobqueue.jobs x WHERE x.id = c.dep) AS dep_status "
		"      FROM c) "
		"UPDATE jobqueue.jobs j SET status = 'cancelled', finished_at = $2, "
		"  last_error_code = '" JQ_DEPENDENCY_FAILED_CODE "', "
		"  errors = " JQ_APPEND_ERROR_SQL(JQ_DEPENDENCY_ENTRY_SQL("$2", "f.dep", "f.dep_status"), "$3") " "
		"FROM f WHERE j.id = f.id AND j.status = 'waiting' "
		"RETURNING " JQ_OUTCOME_SQL("$2", "false", JQ_QUEUE_NOTIFY_FINISHED_SQL),
		3, {INT8ARRAYOID, TIMESTAMPTZOID, INT4OID},
		.name = "cancel dependents"
	},
	/*
	 * JQ_PLAN_RETRY_DEPENDENCIES: $1 id.  The job's dependencies that have
	 * not succeeded, locked (FOR SHARE: none of them can finish until the
	 * replay commits); one row for the first that is dead or cancelled, or
	 * that no longer exists (status NULL).
	 */
	[JQ_PLAN_RETRY_DEPENDENCIES] = {
		"WITH c AS (SELECT j.id, j.status FROM jobqueue.jobs j "
		"           WHERE j.id = ANY (ARRAY(SELECT d.depends_on "
		"             FROM jobqueue.job_dependencies d WHERE d.job_id = $1)) "
		"           ORDER BY j.id FOR SHARE OF j) "
		"SELECT d.depends_on, c.status::text "
		"FROM jobqueue.job_dependencies d LEFT JOIN c ON c.id = d.depends_on "
		"WHERE d.job_id = $1 AND (c.id IS NULL OR c.status IN ('dead', 'cancelled')) "
		"ORDER BY d.depends_on LIMIT 1",
		1, {INT8OID},
		.name = "retry dependencies"
	},

	/*------------------------------------------------------------------
	 * Ordering and fairness (ordering.c)
	 *------------------------------------------------------------------
	 */

	/*
	 * JQ_PLAN_ENQUEUE_GROUPED: JQ_ENQUEUE_GROUPED_SQL for a job with an
	 * idempotency key; JQ_PLAN_ENQUEUE with the group (JQ_PLAN_ENQUEUE
	 * serves a schema from before 1.2).  No row back means an existing
	 * idempotency key.  Outcome, then the id.
	 */
	[JQ_PLAN_ENQUEUE_GROUPED] = {
		JQ_ENQUEUE_GROUPED_SQL(JQ_ENQUEUE_KEY_CONFLICT_SQL),
		9, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
		BOOLOID},
		.name = "enqueue grouped", .queue_param = 1, .dist = JQ_DIST_GENERIC,
		.local_sql = JQ_ENQUEUE_GROUPED_ID_SQL(JQ_ID_COLUMN_SQL, JQ_NEXT_ID_SQL,
											   JQ_ENQUEUE_KEY_CONFLICT_SQL)
	},
	/*
	 * JQ_PLAN_ENQUEUE_UNKEYED: JQ_ENQUEUE_GROUPED_SQL for a job without an
	 * idempotency key ($6 NULL), which cannot conflict: a plain INSERT,
	 * without the speculative insertion of ON CONFLICT (one WAL record less
	 * per job).  Outcome, then the id.
	 */
	[JQ_PLAN_ENQUEUE_UNKEYED] = {
		JQ_ENQUEUE_GROUPED_SQL(""),
		9, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
		BOOLOID},
		.name = "enqueue unkeyed", .queue_param = 1, .dist = JQ_DIST_GENERIC,
		.local_sql = JQ_ENQUEUE_GROUPED_ID_SQL(JQ_ID_COLUMN_SQL, JQ_NEXT_ID_SQL, "")
	},
	/*
	 * JQ_PLAN_ENQUEUE_MANY_GROUPED: $1 queue, $2 payloads, $3 priority, $4 run_at,
	 * $5 now, $6 group keys (NULL, or one per payload); JQ_PLAN_ENQUEUE_MANY
	 * with the groups.  Identity values are
	 * drawn in payload order.  Outcome, then the id.
	 */
	[JQ_PLAN_ENQUEUE_MANY_GROUPED] = {
		JQ_ENQUEUE_MANY_GROUPED_SQL(JQ_INSERT_SQL),
		6, {TEXTOID, JSONBARRAYOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTARRAYOID},
		.name = "enqueue many grouped", .queue_param = 1,
		.dist_sql = JQ_ENQUEUE_MANY_GROUPED_SQL(JQ_DIST_INSERT_SQL),
		.local_sql = JQ_ENQUEUE_MANY_GROUPED_COLS_SQL(JQ_INSERT_SQL, ", id",
													  ", " JQ_NEXT_ID_VALUE_SQL)
	},	/*
	 * JQ_PLAN_CLAIM_PLAIN: $1 queue, $2 n, $3 owner, $4 lease expiry, $5 now.
	 *
	 * The claim of a queue without an ordering policy, one statement: pick
	 * the ready jobs in claim order from the partial index, lock them
	 * skipping those another transaction holds, and lease them.  What the
	 * queue's row decides (it exists, it is not paused, it has no policy,
	 * the lease's end) comes from the backend's cache of queue settings
	 * (queuecache.c), so the statement reads jobs only; the lease's end is
	 * computed once, in C.  The primary key probe (= ANY) returns the jobs
	 * in id order: jq_claim_execute puts them in claim order.
	 */
	[JQ_PLAN_CLAIM_PLAIN] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $1 AND j.status = 'pending' "
		"             AND j.available_at <= $5 AND " JQ_NOT_EXPIRED_SQL("j") " "
		"           ORDER BY j.priority DESC, j.available_at, j.id "
		"           LIMIT $2 FOR NO KEY UPDATE OF j SKIP LOCKED) "
		"UPDATE jobqueue.jobs j SET " JQ_LEASE_SET_SQL("$4") " "
		"WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING j.id, j.payload, j.attempt_count, j.lease_token, "
		"          j.lease_expires_at, j.available_at, " JQ_CLAIM_TRACE_SQL("j") ", "
		"          j.priority",
		5, {TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
		.name = "claim plain", .queue_param = 1
	},
	/*
	 * JQ_PLAN_QUEUE_SETTINGS: $1 queue.  What a claim and an enqueue need
	 * of the queue's row (queuecache.c): paused, lease_duration,
	 * max_runtime, a group policy, priority aging, strict order per group,
	 * max_attempts, notify, round_robin; the controls (controls.c):
	 * deadline order, max_wait (whether set, and its value), max_pending,
	 * group_max_pending (0: none).
	 */
	[JQ_PLAN_QUEUE_SETTINGS] = {
		"SELECT q.paused, q.lease_duration, q.max_runtime, "
		JQ_GROUP_POLICY_SQL ", q.priority_aging IS NOT NULL, q.group_ordered, "
		"q.max_attempts, q.notify, q.fairness = 'round_robin', "
		"q.fairness = 'deadline', q.max_wait IS NOT NULL, "
		"COALESCE(q.max_wait, interval '0'), COALESCE(q.max_pending, 0), "
		"COALESCE(q.group_max_pending, 0), "
		"q.fairness = 'fair_share', pg_catalog.date_part('epoch', q.fair_share_half_life) "
		"FROM jobqueue.queues q WHERE q.queue_name = $1",
		1, {TEXTOID},
		.name = "queue settings", .queue_param = 1, .read_only = true
	},
	/*
	 * JQ_PLAN_CLAIM_AGED: $1 queue, $2 n, $3 owner, $4 lease expiry, $5 now; the
	 * claim of a queue with priority_aging and no group policy.
	 *
	 * Within one priority the oldest job has the highest effective
	 * priority, so the n best jobs are among the n oldest ready jobs of
	 * each distinct priority: the recursive part skips from one priority
	 * to the next in jobs_claim_idx (one probe each), the lateral part
	 * reads the n oldest of each (locking them, skipping locked ones), and
	 * the best n by effective priority are leased.  The cost grows with
	 * the number of distinct priorities, not with the backlog.
	 */
	[JQ_PLAN_CLAIM_AGED] = {
		"WITH RECURSIVE q AS (SELECT q.lease_duration, q.max_runtime, "
		"             pg_catalog.date_part('epoch', q.priority_aging) AS aging "
		"           FROM jobqueue.queues q "
		"           WHERE q.queue_name = $1 AND NOT q.paused "
		"             AND NOT " JQ_GROUP_POLICY_SQL " AND q.priority_aging IS NOT NULL), "
		"p(priority) AS ("
		"  (SELECT j.priority FROM jobqueue.jobs j "
		"   WHERE j.queue_name = $1 AND j.status = 'pending' AND EXISTS (SELECT FROM q) "
		"   ORDER BY j.priority DESC LIMIT 1) "
		"  UNION ALL "
		"  SELECT (SELECT j.priority FROM jobqueue.jobs j "
		"          WHERE j.queue_name = $1 AND j.status = 'pending' "
		"            AND j.priority < p.priority "
		"          ORDER BY j.priority DESC LIMIT 1) "
		"  FROM p WHERE p.priority IS NOT NULL), "
		"c AS (SELECT x.id, x.eff, x.available_at FROM p CROSS JOIN LATERAL ("
		"        SELECT j.id, j.available_at, "
		"               " JQ_EFFECTIVE_PRIORITY_SQL("$5", "(SELECT q.aging FROM q)") " AS eff "
		"        FROM jobqueue.jobs j "
		"        WHERE j.queue_name = $1 AND j.status = 'pending' "
		"          AND j.priority = p.priority AND j.available_at <= $5 "
		"          AND " JQ_NOT_EXPIRED_SQL("j") " "
		"        ORDER BY j.available_at, j.id LIMIT $2 "
		"        FOR NO KEY UPDATE OF j SKIP LOCKED) x "
		"      WHERE p.priority IS NOT NULL "
		"      ORDER BY x.eff DESC, x.available_at, x.id LIMIT $2), "
		"u AS (" JQ_LEASE_SQL("SELECT c.id FROM c") " "
		"      RETURNING j.id, j.payload, j.attempt_count, j.lease_token, "
		"                j.lease_expires_at, j.available_at, " JQ_CLAIM_TRACE_SQL("j") ") "
		"SELECT u.id, u.payload, u.attempt_count, u.lease_token, u.lease_expires_at, "
		"       u.available_at, " JQ_CLAIM_TRACE_SQL("u") " "
		"FROM u JOIN c ON c.id = u.id ORDER BY c.eff DESC, c.available_at, c.id",
		5, {TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
		.name = "claim aged", .queue_param = 1, .dist_queue_row = true
	},
	/*
	 * JQ_PLAN_CLAIM_GROUPS: $1 queue, $2 n, $3 owner, $4 lease expiry, $5 now, $6
	 * rotation cursor (the last group this backend served, NULL: from the
	 * start), $7 now as Unix epoch seconds (rate tokens); the claim of a
	 * queue with a group policy.  A group with a rate limit (its override
	 * or the queue's group_rate_limit) gives at most its whole tokens, and
	 * the jobs leased are debited from them (rt).
	 *
	 * g0: up to n groups that can start a job, in rotation order (group
	 * keys after the cursor, then from the start), each row locked FOR
	 * UPDATE SKIP LOCKED: a group is served by one claim at a time, and its
	 * running counter is read from the locked, current row version (READ
	 * COMMITTED rechecks the conditions on it), so the limit and the strict
	 * order hold against concurrent claims.  g: how many jobs each group
	 * may give: 1 for a strictly ordered group (its head), the free slots
	 * under its limit (its override, else group_concurrency), and for round_robin ceil(n / groups).  c: the
	 * candidates of each group (its best ready jobs, or its head), ranked
	 * by (turn, rotation position) for round_robin, by effective priority
	 * otherwise; the first n are locked (SKIP LOCKED, status rechecked) and
	 * leased.  Returns the claim's columns, then the group and its rotation
	 * position, for the cursor.
	 */
	[JQ_PLAN_CLAIM_GROUPS] = {
		"WITH RECURSIVE q AS (SELECT q.lease_duration, q.max_runtime, q.group_concurrency AS lim, "
		"             q.group_rate_limit AS grate, q.group_rate_burst AS gburst, "
		"             q.group_ordered AS ordered, q.fairness = 'round_robin' AS rr, "
		"             pg_catalog.date_part('epoch', q.priority_aging) AS aging "
		"           FROM jobqueue.queues q WHERE q.queue_name = $1 AND NOT q.paused), "
		JQ_GROUP_WALKS_SQL ", "
		"g0 AS (SELECT s.group_key, s.running, s.lim, s.avail, pg_catalog.row_number() OVER () AS pos "
		"       FROM (SELECT * FROM ("
		JQ_GROUP_BRANCH_SQL("k0", "true")
		"             UNION ALL "
		JQ_GROUP_BRANCH_SQL("k1", "true")
		"             UNION ALL "
		JQ_GROUP_BRANCH_SQL("k2", "k.key <= $6")
		"             ) s0 LIMIT $2) s), "
		"g AS (SELECT g0.group_key, g0.pos, "
		"        (g0.group_key <> '' AND q.ordered) AS head_only, "
		"        LEAST($2::bigint, "
		"          CASE WHEN g0.group_key <> '' AND g0.lim IS NOT NULL "
		"               THEN g0.lim - g0.running ELSE $2 END, "
		"          CASE WHEN g0.group_key <> '' AND g0.avail IS NOT NULL "
		"               THEN pg_catalog.floor(g0.avail)::bigint ELSE $2 END, "
		"          " JQ_RR_SHARE_SQL ") AS cap "
		"      " JQ_GROUPS_COUNTED_SQL "), "
		"c AS (SELECT x.id, g.group_key, g.pos, " JQ_GROUP_RANK_SQL " "
		"      FROM g CROSS JOIN q CROSS JOIN LATERAL ("
		"        SELECT y.id, y.available_at, y.eff, "
		"               pg_catalog.row_number() OVER () AS turn "
		"        FROM (" JQ_GROUP_READY_SQL("NOT g.head_only", "g.group_key")
		"              UNION ALL "
		"              SELECT * FROM ("
		"                SELECT j.id, j.available_at, "
		"                       " JQ_EFFECTIVE_PRIORITY_SQL("$5", "q.aging") " AS eff "
		"                FROM (SELECT h.id FROM jobqueue.jobs h "
		"                      WHERE g.head_only AND h.queue_name = $1 "
		"                        AND h.group_key = g.group_key "
		"                        AND h.status IN ('pending', 'running', 'dead') "
		"                      ORDER BY h.id LIMIT 1) hd "
		"                  JOIN jobqueue.jobs j ON j.queue_name = $1 AND j.id = hd.id "
		"                WHERE j.status = 'pending' AND j.available_at <= $5) b) y) x "
		"      ORDER BY rank LIMIT $2), "
		"l AS (SELECT j.id FROM jobqueue.jobs j "
		"      WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"        AND j.status = 'pending' AND " JQ_NOT_EXPIRED_SQL("j") " "
		"      FOR NO KEY UPDATE OF j SKIP LOCKED), "
		JQ_GROUP_LEASE_RATED_SQL("SELECT l.id FROM l", "$7"),
		7, {TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID, FLOAT8OID},
		.name = "claim groups", .queue_param = 1, .dist_queue_row = true
	},
	/*
	 * JQ_PLAN_CLAIM_FAIR: $1 queue, $2 n, $3 owner, $4 lease expiry, $5 now, $6 now
	 * as Unix epoch seconds; the claim of a queue with fairness
	 * 'fair_share' (and no strict order).
	 *
	 * w: the groups that can start a job, walked in the order of their
	 * share_key (groups_share_idx: the order of finished usage per weight,
	 * which decay does not change), each row locked as it is reached (FOR
	 * NO KEY UPDATE SKIP LOCKED, the conditions rechecked on the newest
	 * version, as in JQ_GROUP_BRANCH_SQL): one index probe per group, a
	 * group another claim serves is passed over.  A group with running
	 * jobs is charged more than its key says (their use so far), one
	 * without is charged exactly its key, and every group further on has a
	 * key at least as large: the walk stops once it holds n groups without
	 * running jobs.  f: the charged usage per weight of the groups walked
	 * (in the log domain of share_key), smallest first, then by key; g0:
	 * the first n.  The walk visits at most n + (groups with running jobs)
	 * groups that can start a job, whatever the number of ready groups.
	 * From there as JQ_PLAN_CLAIM_GROUPS with round_robin's shares: one job
	 * per group in turn, groups in usage order, at most ceil(n / groups)
	 * each.
	 */
	[JQ_PLAN_CLAIM_FAIR] = {
		"WITH RECURSIVE q AS (SELECT q.lease_duration, q.max_runtime, q.group_concurrency AS lim, "
		"             q.group_rate_limit AS grate, q.group_rate_burst AS gburst, "
		"             false AS ordered, true AS rr, "
		"             pg_catalog.date_part('epoch', q.priority_aging) AS aging, "
		"             pg_catalog.date_part('epoch', q.fair_share_half_life) AS hl "
		"           FROM jobqueue.queues q WHERE q.queue_name = $1 AND NOT q.paused "
		"             AND q.fairness = 'fair_share' AND NOT q.group_ordered), "
		"w AS (SELECT * FROM (" JQ_FAIR_STEP_SQL("true") ") s0 "
		"      UNION ALL "
		"      SELECT s.group_key, s.share_key, s.running, s.lim, s.avail, s.wt, "
		"             w.nz + (s.running = 0)::int "
		"      FROM w CROSS JOIN LATERAL (" JQ_FAIR_STEP_SQL("(gr.share_key, gr.group_key) > (w.share_key, w.group_key)") ") s "
		"      WHERE w.nz < $2), "
		"f AS (SELECT w.group_key, w.running, w.lim, w.avail, "
		"        CASE WHEN w.running = 0 THEN w.share_key "
		"             ELSE " JQ_SHARE_KEY_SQL("pg_catalog.power(2::float8, w.share_key - $6 / q.hl) * w.wt + (" JQ_RUNNING_USAGE_SQL("w", "$5") ")",
											 "$6", "w.wt", "q.hl") " END AS k "
		"      FROM w CROSS JOIN q), "
		"g0 AS (SELECT f.group_key, f.running, f.lim, f.avail, "
		"         pg_catalog.row_number() OVER (ORDER BY f.k, f.group_key) AS pos "
		"       FROM f ORDER BY f.k, f.group_key LIMIT $2), "
		"g AS (SELECT g0.group_key, g0.pos, false AS head_only, "
		"        LEAST($2::bigint, "
		"          CASE WHEN g0.group_key <> '' AND g0.lim IS NOT NULL "
		"               THEN g0.lim - g0.running ELSE $2 END, "
		"          CASE WHEN g0.group_key <> '' AND g0.avail IS NOT NULL "
		"               THEN pg_catalog.floor(g0.avail)::bigint ELSE $2 END, "
		"          " JQ_RR_SHARE_SQL ") AS cap "
		"      " JQ_GROUPS_COUNTED_SQL "), "
		"c AS (SELECT x.id, g.group_key, g.pos, " JQ_GROUP_RANK_SQL " "
		"      FROM g CROSS JOIN q CROSS JOIN LATERAL ("
		"        SELECT y.id, y.available_at, y.eff, "
		"               pg_catalog.row_number() OVER () AS turn "
		"        FROM (" JQ_GROUP_READY_SQL("true", "g.group_key") ") y) x "
		"      ORDER BY rank LIMIT $2), "
		"l AS (SELECT j.id FROM jobqueue.jobs j "
		"      WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"        AND j.status = 'pending' AND " JQ_NOT_EXPIRED_SQL("j") " "
		"      FOR NO KEY UPDATE OF j SKIP LOCKED), "
		JQ_GROUP_LEASE_RATED_SQL("SELECT l.id FROM l", "$6"),
		6, {TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, FLOAT8OID},
		.name = "claim fair", .queue_param = 1, .dist_queue_row = true
	},
	/*
	 * JQ_PLAN_CLAIM_GROUPS_DEADLINE: $1 queue, $2 n, $3 owner, $4 lease
	 * expiry, $5 now, $6 now as Unix epoch seconds; the claim of a queue
	 * with fairness 'deadline' and a group policy (not strict order):
	 * earliest deadline first within the group limits.
	 *
	 * d: the ready jobs with a start_by still ahead, earliest first
	 * (jobs_start_by_idx), one JQ_EDF_STEP_SQL probe each, carrying the
	 * groups chosen so far; p: when d chose fewer than n, the jobs without
	 * a deadline in priority order (jobs_claim_idx), from where d left off.
	 * A job whose group is at its limit, counting what this claim took, is
	 * passed over, so the walk visits at most n jobs plus those passed over
	 * before them.  The chosen jobs are locked (SKIP LOCKED, status and
	 * deadline rechecked) and leased in the order chosen; the groups'
	 * rate tokens are debited as in JQ_PLAN_CLAIM_GROUPS.
	 */
	[JQ_PLAN_CLAIM_GROUPS_DEADLINE] = {
		"WITH RECURSIVE q AS (SELECT q.lease_duration, q.max_runtime, q.group_concurrency AS lim, "
		"             q.group_rate_limit AS grate, q.group_rate_burst AS gburst "
		"           FROM jobqueue.queues q WHERE q.queue_name = $1 AND NOT q.paused "
		"             AND q.fairness = 'deadline' AND NOT q.group_ordered), "
		"d AS (SELECT s.id, s.start_by, s.priority, s.available_at, s.group_key, s.avail, "
		"             ARRAY[s.group_key] AS taken, 1 AS n "
		"      FROM (" JQ_EDF_STEP_SQL("j.start_by IS NOT NULL AND j.start_by > $5",
								   "'{}'::text[]", "j.start_by, j.id") ") s "
		"      UNION ALL "
		"      SELECT s.id, s.start_by, s.priority, s.available_at, s.group_key, s.avail, "
		"             d.taken || s.group_key, d.n + 1 "
		"      FROM d CROSS JOIN LATERAL (" JQ_EDF_STEP_SQL("j.start_by IS NOT NULL AND j.start_by > $5 "
														"AND (j.start_by, j.id) > (d.start_by, d.id)",
														"d.taken", "j.start_by, j.id") ") s "
		"      WHERE d.n < $2), "
		"d0 AS (SELECT COALESCE((SELECT d.taken FROM d ORDER BY d.n DESC LIMIT 1), '{}'::text[]) AS taken, "
		"              COALESCE((SELECT pg_catalog.max(d.n) FROM d), 0) AS n), "
		"p AS (SELECT s.id, s.start_by, s.priority, s.available_at, s.group_key, s.avail, "
		"             d0.taken || s.group_key AS taken, d0.n + 1 AS n "
		"      FROM d0 CROSS JOIN LATERAL (" JQ_EDF_STEP_SQL("j.start_by IS NULL", "d0.taken",
													   "j.priority DESC, j.available_at, j.id") ") s "
		"      WHERE d0.n < $2 "
		"      UNION ALL "
		"      SELECT s.id, s.start_by, s.priority, s.available_at, s.group_key, s.avail, "
		"             p.taken || s.group_key, p.n + 1 "
		"      FROM p CROSS JOIN LATERAL (" JQ_EDF_STEP_SQL("j.start_by IS NULL "
														"AND (j.priority < p.priority OR (j.priority = p.priority "
														"     AND (j.available_at, j.id) > (p.available_at, p.id)))",
														"p.taken", "j.priority DESC, j.available_at, j.id") ") s "
		"      WHERE p.n < $2), "
		"c AS (SELECT d.id, d.group_key, d.n AS pos, d.n AS rank FROM d "
		"      UNION ALL SELECT p.id, p.group_key, p.n, p.n FROM p), "
		"g0 AS (SELECT DISTINCT ON (w.group_key) w.group_key, w.avail "
		"       FROM (SELECT d.group_key, d.avail FROM d UNION ALL SELECT p.group_key, p.avail FROM p) w "
		"       WHERE w.group_key <> ''), "
		"l AS (SELECT j.id FROM jobqueue.jobs j "
		"      WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"        AND j.status = 'pending' AND " JQ_NOT_EXPIRED_SQL("j") " "
		"      FOR NO KEY UPDATE OF j SKIP LOCKED), "
		JQ_GROUP_LEASE_RATED_SQL("SELECT l.id FROM l", "$6"),
		6, {TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, FLOAT8OID},
		.name = "claim groups deadline", .queue_param = 1, .dist_queue_row = true
	},
	/*
	 * JQ_PLAN_CLAIM_ORDERED: $1 queue, $2 n, $3 owner, $4 lease expiry, $5 now, $6
	 * rotation cursor (as JQ_PLAN_CLAIM_GROUPS); the claim of a strictly
	 * ordered queue (group_ordered), whatever its fairness and aging.
	 *
	 * A strictly ordered group runs one job at a time, its head, so the
	 * head's own row lock serializes the claims of the group: no lock on
	 * jobqueue.groups is needed.  g0: up to n groups in rotation order with
	 * their head locked (JQ_HEAD_BRANCH_SQL).  g: 1 job for each, and for
	 * the group of the jobs without a group what JQ_PLAN_CLAIM_GROUPS gives
	 * it.  c: the candidates ranked as in JQ_PLAN_CLAIM_GROUPS, from the
	 * values g0 read (the heads' newest versions), and the first n leased:
	 * the heads are locked already, the jobs of the group '' are locked in
	 * l (SKIP LOCKED, status and due rechecked).  Refuses a queue that is
	 * not strictly ordered (any more).
	 * Returns the claim's columns, then the group and its rotation
	 * position, for the cursor.
	 */
	[JQ_PLAN_CLAIM_ORDERED] = {
		"WITH RECURSIVE q AS (SELECT q.lease_duration, q.max_runtime, "
		"             q.fairness = 'round_robin' AS rr, "
		"             pg_catalog.date_part('epoch', q.priority_aging) AS aging "
		"           FROM jobqueue.queues q "
		"           WHERE q.queue_name = $1 AND NOT q.paused AND q.group_ordered), "
		JQ_GROUP_WALKS_SQL ", "
		"g0 AS (SELECT s.group_key, s.id, s.priority, s.available_at, "
		"         pg_catalog.row_number() OVER () AS pos "
		"       FROM (SELECT * FROM ("
		JQ_HEAD_BRANCH_SQL("k0", "true")
		"             UNION ALL "
		JQ_HEAD_BRANCH_SQL("k1", "true")
		"             UNION ALL "
		JQ_HEAD_BRANCH_SQL("k2", "k.key <= $6")
		"             ) s0 LIMIT $2) s), "
		"g AS (SELECT g0.group_key, g0.id, g0.priority, g0.available_at, g0.pos, "
		"        CASE WHEN g0.group_key <> '' THEN 1 "
		"             ELSE LEAST($2::bigint, " JQ_RR_SHARE_SQL ") "
		"        END AS cap "
		"      " JQ_GROUPS_COUNTED_SQL "), "
		"c AS (SELECT x.id, g.group_key, g.pos, " JQ_GROUP_RANK_SQL " "
		"      FROM g CROSS JOIN q CROSS JOIN LATERAL ("
		"        SELECT y.id, y.available_at, y.eff, "
		"               pg_catalog.row_number() OVER () AS turn "
		"        FROM (" JQ_GROUP_READY_SQL("g.group_key = ''", "''")
		"              UNION ALL "
		"              SELECT j.id, j.available_at, "
		"                     " JQ_EFFECTIVE_PRIORITY_SQL("$5", "q.aging") " AS eff "
		"              FROM (SELECT g.id, g.priority, g.available_at) j "
		"              WHERE g.group_key <> '') y) x "
		"      ORDER BY rank LIMIT $2), "
		"l AS (SELECT j.id FROM jobqueue.jobs j "
		"      WHERE j.queue_name = $1 "
		"        AND j.id = ANY (ARRAY(SELECT c.id FROM c WHERE c.group_key = '')) "
		"        AND j.status = 'pending' AND j.available_at <= $5 "
		"        AND " JQ_NOT_EXPIRED_SQL("j") " "
		"      FOR NO KEY UPDATE OF j SKIP LOCKED), "
		JQ_GROUP_LEASE_SQL("SELECT c.id FROM c WHERE c.group_key <> '' "
						   "UNION ALL SELECT l.id FROM l"),
		6, {TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID},
		.name = "claim ordered", .queue_param = 1, .dist_queue_row = true
	},
	/*
	 * JQ_PLAN_GROUP_COUNT: $1 queue, $2 group, $3 change of its running
	 * jobs (the trigger jq_group_count, when JQ_PLAN_GROUP_ADD found no
	 * row).  Creates the group's row, or adds to it when a concurrent
	 * transaction created it.  Operators qualified: triggers also fire
	 * under a caller's search_path (hand-written SQL).
	 */
	[JQ_PLAN_GROUP_COUNT] = {
		"INSERT INTO jobqueue.groups AS gr (queue_name, group_key, running) "
		"VALUES ($1, $2, GREATEST($3, 0)) "
		"ON CONFLICT (queue_name, group_key) DO UPDATE "
		"SET running = GREATEST(gr.running OPERATOR(pg_catalog.+) $3, 0) "
		"WHERE $3 OPERATOR(pg_catalog.<>) 0",
		3, {TEXTOID, TEXTOID, INT4OID},
		.name = "group count"
	},
	/*
	 * JQ_PLAN_GROUP_ADD: $1 queue, $2 group, $3 change of its running jobs
	 * (the trigger jq_group_count, when a job moves into or out of
	 * running), $4 seconds charged to its fair-share usage (0: none, the
	 * queue has no fair share), $5 now (Unix epoch seconds), $6 the queue's
	 * fair_share_half_life in seconds: the usage is decayed to now and the
	 * charge added.  The group's row exists but for a job inserted as running
	 * before its group had a row: no row back, then JQ_PLAN_GROUP_COUNT.
	 * An UPDATE: no speculative insertion and no separate row lock record,
	 * unlike INSERT ... ON CONFLICT DO UPDATE.  Operators qualified, as in
	 * JQ_PLAN_GROUP_COUNT.  The weight's lookup names the queue too: on
	 * Citus the trigger runs this inside the statement the coordinator
	 * sent to the shard, where only a statement whose every table is
	 * filtered by the queue runs (on the shard's node).
	 */
	[JQ_PLAN_GROUP_ADD] = {
		"UPDATE jobqueue.groups gr "
		"SET running = GREATEST(gr.running OPERATOR(pg_catalog.+) $3, 0), "
		"    usage = CASE WHEN $4 OPERATOR(pg_catalog.>) 0::float8 "
		"                 THEN " JQ_DECAYED_USAGE_SQL("gr", "$5", "$6") " OPERATOR(pg_catalog.+) $4 "
		"                 ELSE gr.usage END, "
		"    usage_epoch = CASE WHEN $4 OPERATOR(pg_catalog.>) 0::float8 "
		"                       THEN GREATEST(gr.usage_epoch, $5) ELSE gr.usage_epoch END, "
		"    share_key = CASE WHEN $4 OPERATOR(pg_catalog.>) 0::float8 "
		"                     THEN " JQ_SHARE_KEY_SQL(JQ_DECAYED_USAGE_SQL("gr", "$5", "$6") " OPERATOR(pg_catalog.+) $4",
												   "GREATEST(gr.usage_epoch, $5)",
												   JQ_GROUP_WEIGHT_AND_SQL("gr", " AND gl.queue_name OPERATOR(pg_catalog.=) $1"),
												   "$6") " "
		"                     ELSE gr.share_key END "
		"WHERE gr.queue_name OPERATOR(pg_catalog.=) $1 "
		"  AND gr.group_key OPERATOR(pg_catalog.=) $2",
		6, {TEXTOID, TEXTOID, INT4OID, FLOAT8OID, FLOAT8OID, FLOAT8OID},
		.name = "group add"
	},
	/*
	 * JQ_PLAN_GROUP_HOLD: $1 queue, $2 group.  JQ_PLAN_GROUP_CREATE for a
	 * row that exists, the common case: the lock only, without planning
	 * and running the insert.  No row back: JQ_PLAN_GROUP_CREATE.
	 */
	[JQ_PLAN_GROUP_HOLD] = {
		"SELECT 1 FROM jobqueue.groups gr "
		"WHERE gr.queue_name OPERATOR(pg_catalog.=) $1 "
		"  AND gr.group_key OPERATOR(pg_catalog.=) $2 FOR KEY SHARE OF gr",
		2, {TEXTOID, TEXTOID},
		.name = "group hold"
	},
	/*
	 * JQ_PLAN_GROUP_CREATE: $1 queue, $2 group (the trigger jq_group_count,
	 * for a job inserted in a state other than running, or becoming
	 * pending).  The group's row is held FOR KEY SHARE until the
	 * transaction ends, or created when there is none: the worker's prune
	 * (JQ_PLAN_GROUPS_PRUNE_LOCK) never deletes a row so held, so the job
	 * finds its group's row when it commits.  KEY SHARE conflicts with no
	 * UPDATE of the row (claims lock it FOR NO KEY UPDATE), so an open
	 * producer holds up no claim and no completion.  Returns 0 when
	 * neither happened (a concurrent insert or prune won: run it again).
	 * Operators qualified, as in JQ_PLAN_GROUP_COUNT.
	 */
	[JQ_PLAN_GROUP_CREATE] = {
		"WITH l AS (SELECT 1 FROM jobqueue.groups gr "
		"           WHERE gr.queue_name OPERATOR(pg_catalog.=) $1 "
		"             AND gr.group_key OPERATOR(pg_catalog.=) $2 FOR KEY SHARE OF gr), "
		"i AS (INSERT INTO jobqueue.groups (queue_name, group_key, running) "
		"      SELECT $1, $2, 0 WHERE NOT EXISTS (SELECT FROM l) "
		"      ON CONFLICT (queue_name, group_key) DO NOTHING RETURNING 1) "
		"SELECT (SELECT pg_catalog.count(*) FROM l) OPERATOR(pg_catalog.+) "
		"       (SELECT pg_catalog.count(*) FROM i)",
		2, {TEXTOID, TEXTOID},
		.name = "group create"
	},
	/*
	 * JQ_PLAN_GROUPS_REKEY: $1 queue, $2 group (NULL: every group of the
	 * queue).  Sets share_key from usage, usage_epoch, the group's weight
	 * and the queue's half-life, after jq_set_group_limit (a weight) or
	 * jq_alter_queue (a half-life) changed one of them; only the rows whose
	 * key changes are locked (a group without usage keeps -Infinity, so
	 * no claim of a queue without fair share is held up), in group key
	 * order, the canonical order of the group rows (src/README.md): this
	 * cannot deadlock with a statement that applies group counts.  The
	 * key computed under the lock is of the row version locked: l's
	 * condition is rechecked on it (READ COMMITTED).
	 */
	[JQ_PLAN_GROUPS_REKEY] = {
		"WITH l AS (SELECT g.group_key, "
		JQ_SHARE_KEY_SQL("g.usage", "g.usage_epoch", JQ_GROUP_WEIGHT_SQL("g"),
						 "pg_catalog.date_part('epoch', q.fair_share_half_life)") " AS k "
		"           FROM jobqueue.groups g JOIN jobqueue.queues q ON q.queue_name = g.queue_name "
		"           WHERE g.queue_name = $1 AND ($2::text IS NULL OR g.group_key = $2) "
		"             AND g.share_key IS DISTINCT FROM "
		JQ_SHARE_KEY_SQL("g.usage", "g.usage_epoch", JQ_GROUP_WEIGHT_SQL("g"),
						 "pg_catalog.date_part('epoch', q.fair_share_half_life)") " "
		"           ORDER BY g.group_key FOR NO KEY UPDATE OF g) "
		"UPDATE jobqueue.groups gr SET share_key = l.k FROM l "
		"WHERE gr.queue_name = $1 AND gr.group_key = l.group_key",
		2, {TEXTOID, TEXTOID},
		.name = "groups rekey"
	},
	/*
	 * JQ_PLAN_GROUP_STATS: $1 queue, $2 now, $3 now as Unix epoch
	 * seconds.  One row per group with pending, running or dead jobs, from
	 * the jobs (jobs_group_head_idx): the cost follows the unfinished jobs;
	 * see jq_group_stats().  In a fair-share queue, each group's usage
	 * (its row of jobqueue.groups, decayed to now, and its running jobs'
	 * use so far) and its part of the usage of the groups listed.
	 */
	[JQ_PLAN_GROUP_STATS] = {
		"SELECT NULLIF(s.group_key, ''), s.ready, s.running, s.scheduled, s.dead, "
		"       COALESCE(q.group_ordered AND s.group_key <> '' AND ("
		"         SELECT h.status = 'dead' FROM jobqueue.jobs h "
		"         WHERE h.queue_name = $1 AND h.group_key = s.group_key "
		"           AND h.status IN ('pending', 'running', 'dead') "
		"         ORDER BY h.id LIMIT 1), false), "
		"       s.oldest, u.usage, "
		"       u.usage / NULLIF(pg_catalog.sum(u.usage) OVER (), 0) "
		"FROM jobqueue.queues q CROSS JOIN LATERAL (SELECT j.group_key, "
		"    pg_catalog.count(*) FILTER (WHERE j.status = 'pending' AND j.available_at <= $2) AS ready, "
		"    pg_catalog.count(*) FILTER (WHERE j.status = 'running') AS running, "
		"    pg_catalog.count(*) FILTER (WHERE j.status = 'pending' AND j.available_at > $2) AS scheduled, "
		"    pg_catalog.count(*) FILTER (WHERE j.status = 'dead') AS dead, "
		"    $2 - pg_catalog.min(j.available_at) "
		"      FILTER (WHERE j.status = 'pending' AND j.available_at <= $2) AS oldest "
		"  FROM jobqueue.jobs j WHERE j.queue_name = $1 AND j.group_key IS NOT NULL "
		"    AND j.status IN ('pending', 'running', 'dead') "
		"  GROUP BY j.group_key) s "
		"LEFT JOIN LATERAL (SELECT "
		"    " JQ_DECAYED_USAGE_SQL("gr", "$3", "pg_catalog.date_part('epoch', q.fair_share_half_life)")
		"    + " JQ_RUNNING_USAGE_SQL("gr", "$2") " AS usage "
		"  FROM jobqueue.groups gr "
		"  WHERE q.fairness = 'fair_share' AND gr.queue_name = $1 AND gr.group_key = s.group_key) u "
		"  ON true "
		"WHERE q.queue_name = $1 "
		"ORDER BY s.group_key",
		3, {TEXTOID, TIMESTAMPTZOID, FLOAT8OID},
		.name = "group stats", .read_only = true
	},

	/*
	 * JQ_PLAN_GROUPS_REPAIR: $1 queue (NULL: every queue).  The groups
	 * whose row disagrees with their jobs (a: the running jobs of every
	 * group with unfinished jobs; bad: a group whose row is missing or
	 * counts otherwise, or a row that counts running jobs its group has
	 * not), corrected: a wrong row set to the count; the missing rows (m)
	 * are returned, for JQ_PLAN_GROUPS_REPAIR_INSERT (Citus does not run
	 * an INSERT ... SELECT in a CTE).  A row is set only when it is
	 * unchanged since the statement's snapshot (its xmin then is that of
	 * the version the snapshot sees, rechecked on the newest version after
	 * the lock) and not locked: a transaction that moved jobs of the group
	 * since then, or is moving them, changes the row itself, and the count
	 * read in the snapshot could be behind it; such a group is left for the
	 * next pass.  Jobs moved by a transaction still in progress are not in
	 * the snapshot and not in the row either (their changes come when
	 * their statement ends), so they are no disagreement.  One row: the
	 * rows corrected, and the missing rows' queues, groups and running
	 * jobs.
	 *
	 * Every reference to a table repeats the test of $1, also where a join
	 * already implies it: on Citus, where the worker and jq_recount_groups
	 * repair one queue at a time, each reference must name the queue to be
	 * pruned to its shard.  The groups statements below do the same.
	 */
	[JQ_PLAN_GROUPS_REPAIR] = {
		"WITH a AS (SELECT j.queue_name, j.group_key, "
		"             pg_catalog.count(*) FILTER (WHERE j.status = 'running') AS running "
		"           FROM jobqueue.jobs j "
		"           WHERE j.group_key IS NOT NULL "
		"             AND j.status IN ('pending', 'running') "
		"             AND ($1::text IS NULL OR j.queue_name = $1) "
		"           GROUP BY j.queue_name, j.group_key), "
		"bad AS (SELECT a.queue_name, a.group_key, a.running FROM a "
		"        WHERE NOT EXISTS (SELECT FROM jobqueue.groups gr "
		"                          WHERE gr.queue_name = a.queue_name "
		"                            AND ($1::text IS NULL OR gr.queue_name = $1) "
		"                            AND gr.group_key = a.group_key "
		"                            AND gr.running = a.running) "
		"        UNION ALL "
		"        SELECT gr.queue_name, gr.group_key, 0 FROM jobqueue.groups gr "
		"        WHERE gr.running <> 0 AND ($1::text IS NULL OR gr.queue_name = $1) "
		"          AND NOT EXISTS (SELECT FROM a WHERE a.queue_name = gr.queue_name "
		"                                          AND a.group_key = gr.group_key)), "
		"m AS (SELECT b.queue_name, b.group_key, b.running FROM bad b "
		"      WHERE NOT EXISTS (SELECT FROM jobqueue.groups g2 "
		"                        WHERE g2.queue_name = b.queue_name "
		"                          AND ($1::text IS NULL OR g2.queue_name = $1) "
		"                          AND g2.group_key = b.group_key)), "
		"l AS (SELECT gr.queue_name, gr.group_key, b.running "
		"      FROM bad b JOIN jobqueue.groups gr "
		"        ON gr.queue_name = b.queue_name AND gr.group_key = b.group_key "
		"      WHERE ($1::text IS NULL OR gr.queue_name = $1) "
		"        AND gr.xmin = (SELECT g2.xmin FROM jobqueue.groups g2 "
		"                       WHERE g2.queue_name = gr.queue_name "
		"                         AND ($1::text IS NULL OR g2.queue_name = $1) "
		"                         AND g2.group_key = gr.group_key) "
		"      FOR NO KEY UPDATE OF gr SKIP LOCKED), "
		"u AS (UPDATE jobqueue.groups gr SET running = l.running FROM l "
		"      WHERE gr.queue_name = l.queue_name AND gr.group_key = l.group_key "
		"        AND ($1::text IS NULL OR gr.queue_name = $1) "
		"      RETURNING 1) "
		"SELECT (SELECT pg_catalog.count(*) FROM u), "
		"  ARRAY(SELECT m.queue_name FROM m ORDER BY m.queue_name, m.group_key), "
		"  ARRAY(SELECT m.group_key FROM m ORDER BY m.queue_name, m.group_key), "
		"  ARRAY(SELECT m.running FROM m ORDER BY m.queue_name, m.group_key)",
		1, {TEXTOID},
		.name = "groups repair", .dist = JQ_DIST_NODE, .queue_param = 1
	},
	/*
	 * JQ_PLAN_GROUPS_REPAIR_INSERT: $1 queues, $2 groups, $3 running jobs:
	 * the missing rows that JQ_PLAN_GROUPS_REPAIR found, inserted unless a
	 * transaction has made them since (it counted its own jobs: the row
	 * it made is right).  Returns nothing; SPI_processed is the rows made.
	 */
	[JQ_PLAN_GROUPS_REPAIR_INSERT] = {
		"INSERT INTO jobqueue.groups AS gr (queue_name, group_key, running) "
		"SELECT m.queue_name, m.group_key, m.running "
		"FROM ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2), pg_catalog.unnest($3)) "
		"  AS m(queue_name, group_key, running) "
		"ON CONFLICT (queue_name, group_key) DO NOTHING",
		3, {TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID},
		.name = "groups repair insert", .dist = JQ_DIST_NODE
	},
	/*
	 * JQ_PLAN_GROUPS_PRUNE_LOCK: $1 queue (NULL: every queue), $2 max rows,
	 * $3 now (Unix epoch seconds).  Rows of groups that have no running and
	 * no pending job (finished groups: dead and waiting jobs need no row, a
	 * job that becomes pending makes it again) and no fair-share usage left
	 * (JQ_USAGE_SPENT_SQL), locked FOR UPDATE SKIP LOCKED: a row that a
	 * claim, a completion or an enqueue's open transaction holds (FOR KEY
	 * SHARE, JQ_PLAN_GROUP_CREATE) is left for a later pass.  The pending
	 * jobs are read in this statement's snapshot, which may miss an
	 * enqueue that committed meanwhile: JQ_PLAN_GROUPS_PRUNE looks again.
	 */
	[JQ_PLAN_GROUPS_PRUNE_LOCK] = {
		"SELECT gr.queue_name, gr.group_key FROM jobqueue.groups gr "
		"LEFT JOIN jobqueue.queues q ON q.queue_name = gr.queue_name "
		"WHERE gr.running = 0 AND ($1::text IS NULL OR gr.queue_name = $1) "
		"  AND " JQ_USAGE_SPENT_SQL("gr", "q", "$3") " "
		"  AND NOT EXISTS (SELECT FROM jobqueue.jobs j "
		"                  WHERE j.queue_name = gr.queue_name AND j.group_key = gr.group_key "
		"                    AND ($1::text IS NULL OR j.queue_name = $1) "
		"                    AND j.status = 'pending') "
		"LIMIT $2 FOR UPDATE OF gr SKIP LOCKED",
		3, {TEXTOID, INT4OID, FLOAT8OID},
		.name = "groups prune lock", .dist = JQ_DIST_NODE, .queue_param = 1
	},
	/*
	 * JQ_PLAN_GROUPS_PRUNE: $1 queues, $2 groups, the rows that
	 * JQ_PLAN_GROUPS_PRUNE_LOCK locked, in a new snapshot, taken after the
	 * locks: every enqueue that held a row before has committed (its job is
	 * seen, the row is kept) or rolled back, and every later one waits for
	 * this transaction and then makes the row again.  Deletes those that
	 * still have no running and no pending job.  $3: the queue they all
	 * belong to (NULL: any).
	 */
	/*
	 * JQ_PLAN_GROUPS_REKEY_STALE: $1 queue (NULL: every queue).  The rows
	 * whose share_key is not the one their usage, weight and half-life give
	 * (JQ_SHARE_KEY_SQL; a key written by hand, a restore) are set to it,
	 * as JQ_PLAN_GROUPS_REKEY does, skipping a row another transaction
	 * holds (its next charge sets the key anyway).  The keys are compared
	 * up to the rounding of the two ways of computing them.  Returns a row
	 * per group corrected.
	 */
	[JQ_PLAN_GROUPS_REKEY_STALE] = {
		"WITH l AS (SELECT g.queue_name, g.group_key, k.k FROM jobqueue.groups g "
		"           JOIN jobqueue.queues q ON q.queue_name = g.queue_name "
		"           CROSS JOIN LATERAL (SELECT "
		JQ_SHARE_KEY_SQL("g.usage", "g.usage_epoch",
						 JQ_GROUP_WEIGHT_AND_SQL("g", " AND ($1::text IS NULL OR gl.queue_name = $1)"),
						 "pg_catalog.date_part('epoch', q.fair_share_half_life)") " AS k) k "
		"           WHERE ($1::text IS NULL OR g.queue_name = $1) "
		"             AND NOT (g.share_key = k.k OR pg_catalog.abs(g.share_key - k.k) "
		"                      <= 1e-9 * GREATEST(1::float8, pg_catalog.abs(k.k))) "
		"           ORDER BY g.queue_name, g.group_key FOR NO KEY UPDATE OF g SKIP LOCKED) "
		"UPDATE jobqueue.groups gr SET share_key = l.k FROM l "
		"WHERE gr.queue_name = l.queue_name AND gr.group_key = l.group_key "
		"  AND ($1::text IS NULL OR gr.queue_name = $1) RETURNING 1",
		1, {TEXTOID},
		.name = "groups rekey stale", .dist = JQ_DIST_NODE, .queue_param = 1
	},
	[JQ_PLAN_GROUPS_PRUNE] = {
		"DELETE FROM jobqueue.groups gr "
		"USING ROWS FROM (pg_catalog.unnest($1), pg_catalog.unnest($2)) AS c(queue_name, group_key) "
		"WHERE gr.queue_name = c.queue_name AND gr.group_key = c.group_key "
		"  AND ($3::text IS NULL OR gr.queue_name = $3) "
		"  AND gr.running = 0 "
		"  AND NOT EXISTS (SELECT FROM jobqueue.jobs j "
		"                  WHERE j.queue_name = gr.queue_name AND j.group_key = gr.group_key "
		"                    AND ($3::text IS NULL OR j.queue_name = $3) "
		"                    AND j.status IN ('pending', 'running'))",
		3, {TEXTARRAYOID, TEXTARRAYOID, TEXTOID},
		.name = "groups prune", .dist = JQ_DIST_NODE, .queue_param = 3
	},

	/*
	 * JQ_PLAN_ROTATION_READ: $1 queue.  The last group a round_robin claim
	 * of the queue served, whichever session it came from (NULL: none).
	 */
	[JQ_PLAN_ROTATION_READ] = {
		"SELECT r.group_key FROM jobqueue.group_rotation r WHERE r.queue_name = $1",
		1, {TEXTOID},
		.name = "rotation read", .read_only = true
	},
	/*
	 * JQ_PLAN_ROTATION_MOVE: $1 queue, $2 the last group served.  Moves the
	 * shared cursor unless another claim holds it (then that claim moves
	 * it; this one never waits), creating it with the queue's first round
	 * robin claim (a conflict there means another claim just created it).
	 */
	[JQ_PLAN_ROTATION_MOVE] = {
		"WITH l AS (SELECT r.queue_name FROM jobqueue.group_rotation r "
		"           WHERE r.queue_name = $1 FOR UPDATE SKIP LOCKED), "
		"u AS (UPDATE jobqueue.group_rotation r SET group_key = $2 FROM l "
		"      WHERE r.queue_name = l.queue_name RETURNING 1) "
		"INSERT INTO jobqueue.group_rotation (queue_name, group_key) "
		"SELECT $1, $2 WHERE NOT EXISTS (SELECT FROM u) "
		"  AND NOT EXISTS (SELECT FROM jobqueue.group_rotation r WHERE r.queue_name = $1) "
		"ON CONFLICT (queue_name) DO NOTHING",
		2, {TEXTOID, TEXTOID},
		.name = "rotation move"
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
	 * enqueues nothing.  Each job gets the trace context its schedule
	 * recorded (s, by the name the payload carries).  Outcome, then the id
	 * and the key.
	 */
	[JQ_PLAN_SCHEDULE_ENQUEUE] = {
		JQ_SCHEDULE_ENQUEUE_SQL(JQ_INSERT_SQL),
		5, {TEXTARRAYOID, JSONBARRAYOID, INT4ARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID},
		.name = "schedule enqueue",
		.dist_sql = JQ_SCHEDULE_ENQUEUE_SQL(JQ_DIST_INSERT_FIRST_SQL)
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
	/*
	 * JQ_PLAN_COMPLETION_QUEUES: the names of the queues with
	 * notify_finished, and of those that keep no history (retention
	 * zero: a job that succeeds is deleted), as two text[] (queuecache.c).
	 */
	[JQ_PLAN_COMPLETION_QUEUES] = {
		"SELECT ARRAY(SELECT q.queue_name FROM jobqueue.queues q "
		"             WHERE q.notify_finished ORDER BY q.queue_name), "
		"       ARRAY(SELECT q.queue_name FROM jobqueue.queues q "
		"             WHERE q.retention = interval '0' ORDER BY q.queue_name)",
		0, {InvalidOid},
		.name = "completion queues", .read_only = true
	},
	/*
	 * JQ_PLAN_JOB_QUEUE: $1 id.  The job's queue (no row: no such job), for
	 * the calls by id alone, which then run the statement of the queue-first
	 * call.  On Citus a read of every shard, but no write: the write that
	 * follows goes to one shard.
	 */
	[JQ_PLAN_JOB_QUEUE] = {
		"SELECT j.queue_name FROM jobqueue.jobs j WHERE j.id = $1",
		1, {INT8OID},
		.name = "job queue", .read_only = true, .dist = JQ_DIST_NODE
	},
	/*
	 * JQ_PLAN_JOBS_QUEUES: $1 ids, $2 a queue to leave out (NULL: none).
	 * The queues of those jobs, in name order (as JQ_PLAN_JOB_QUEUE, for a
	 * completion of many by ids alone).
	 */
	[JQ_PLAN_JOBS_QUEUES] = {
		"SELECT DISTINCT j.queue_name FROM jobqueue.jobs j "
		"WHERE j.id = ANY ($1) AND ($2::text IS NULL OR j.queue_name <> $2) "
		"ORDER BY j.queue_name",
		2, {INT8ARRAYOID, TEXTOID},
		.name = "jobs queues", .read_only = true, .dist = JQ_DIST_NODE
	},
	/* JQ_PLAN_QUEUE_RATE: $1 queue.  Its rate limit and burst, or NULLs. */
	[JQ_PLAN_QUEUE_RATE] = {
		"SELECT q.rate_limit, q.rate_burst FROM jobqueue.queues q "
		"WHERE q.queue_name = $1",
		1, {TEXTOID},
		.name = "queue rate", .queue_param = 1, .read_only = true
	},

	/*------------------------------------------------------------------
	 * Controls (controls.c)
	 *------------------------------------------------------------------
	 */

	/*
	 * JQ_PLAN_ENQUEUE_CONTROLLED: JQ_PLAN_ENQUEUE_UNKEYED (an INSERT of
	 * values, the queue's settings from the cache, as jq_enqueue_values)
	 * with controls: $9 start_by, $10 cost, $11 the queue's notify.
	 * Outcome, then the id.
	 */
	[JQ_PLAN_ENQUEUE_CONTROLLED] = {
		JQ_ENQUEUE_CONTROLLED_SQL(""),
		11, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
		TIMESTAMPTZOID, FLOAT8OID, BOOLOID},
		.name = "enqueue controlled", .queue_param = 1, .dist = JQ_DIST_GENERIC,
		.local_sql = JQ_ENQUEUE_CONTROLLED_ID_SQL(JQ_ID_COLUMN_SQL, JQ_NEXT_ID_SQL, "")
	},
	/*
	 * JQ_PLAN_ENQUEUE_CONTROLLED_KEYED: JQ_PLAN_ENQUEUE_CONTROLLED with an
	 * idempotency key $6.  No row back means an existing key.
	 */
	[JQ_PLAN_ENQUEUE_CONTROLLED_KEYED] = {
		JQ_ENQUEUE_CONTROLLED_SQL(JQ_ENQUEUE_KEY_CONFLICT_SQL),
		11, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
		TIMESTAMPTZOID, FLOAT8OID, BOOLOID},
		.name = "enqueue controlled keyed", .queue_param = 1, .dist = JQ_DIST_GENERIC,
		.local_sql = JQ_ENQUEUE_CONTROLLED_ID_SQL(JQ_ID_COLUMN_SQL, JQ_NEXT_ID_SQL,
												  JQ_ENQUEUE_KEY_CONFLICT_SQL)
	},
	/*
	 * JQ_PLAN_ENQUEUE_DEBOUNCED: $1 queue, $2 payload, $3 priority, $4
	 * available_at (the end of the quiet period, computed by the caller),
	 * $5 max_attempts (NULL: the queue's), $6 debounce key, $7 now, $8
	 * group key, $9 start_by, $10 cost, $11 debounce_until (infinity: no
	 * bound; never NULL, see jobs_debounce_key_idx).  Inserts the job, or
	 * replaces the pending, never claimed job of the key
	 * (jobs_debounce_key_idx): its payload, priority, group,
	 * max_attempts, deadline, cost and trace context become the new ones,
	 * and its available_at moves to $4, but never past the bound set by the
	 * first call that gave one.  No row back means no such queue, or a
	 * never claimed job that is no longer pending holds the key
	 * (JQ_PLAN_DEBOUNCE_RELEASE).  Outcome, the id, and whether the job was
	 * inserted (a row that the statement inserted has no xmax; a replaced
	 * one has the statement's own).
	 */
	[JQ_PLAN_ENQUEUE_DEBOUNCED] = {
		"INSERT INTO jobqueue.jobs AS j "
		"  (queue_name, payload, priority, available_at, max_attempts, group_key, "
		"   debounce_key, debounce_until, start_by, cost) "
		"SELECT $1, $2, $3, $4, COALESCE($5, q.max_attempts), "
		"       COALESCE($8, " JQ_NO_GROUP_SQL "), $6, $11, $9, $10 "
		"FROM jobqueue.queues q WHERE q.queue_name = $1 "
		"ON CONFLICT (queue_name, debounce_key) "
		"  WHERE debounce_key IS NOT NULL AND debounce_until IS NOT NULL "
		"DO UPDATE SET payload = EXCLUDED.payload, priority = EXCLUDED.priority, "
		"  group_key = EXCLUDED.group_key, max_attempts = EXCLUDED.max_attempts, "
		"  debounce_until = CASE WHEN pg_catalog.isfinite(j.debounce_until) "
		"                        THEN j.debounce_until ELSE EXCLUDED.debounce_until END, "
		"  available_at = LEAST(EXCLUDED.available_at, j.debounce_until), "
		"  start_by = EXCLUDED.start_by, cost = EXCLUDED.cost, "
		"  traceparent = EXCLUDED.traceparent, tracestate = EXCLUDED.tracestate "
		"WHERE j.status = 'pending' AND j.debounce_until IS NOT NULL "
		"RETURNING " JQ_OUTCOME_SQL("$7", "(SELECT q.notify FROM jobqueue.queues q "
		"                                  WHERE q.queue_name = $1)", "false") ", "
		"  j.id, j.xmax = '0'::xid",
		11, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TEXTOID,
		TIMESTAMPTZOID, FLOAT8OID, TIMESTAMPTZOID},
		.name = "enqueue debounced"
	},
	/*
	 * JQ_PLAN_ENQUEUE_MANY_CONTROLLED: JQ_PLAN_ENQUEUE_MANY_GROUPED ($1 to
	 * $6) with $7 start_by and $8 cost for every job.
	 */
	[JQ_PLAN_ENQUEUE_MANY_CONTROLLED] = {
		JQ_ENQUEUE_MANY_GROUPED_COLS_SQL(JQ_INSERT_SQL, ", start_by, cost", ", $7, $8"),
		8, {TEXTOID, JSONBARRAYOID, INT4OID, TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTARRAYOID,
		TIMESTAMPTZOID, FLOAT8OID},
		.name = "enqueue many controlled", .queue_param = 1,
		.dist_sql = JQ_ENQUEUE_MANY_GROUPED_COLS_SQL(JQ_DIST_INSERT_SQL, ", start_by, cost", ", $7, $8"),
		.local_sql = JQ_ENQUEUE_MANY_GROUPED_COLS_SQL(JQ_INSERT_SQL, ", start_by, cost, id",
													  ", $7, $8, " JQ_NEXT_ID_VALUE_SQL)
	},
	/*
	 * JQ_PLAN_EXPIRE_QUEUE: $1 queue, $2 now, $3 max jobs.  The pending jobs
	 * of the queue whose start_by has passed, earliest first, locked
	 * skipping those another transaction holds, are cancelled with
	 * EXPIRED.  Outcome.
	 */
	[JQ_PLAN_EXPIRE_QUEUE] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $1 AND j.status = 'pending' "
		"             AND j.start_by IS NOT NULL AND j.start_by <= $2 "
		"           ORDER BY j.start_by, j.id LIMIT $3 FOR NO KEY UPDATE OF j SKIP LOCKED) "
		"UPDATE jobqueue.jobs j SET " JQ_EXPIRED_SET_SQL("$2") " "
		"WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING " JQ_OUTCOME_SQL("$2", "false", JQ_QUEUE_NOTIFY_FINISHED_SQL),
		3, {TEXTOID, TIMESTAMPTZOID, INT4OID},
		.name = "expire queue", .queue_param = 1, .dist_queue_row = true
	},
	/*
	 * JQ_PLAN_EXPIRE_DUE: $1 now, $2 max jobs; JQ_PLAN_EXPIRE_QUEUE for
	 * every queue (one probe of jobs_start_by_idx per queue), for the
	 * worker.  Outcome.
	 */
	[JQ_PLAN_EXPIRE_DUE] = {
		"WITH c AS (SELECT x.id FROM jobqueue.queues q CROSS JOIN LATERAL ("
		"             SELECT j.id FROM jobqueue.jobs j "
		"             WHERE j.queue_name = q.queue_name AND j.status = 'pending' "
		"               AND j.start_by IS NOT NULL AND j.start_by <= $1 "
		"             ORDER BY j.start_by, j.id LIMIT $2 FOR NO KEY UPDATE OF j SKIP LOCKED) x "
		"           LIMIT $2) "
		"UPDATE jobqueue.jobs j SET " JQ_EXPIRED_SET_SQL("$1") " "
		"WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING " JQ_OUTCOME_SQL("$1", "false", JQ_QUEUE_NOTIFY_FINISHED_SQL),
		2, {TIMESTAMPTZOID, INT4OID},
		.name = "expire due"
	},
	/*
	 * JQ_PLAN_CLAIM_DEADLINE: $1 queue, $2 n, $3 owner, $4 lease expiry, $5
	 * now; the claim of a queue with fairness 'deadline' and no group
	 * policy: earliest start_by first (from jobs_start_by_idx), then the
	 * jobs without a deadline in claim order (from jobs_claim_idx), each
	 * branch locking skipping those another transaction holds; the second
	 * is read only when the first gave fewer than n.  The jobs come back in
	 * id order, with their start_by and priority: jq_claim_deadline puts
	 * them in claim order.
	 */
	[JQ_PLAN_CLAIM_DEADLINE] = {
		"WITH c AS (SELECT s.id FROM ("
		"             SELECT * FROM (SELECT j.id FROM jobqueue.jobs j "
		"               WHERE j.queue_name = $1 AND j.status = 'pending' "
		"                 AND j.start_by IS NOT NULL AND j.start_by > $5 "
		"                 AND j.available_at <= $5 "
		"               ORDER BY j.start_by, j.id LIMIT $2 FOR NO KEY UPDATE OF j SKIP LOCKED) d "
		"             UNION ALL "
		"             SELECT * FROM (SELECT j.id FROM jobqueue.jobs j "
		"               WHERE j.queue_name = $1 AND j.status = 'pending' "
		"                 AND j.available_at <= $5 AND j.start_by IS NULL "
		"               ORDER BY j.priority DESC, j.available_at, j.id "
		"               LIMIT $2 FOR NO KEY UPDATE OF j SKIP LOCKED) p) s LIMIT $2) "
		"UPDATE jobqueue.jobs j SET " JQ_LEASE_SET_SQL("$4") " "
		"WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING j.id, j.payload, j.attempt_count, j.lease_token, "
		"          j.lease_expires_at, j.available_at, " JQ_CLAIM_TRACE_SQL("j") ", "
		"          j.priority, j.start_by",
		5, {TEXTOID, INT4OID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID},
		.name = "claim deadline", .queue_param = 1
	},
	/*
	 * JQ_PLAN_ADMIT_ADD: $1 queue, $2 group (NULL: the queue), $3 new jobs.
	 * Raises the bound of jobqueue.admission by $3 under the row's lock
	 * (a new row gets $3).  The new bound, and whether the row is new (an
	 * inserted row has no xmax).
	 */
	[JQ_PLAN_ADMIT_ADD] = {
		"INSERT INTO jobqueue.admission AS a (queue_name, group_key, bound) "
		"VALUES ($1, $2, $3) "
		"ON CONFLICT (queue_name, group_key) DO UPDATE SET bound = a.bound + EXCLUDED.bound "
		"RETURNING a.bound, a.xmax = '0'::xid",
		3, {TEXTOID, TEXTOID, INT8OID},
		.name = "admit add"
	},
	/*
	 * JQ_PLAN_ADMIT_BUMP_QUEUE, JQ_PLAN_ADMIT_BUMP_GROUP: $1 queue, $2 group
	 * (NULL for the queue's row), $3 new jobs.  JQ_PLAN_ADMIT_ADD for a row
	 * that exists, the common case: an UPDATE locks and raises the bound
	 * in one step, where INSERT ... ON CONFLICT DO UPDATE first locks the
	 * row it conflicts with (one more WAL record per enqueue).  No row:
	 * JQ_PLAN_ADMIT_ADD.  One plan per kind of row, so that each probes
	 * admission_key.
	 */
	[JQ_PLAN_ADMIT_BUMP_QUEUE] = {
		"UPDATE jobqueue.admission a SET bound = a.bound + $3 "
		"WHERE a.queue_name = $1 AND a.group_key IS NULL AND $2::text IS NULL "
		"RETURNING a.bound",
		3, {TEXTOID, TEXTOID, INT8OID},
		.name = "admit bump queue"
	},
	[JQ_PLAN_ADMIT_BUMP_GROUP] = {
		"UPDATE jobqueue.admission a SET bound = a.bound + $3 "
		"WHERE a.queue_name = $1 AND a.group_key = $2 "
		"RETURNING a.bound",
		3, {TEXTOID, TEXTOID, INT8OID},
		.name = "admit bump group"
	},
	/*
	 * JQ_PLAN_ADMIT_COUNT_QUEUE: $1 queue.  Its pending (waiting, pending,
	 * scheduled) and its running jobs, from the partial indexes of each
	 * status.  Not read-only: it must see what committed while the caller
	 * waited for the admission row.
	 */
	[JQ_PLAN_ADMIT_COUNT_QUEUE] = {
		"SELECT (SELECT pg_catalog.count(*) FROM jobqueue.jobs j "
		"        WHERE j.queue_name = $1 AND j.status = 'pending') + "
		"       (SELECT pg_catalog.count(*) FROM jobqueue.jobs j "
		"        WHERE j.queue_name = $1 AND j.status = 'waiting'), "
		"       (SELECT pg_catalog.count(*) FROM jobqueue.jobs j "
		"        WHERE j.queue_name = $1 AND j.status = 'running')",
		1, {TEXTOID},
		.name = "admit count queue"
	},
	/*
	 * JQ_PLAN_ADMIT_COUNT_GROUP: $1 queue, $2 group; JQ_PLAN_ADMIT_COUNT_QUEUE
	 * for one group (jobs_group_head_idx, jobs_status_idx).
	 */
	[JQ_PLAN_ADMIT_COUNT_GROUP] = {
		"SELECT (SELECT pg_catalog.count(*) FROM jobqueue.jobs j "
		"        WHERE j.queue_name = $1 AND j.group_key = $2 AND j.status = 'pending') + "
		"       (SELECT pg_catalog.count(*) FROM jobqueue.jobs j "
		"        WHERE j.queue_name = $1 AND j.status = 'waiting' AND j.group_key = $2), "
		"       (SELECT pg_catalog.count(*) FROM jobqueue.jobs j "
		"        WHERE j.queue_name = $1 AND j.group_key = $2 AND j.status = 'running')",
		2, {TEXTOID, TEXTOID},
		.name = "admit count group"
	},
	/* JQ_PLAN_ADMIT_SET: $1 queue, $2 group (NULL: the queue), $3 bound */
	[JQ_PLAN_ADMIT_SET] = {
		"UPDATE jobqueue.admission a SET bound = $3 "
		"WHERE a.queue_name = $1 AND a.group_key IS NOT DISTINCT FROM $2",
		3, {TEXTOID, TEXTOID, INT8OID},
		.name = "admit set"
	},
	/* JQ_PLAN_ADMIT_FORGET: $1 queue.  Its bounds, recounted when next needed */
	[JQ_PLAN_ADMIT_FORGET] = {
		"DELETE FROM jobqueue.admission a WHERE a.queue_name = $1",
		1, {TEXTOID},
		.name = "admit forget"
	},
	/*
	 * JQ_PLAN_DEBOUNCE_RELEASE: $1 queue, $2 debounce key.  The never
	 * claimed jobs that hold the key but are no longer pending (cancelled,
	 * expired, changed by hand) give it up.
	 */
	[JQ_PLAN_DEBOUNCE_RELEASE] = {
		"UPDATE jobqueue.jobs j SET debounce_key = NULL "
		"WHERE j.queue_name = $1 AND j.debounce_key = $2 "
		"  AND j.debounce_until IS NOT NULL AND j.status <> 'pending'",
		2, {TEXTOID, TEXTOID},
		.name = "debounce release"
	},
	/*
	 * JQ_PLAN_DEBOUNCE_PENDING: $1 queue, $2 debounce key, $3 group (NULL:
	 * any).  The job a debounced enqueue would replace, if any, and if it
	 * is in the group already (a replacement moves the job into the call's
	 * group, which then gains a pending job).  Not read-only (as
	 * JQ_PLAN_ADMIT_COUNT_QUEUE).
	 */
	[JQ_PLAN_DEBOUNCE_PENDING] = {
		"SELECT j.id FROM jobqueue.jobs j "
		"WHERE j.queue_name = $1 AND j.debounce_key = $2 "
		"  AND j.status = 'pending' AND j.debounce_until IS NOT NULL "
		"  AND ($3::text IS NULL OR j.group_key = $3)",
		3, {TEXTOID, TEXTOID, TEXTOID},
		.name = "debounce pending"
	},	/*
	 * JQ_PLAN_LOCAL_QUEUES (Citus only): the queues whose shard of jobs has
	 * its placement on this node, for the worker (jq_reap_queues_batch,
	 * jq_purge_local_batch, the announce task), each with whether its
	 * listeners are woken (notify, not paused)
	 */
	[JQ_PLAN_LOCAL_QUEUES] = {
		"SELECT q.queue_name, q.notify AND NOT q.paused FROM jobqueue.queues q "
		"WHERE EXISTS (SELECT FROM pg_catalog.pg_dist_placement p "
		"  WHERE p.shardid OPERATOR(pg_catalog.=) "
		"    pg_catalog.get_shard_id_for_distribution_column('jobqueue.jobs', q.queue_name) "
		"    AND p.groupid OPERATOR(pg_catalog.=) "
		"      (SELECT l.groupid FROM pg_catalog.pg_dist_local_group l)) "
		"ORDER BY q.queue_name",
		0, {InvalidOid},
		.name = "local queues", .read_only = true, .dist = JQ_DIST_NODE
	},
	/*
	 * JQ_PLAN_REAP_QUEUE (Citus only): JQ_PLAN_REAP ($1 to $4) for queue
	 * $5, one statement on its shard: $6 now's epoch, $7 a random seed of
	 * the jitter (JQ_ROW_JITTER_SQL), $8 the history entry (jq_attempt_entry:
	 * at, code, message, retryable; the message does not name the lease's
	 * end, whose text form is STABLE).
	 */
	[JQ_PLAN_REAP_QUEUE] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $5 AND j.status = 'running' "
		"             AND j.lease_expires_at <= $2 AND j.id <> ALL ($4) "
		"           ORDER BY j.lease_expires_at LIMIT $1 "
		"           FOR NO KEY UPDATE OF j SKIP LOCKED) "
		"UPDATE jobqueue.jobs j SET "
		JQ_FAILED_ATTEMPT_SQL("true", "$2",
			JQ_EPOCH_PLUS_SQL("$6",
				JQ_BACKOFF_SECS_SQL("q.backoff_base", "q.backoff_max",
									"j.attempt_count", JQ_ROW_JITTER_SQL("$7"))),
			"'" JQ_LEASE_EXPIRED_CODE "'", JQ_ATTEMPT_ENTRY_OF_SQL("$8"), "$3")
		"FROM jobqueue.queues q "
		"WHERE q.queue_name = $5 AND j.queue_name = $5 "
		"  AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING " JQ_OUTCOME_SQL("$2", "q.notify", "q.notify_finished") ", "
		JQ_FAILED_OUTCOME_SQL,
		8, {INT4OID, TIMESTAMPTZOID, INT4OID, INT8ARRAYOID, TEXTOID, FLOAT8OID, INT8OID,
		JSONBOID},
		.name = "reap queue", .queue_param = 5
	},
	/*
	 * JQ_PLAN_ROTATION_UPDATE (Citus only): $1 queue, $2 the last group
	 * served.  JQ_PLAN_ROTATION_MOVE for a queue whose cursor row exists,
	 * as one statement on the queue's shard: Citus plans the INSERT ...
	 * SELECT of JQ_PLAN_ROTATION_MOVE through the coordinator, with its
	 * UPDATE on every shard, and fails on its CTEs' intermediate results.
	 */
	[JQ_PLAN_ROTATION_UPDATE] = {
		"WITH l AS (SELECT r.queue_name FROM jobqueue.group_rotation r "
		"           WHERE r.queue_name = $1 FOR UPDATE SKIP LOCKED) "
		"UPDATE jobqueue.group_rotation r SET group_key = $2 "
		"WHERE r.queue_name = $1 AND EXISTS (SELECT FROM l)",
		2, {TEXTOID, TEXTOID},
		.name = "rotation update"
	},
	/*
	 * JQ_PLAN_ROTATION_CREATE (Citus only): $1 queue, $2 the last group
	 * served.  The cursor row of the queue's first round robin claim (a
	 * conflict means another claim just created it), as JQ_PLAN_ROTATION_MOVE
	 * does when the rotation read found no row.
	 */
	[JQ_PLAN_ROTATION_CREATE] = {
		"INSERT INTO jobqueue.group_rotation (queue_name, group_key) "
		"VALUES ($1, $2) ON CONFLICT (queue_name) DO NOTHING",
		2, {TEXTOID, TEXTOID},
		.name = "rotation create"
	},
	/*
	 * JQ_PLAN_QUEUE_ROW (Citus only): $1 queue.  The queue's row as text,
	 * for the statements marked dist_queue_row; no row for a missing queue.
	 * Not read-only: the row as committed now, as the statement would
	 * read it.
	 */
	[JQ_PLAN_QUEUE_ROW] = {
		"SELECT q::pg_catalog.text FROM jobqueue.queues q WHERE q.queue_name = $1",
		1, {TEXTOID},
		.name = "queue row", .queue_param = 1
	},
	/*
	 * JQ_PLAN_READY_QUEUE (Citus only): $1 after, $2 up to, $3 queue.
	 * JQ_PLAN_READY_QUEUES for one queue, on its shard: the latest
	 * available_at in ($1, $2] of its pending jobs, NULL when none.
	 */
	[JQ_PLAN_READY_QUEUE] = {
		"WITH RECURSIVE p(priority) AS ("
		"  (SELECT j.priority FROM jobqueue.jobs j "
		"   WHERE j.queue_name = $3 AND j.status = 'pending' "
		"   ORDER BY j.priority DESC LIMIT 1) "
		"  UNION ALL "
		"  SELECT (SELECT j.priority FROM jobqueue.jobs j "
		"          WHERE j.queue_name = $3 AND j.status = 'pending' "
		"            AND j.priority < p.priority "
		"          ORDER BY j.priority DESC LIMIT 1) "
		"  FROM p WHERE p.priority IS NOT NULL) "
		"SELECT pg_catalog.max((SELECT j.available_at FROM jobqueue.jobs j "
		"    WHERE j.queue_name = $3 AND j.status = 'pending' "
		"      AND j.priority = p.priority "
		"      AND j.available_at > $1 AND j.available_at <= $2 "
		"    ORDER BY j.available_at DESC LIMIT 1)) "
		"FROM p WHERE p.priority IS NOT NULL",
		3, {TIMESTAMPTZOID, TIMESTAMPTZOID, TEXTOID},
		.name = "ready queue", .queue_param = 3, .read_only = true
	},
	/*
	 * JQ_PLAN_PURGE_DUE_QUEUE (Citus only): $1 queue, $2 now.  Whether the
	 * queue has a finished job past its retention, read on its shard before
	 * JQ_PLAN_PURGE (and JQ_PLAN_PURGE_WAITERS), so that a queue with
	 * nothing to purge costs the worker one read.
	 */
	[JQ_PLAN_PURGE_DUE_QUEUE] = {
		"SELECT EXISTS (SELECT FROM jobqueue.queues q CROSS JOIN " JQ_PURGED_STATUSES_SQL " "
		"  CROSS JOIN LATERAL (SELECT FROM jobqueue.jobs j "
		"    WHERE j.queue_name = $1 AND j.status = s.status "
		"      AND j.finished_at < $2 - q.retention LIMIT 1) p "
		"  WHERE q.queue_name = $1)",
		2, {TEXTOID, TIMESTAMPTZOID},
		.name = "purge due queue", .queue_param = 1, .read_only = true
	},
	/*
	 * Dependencies on Citus (dependencies.c, outcome.c): job_dependencies
	 * is distributed by queue_name, the queue of depends_on, so that its
	 * rows sit on the shard of the job they wait for.  Each statement below
	 * is on one queue's shard, except where it says "every shard".
	 *
	 * JQ_PLAN_DEPENDENCIES_FIND: $1 dependency ids, $2 a queue or NULL.
	 * The queue of each of them that is in $2 (NULL: every shard).
	 */
	[JQ_PLAN_DEPENDENCIES_FIND] = {
		"SELECT j.queue_name, j.id FROM jobqueue.jobs j "
		"WHERE ($2::text IS NULL OR j.queue_name = $2) AND j.id = ANY ($1)",
		2, {INT8ARRAYOID, TEXTOID},
		.name = "find dependencies", .queue_param = 2, .read_only = true
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_LOCK_IN: $1 dependency ids, $2 their queue.
	 * JQ_PLAN_DEPENDENCIES_LOCK on one queue: locks them in id order until
	 * the enqueue commits and sets has_dependents.  Each one's id and
	 * status.
	 */
	[JQ_PLAN_DEPENDENCIES_LOCK_IN] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j WHERE j.queue_name = $2 AND j.id = ANY ($1) "
		"           ORDER BY j.id FOR NO KEY UPDATE OF j) "
		"UPDATE jobqueue.jobs j SET has_dependents = true "
		"WHERE j.queue_name = $2 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"RETURNING j.id, j.status",
		2, {INT8ARRAYOID, TEXTOID},
		.name = "lock dependencies in queue", .queue_param = 2
	},
	/*
	 * JQ_PLAN_ENQUEUE_DEPENDENT_ONE: JQ_PLAN_ENQUEUE_DEPENDENT of one job
	 * ($2 its payload, $11 its group key), with what it reads from queues
	 * given: $5 max_attempts (the queue's when not given), $11 the group
	 * key ('' where the queue has a group policy and none was given), $12
	 * the queue's notify, $13 the queues with notify_finished.  INSERT ...
	 * VALUES, which Citus plans once and routes at each execution; the
	 * INSERT ... SELECT costs it a few milliseconds more per call.  No row
	 * back: the idempotency key is taken (the caller checked the queue).
	 */
	[JQ_PLAN_ENQUEUE_DEPENDENT_ONE] = {
		JQ_ENQUEUE_DEPENDENT_ONE_SQL("", ""),
		13, {TEXTOID, JSONBOID, INT4OID, TIMESTAMPTZOID, INT4OID, TEXTOID,
		TIMESTAMPTZOID, INT8ARRAYOID, INT8OID, TEXTOID, TEXTOID, BOOLOID, TEXTARRAYOID},
		.name = "enqueue one dependent", .queue_param = 1, .dist = JQ_DIST_GENERIC,
		.local_sql = JQ_ENQUEUE_DEPENDENT_ONE_SQL(JQ_ID_COLUMN_SQL, JQ_NEXT_ID_SQL)
	},
	/*
	 * JQ_PLAN_DEPENDENCY_ADD: $1 queue, $2 a dependency of that queue, $3
	 * a new job, $4 its queue.  Its row of job_dependencies, as INSERT ...
	 * VALUES: Citus plans it once and routes it at each execution, where
	 * an INSERT ... SELECT of all the pairs at once costs several times
	 * more for the few rows of an enqueue.
	 */
	[JQ_PLAN_DEPENDENCY_ADD] = {
		"INSERT INTO jobqueue.job_dependencies (job_id, depends_on, queue_name, job_queue) "
		"VALUES ($3, $2, $1, $4)",
		4, {TEXTOID, INT8OID, INT8OID, TEXTOID},
		.name = "add dependency", .queue_param = 1, .dist = JQ_DIST_GENERIC
	},
	/*
	 * JQ_PLAN_DEPENDENTS_TAKE: $1 queue, $2 jobs of it that succeeded, $3
	 * rows per batch, $4 true for the dependents in $1 only (NULL: all).
	 * Deletes up to $3 rows naming them; per dependent (queue, id), the
	 * number of rows deleted and the trace context of one of its
	 * dependencies.  No row when nothing was left to do.
	 */
	[JQ_PLAN_DEPENDENTS_TAKE] = {
		"WITH e AS (DELETE FROM jobqueue.job_dependencies d "
		"           WHERE d.queue_name = $1 AND d.ctid = ANY (ARRAY("
		"             SELECT d2.ctid FROM jobqueue.job_dependencies d2 "
		"             WHERE d2.queue_name = $1 AND d2.depends_on = ANY ($2) "
		"               AND ($4::boolean IS NULL OR d2.job_queue = $1) LIMIT $3)) "
		"           RETURNING d.job_queue, d.job_id, d.depends_on), "
		"n AS (SELECT e.job_queue, e.job_id, pg_catalog.count(*)::int AS n, "
		"        pg_catalog.max(e.depends_on) AS dep FROM e GROUP BY e.job_queue, e.job_id) "
		"SELECT n.job_queue, n.job_id, n.n, x.traceparent FROM n "
		"LEFT JOIN jobqueue.jobs x ON x.queue_name = $1 AND x.id = n.dep "
		"ORDER BY n.job_queue, n.job_id",
		4, {TEXTOID, INT8ARRAYOID, INT4OID, BOOLOID},
		.name = "take dependents", .queue_param = 1
	},
	/*
	 * JQ_PLAN_DEPENDENTS_COUNT_OFF: $1 queue, $2 dependents in it, $3 the
	 * rows deleted for each, $4 the trace context each came from, $5 now,
	 * $6 the queue's notify.  JQ_PLAN_DEPENDENTS_RELEASE's UPDATE, with
	 * what it joined or looked up given: inside a call delegated with
	 * force_delegation Citus runs no statement over the shard and the
	 * reference table queues.  Outcome.
	 */
	[JQ_PLAN_DEPENDENTS_COUNT_OFF] = {
		"UPDATE jobqueue.jobs j SET "
		"  dependencies_left = j.dependencies_left - $3[pg_catalog.array_position($2, j.id)], "
		"  trace_origin = CASE WHEN j.status = 'waiting' "
		"      AND j.dependencies_left = $3[pg_catalog.array_position($2, j.id)] "
		"    THEN $4[pg_catalog.array_position($2, j.id)] ELSE j.trace_origin END, "
		"  status = CASE WHEN j.status = 'waiting' "
		"      AND j.dependencies_left = $3[pg_catalog.array_position($2, j.id)] "
		"    THEN 'pending' ELSE j.status END::jobqueue.job_status, "
		"  available_at = CASE WHEN j.status = 'waiting' "
		"      AND j.dependencies_left = $3[pg_catalog.array_position($2, j.id)] "
		"    THEN GREATEST(j.available_at, $5) ELSE j.available_at END "
		"WHERE j.queue_name = $1 AND j.id = ANY ($2) "
		"RETURNING " JQ_OUTCOME_SQL("$5", "$6", "false"),
		6, {TEXTOID, INT8ARRAYOID, INT4ARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID, BOOLOID},
		.name = "count off dependents", .queue_param = 1, .dist = JQ_DIST_GENERIC
	},
	/*
	 * JQ_PLAN_DEPENDENTS_OF: $1 queue, $2 jobs of it that ended dead or
	 * cancelled, $3 now, $4 true for the dependents in $1 only (NULL:
	 * all).  Their dependents (queue, id), each with the history entry
	 * that cancels it (JQ_PLAN_DEPENDENTS_CANCEL's).
	 */
	[JQ_PLAN_DEPENDENTS_OF] = {
		"WITH c AS (SELECT d.job_queue, d.job_id, pg_catalog.min(d.depends_on) AS dep "
		"           FROM jobqueue.job_dependencies d "
		"           WHERE d.queue_name = $1 AND d.depends_on = ANY ($2) "
		"             AND ($4::boolean IS NULL OR d.job_queue = $1) "
		"           GROUP BY d.job_queue, d.job_id) "
		"SELECT c.job_queue, c.job_id, "
		"  " JQ_DEPENDENCY_ENTRY_SQL("$3::timestamptz", "c.dep", "x.status::text") " "
		"FROM c LEFT JOIN jobqueue.jobs x ON x.queue_name = $1 AND x.id = c.dep "
		"ORDER BY c.job_queue, c.job_id",
		4, {TEXTOID, INT8ARRAYOID, TIMESTAMPTZOID, BOOLOID},
		.name = "dependents of", .queue_param = 1, .read_only = true
	},
	/*
	 * JQ_PLAN_DEPENDENTS_DEFER: $1 queue, $2 jobs of it that finished.
	 * Marks the rows naming them that belong to dependents in other
	 * queues, for the worker of this node to resolve.
	 */
	[JQ_PLAN_DEPENDENTS_DEFER] = {
		"UPDATE jobqueue.job_dependencies d SET deferred = true "
		"WHERE d.queue_name = $1 AND d.depends_on = ANY ($2) AND d.job_queue <> $1 "
		"  AND NOT d.deferred",
		2, {TEXTOID, INT8ARRAYOID},
		.name = "defer dependents", .queue_param = 1, .dist = JQ_DIST_GENERIC
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_DEFERRED: $1 queue, $2 max rows.  The jobs of
	 * the queue whose dependents were deferred, with their status (NULL:
	 * deleted since), through job_dependencies_deferred_idx.
	 */
	[JQ_PLAN_DEPENDENCIES_DEFERRED] = {
		"WITH d AS (SELECT DISTINCT d.depends_on FROM jobqueue.job_dependencies d "
		"           WHERE d.queue_name = $1 AND d.deferred ORDER BY d.depends_on LIMIT $2) "
		"SELECT d.depends_on, j.status FROM d "
		"LEFT JOIN jobqueue.jobs j ON j.queue_name = $1 AND j.id = d.depends_on "
		"ORDER BY d.depends_on",
		2, {TEXTOID, INT4OID},
		.name = "deferred dependencies", .queue_param = 1, .read_only = true
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_UNDEFER: $1 queue, $2 jobs of it.  Clears the
	 * mark of the rows naming them, before the worker resolves them.
	 */
	[JQ_PLAN_DEPENDENCIES_UNDEFER] = {
		"UPDATE jobqueue.job_dependencies d SET deferred = false "
		"WHERE d.queue_name = $1 AND d.depends_on = ANY ($2) AND d.deferred",
		2, {TEXTOID, INT8ARRAYOID},
		.name = "undefer dependents", .queue_param = 1, .dist = JQ_DIST_GENERIC
	},
	/*
	 * JQ_PLAN_DEPENDENTS_CANCEL_IN: $1 queue, $2 dependents in it, $3 the
	 * history entry of each, $4 now, $5 history length, $6 the queues with
	 * notify_finished.  JQ_PLAN_DEPENDENTS_CANCEL's UPDATE, with the
	 * entries and the setting given (as JQ_PLAN_DEPENDENTS_COUNT_OFF).
	 * Outcome.
	 */
	[JQ_PLAN_DEPENDENTS_CANCEL_IN] = {
		"UPDATE jobqueue.jobs j SET status = 'cancelled', finished_at = $4, "
		"  last_error_code = '" JQ_DEPENDENCY_FAILED_CODE "', "
		"  errors = " JQ_APPEND_ERROR_SQL("$3[pg_catalog.array_position($2, j.id)]", "$5") " "
		"WHERE j.queue_name = $1 AND j.id = ANY ($2) AND j.status = 'waiting' "
		"RETURNING " JQ_OUTCOME_SQL("$4", "false", JQ_NOTIFY_FINISHED_SQL("$6")),
		6, {TEXTOID, INT8ARRAYOID, JSONBARRAYOID, TIMESTAMPTZOID, INT4OID, TEXTARRAYOID},
		.name = "cancel dependents in queue", .queue_param = 1, .dist = JQ_DIST_GENERIC
	},
	/*
	 * JQ_PLAN_JOB_DEPENDENCIES: $1 id, $2 its queue.  The rows naming the
	 * job as waiting: each dependency's queue and id, in id order (every
	 * shard).
	 */
	[JQ_PLAN_JOB_DEPENDENCIES] = {
		"SELECT d.queue_name, d.depends_on FROM jobqueue.job_dependencies d "
		"WHERE d.job_queue = $2 AND d.job_id = $1 ORDER BY d.depends_on",
		2, {INT8OID, TEXTOID},
		.name = "job dependencies", .read_only = true
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_SHARE_IN: $1 dependency ids, $2 their queue.
	 * JQ_PLAN_RETRY_DEPENDENCIES's lock on one queue: each one's id and
	 * status, locked FOR SHARE in id order.
	 */
	[JQ_PLAN_DEPENDENCIES_SHARE_IN] = {
		"SELECT j.id, j.status::text FROM jobqueue.jobs j "
		"WHERE j.queue_name = $2 AND j.id = ANY ($1) ORDER BY j.id FOR SHARE OF j",
		2, {INT8ARRAYOID, TEXTOID},
		.name = "share dependencies in queue", .queue_param = 2
	},
	/*
	 * JQ_PLAN_PURGE_WAITERS: JQ_PLAN_PURGE's parameters.  The cancelled
	 * jobs that the purge may delete and that still have dependency rows
	 * (on their dependencies' shards), their count of rows set to zero:
	 * the caller deletes the rows (JQ_PLAN_DEPENDENCIES_DROP_OF) in the
	 * same transaction, and a replay then finds none to wait for.
	 */
	[JQ_PLAN_PURGE_WAITERS] = {
		"WITH c AS (SELECT j.id FROM jobqueue.jobs j "
		"           WHERE j.queue_name = $1 AND j.status = 'cancelled' "
		"             AND j.dependencies_left > 0 "
		"             AND j.finished_at < $4 - COALESCE($2, (SELECT q.retention "
		"               FROM jobqueue.queues q WHERE q.queue_name = $1)) "
		"           ORDER BY j.finished_at LIMIT $3) "
		"UPDATE jobqueue.jobs j SET dependencies_left = 0 "
		"WHERE j.queue_name = $1 AND j.id = ANY (ARRAY(SELECT c.id FROM c)) "
		"  AND j.status = 'cancelled' "
		"RETURNING j.id",
		4, {TEXTOID, INTERVALOID, INT4OID, TIMESTAMPTZOID},
		.name = "purge waiters"
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_DROP_OF: $1 queue, $2 jobs of it.  Deletes the
	 * rows naming them as waiting (every shard).
	 */
	[JQ_PLAN_DEPENDENCIES_DROP_OF] = {
		"DELETE FROM jobqueue.job_dependencies d WHERE d.job_queue = $1 AND d.job_id = ANY ($2)",
		2, {TEXTOID, INT8ARRAYOID},
		.name = "drop dependencies of"
	},
	/*
	 * The lookups by id alone on Citus read the shards of the queues where
	 * the ids most likely are before every shard (outcome.c,
	 * jq_job_queue_distributed; dependencies.c): with the queues' names as
	 * values, Citus reads only those queues' shards.
	 *
	 * JQ_PLAN_QUEUE_GROUPS: every queue, in name order, with the node group
	 * where its shard of jobs is placed (queuecache.c keeps them).
	 */
	[JQ_PLAN_QUEUE_GROUPS] = {
		"SELECT q.queue_name, "
		"       (SELECT p.groupid FROM pg_catalog.pg_dist_placement p "
		"        WHERE p.shardid OPERATOR(pg_catalog.=) "
		"          pg_catalog.get_shard_id_for_distribution_column('jobqueue.jobs', q.queue_name) "
		"        LIMIT 1) "
		"FROM jobqueue.queues q ORDER BY q.queue_name",
		0, {InvalidOid},
		.name = "queue groups", .read_only = true, .dist = JQ_DIST_NODE
	},
	/* JQ_PLAN_JOB_QUEUE_IN: $1 id, $2 queues.  JQ_PLAN_JOB_QUEUE in those queues. */
	[JQ_PLAN_JOB_QUEUE_IN] = {
		"SELECT j.queue_name FROM jobqueue.jobs j "
		"WHERE j.queue_name = ANY ($2) AND j.id = $1",
		2, {INT8OID, TEXTARRAYOID},
		.name = "job queue in", .read_only = true, .dist = JQ_DIST_NODE
	},
	/*
	 * JQ_PLAN_DEPENDENCIES_FIND_IN: $1 dependency ids, $2 queues.
	 * JQ_PLAN_DEPENDENCIES_FIND in those queues.
	 */
	[JQ_PLAN_DEPENDENCIES_FIND_IN] = {
		"SELECT j.queue_name, j.id FROM jobqueue.jobs j "
		"WHERE j.queue_name = ANY ($2) AND j.id = ANY ($1)",
		2, {INT8ARRAYOID, TEXTARRAYOID},
		.name = "find dependencies in", .read_only = true, .dist = JQ_DIST_NODE
	},

};

static SPIPlanPtr plans[JQ_NUM_PLANS];

/*
 * Bumped whenever the kept plans are forgotten or due to be rebuilt, for
 * the plans derived from them (localshard.c)
 */
uint64		jq_plans_generation = 0;

/* The size check of the kept plans (see the header comment) */
#define JQ_PLANS_SIZE_CHECK_MS	1000
#define JQ_PLANS_SIZE_FACTOR	10
/* below this many blocks a table counts as this many */
#define JQ_PLANS_SIZE_FLOOR		8

/*
 * The tables whose size the kept plans follow: jobs, and groups, which the
 * group trigger's statements probe by key once per job moved (a plan made
 * while groups was empty scans it, and a statement that gives 100,000 jobs
 * groups of their own would scan it 100,000 times as it grows).
 */
static const char *const plans_sized_tables[] = {"jobs", "groups"};
#define JQ_PLANS_SIZED_TABLES lengthof(plans_sized_tables)

/* their sizes when the kept plans were built */
static BlockNumber plans_blocks[JQ_PLANS_SIZED_TABLES] = {InvalidBlockNumber, InvalidBlockNumber};
static TimestampTz plans_size_checked = 0;

/* The number of blocks of jobqueue.<relname> now, or InvalidBlockNumber */
static BlockNumber
jq_table_blocks(const char *relname)
{
	Oid			nspoid = get_namespace_oid("jobqueue", true);
	Oid			relid;
	Relation	rel;
	BlockNumber nblocks;

	if (!OidIsValid(nspoid))
		return InvalidBlockNumber;
	relid = get_relname_relid(relname, nspoid);
	if (!OidIsValid(relid))
		return InvalidBlockNumber;
	/* the statement about to run takes this lock anyway */
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		return InvalidBlockNumber;
	nblocks = RelationGetNumberOfBlocks(rel);
	relation_close(rel, AccessShareLock);
	return Max(nblocks, JQ_PLANS_SIZE_FLOOR);
}

/*
 * Mark every kept plan invalid when the size of jobs or of groups changed
 * tenfold since they were built; at most once a second.  The plan cache
 * rebuilds an invalid plan at its next use (as after an ANALYZE); a plan
 * running now (a trigger's statement inside a claim) runs on.
 */
static void
jq_plans_check_size(void)
{
	TimestampTz now = GetCurrentTimestamp();
	BlockNumber cur[JQ_PLANS_SIZED_TABLES];
	bool		changed = false;
	int			t;

	if (now - plans_size_checked < JQ_PLANS_SIZE_CHECK_MS * 1000 &&
		plans_blocks[0] != InvalidBlockNumber)
		return;
	plans_size_checked = now;
	for (t = 0; t < JQ_PLANS_SIZED_TABLES; t++)
	{
		cur[t] = jq_table_blocks(plans_sized_tables[t]);
		if (cur[t] == InvalidBlockNumber)
			continue;
		if (plans_blocks[t] == InvalidBlockNumber)
			plans_blocks[t] = cur[t];
		else if ((double) cur[t] >= (double) plans_blocks[t] * JQ_PLANS_SIZE_FACTOR ||
				 (double) cur[t] * JQ_PLANS_SIZE_FACTOR <= (double) plans_blocks[t])
			changed = true;
	}
	if (!changed)
		return;

	jq_plans_generation++;
	for (int id = 0; id < JQ_NUM_PLANS; id++)
	{
		ListCell   *lc;

		if (plans[id] == NULL)
			continue;
		foreach(lc, SPI_plan_get_plan_sources(plans[id]))
		{
			CachedPlanSource *source = (CachedPlanSource *) lfirst(lc);

			/* what PlanCacheRelCallback does for a changed table */
			source->is_valid = false;
			if (source->gplan)
				source->gplan->is_valid = false;
		}
	}
	for (t = 0; t < JQ_PLANS_SIZED_TABLES; t++)
	{
		if (cur[t] == InvalidBlockNumber)
			continue;
		elog(DEBUG1, "jobqueue: table %s has %u blocks, %u when the kept plans were built: rebuilding them",
			 plans_sized_tables[t], cur[t], plans_blocks[t]);
		plans_blocks[t] = cur[t];
	}
}

/*
 * Distributed mode: is jobqueue.jobs a table that Citus distributes?  Read
 * once per backend, from Citus's own catalog (pg_dist_partition), so that
 * it cannot disagree with the schema: false wherever Citus is not
 * installed, without a query.  Where Citus is loaded, a change of jobs's
 * relation cache entry (which distributing it makes, in every session of
 * every node) has the mode read again at the next statement that is not
 * nested in another (jq_plan_check_mode_changed), and the kept plans
 * forgotten if it changed: a session that was open when jobs was
 * distributed plans its statements for Citus from then on.  Must be called
 * while connected to SPI.
 */
static int	distributed_mode = -1;	/* -1: not read yet */
static Oid	distributed_mode_jobs = InvalidOid;	/* the jobs table it was read for */
static bool distributed_mode_stale = false;

bool
jq_distributed_mode(void)
{
	Oid			dist_partition;
	Oid			nspoid;
	Oid			jobs;
	Datum		arg;
	int			ret;
	bool		isnull;

	if (distributed_mode >= 0)
		return distributed_mode == 1;
	nspoid = get_namespace_oid("jobqueue", true);
	jobs = OidIsValid(nspoid) ? get_relname_relid("jobs", nspoid) : InvalidOid;
	if (!OidIsValid(jobs))
		return false;			/* no extension yet: read again later */
	dist_partition = get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(dist_partition))
	{
		distributed_mode = 0;
		return false;
	}
	distributed_mode_jobs = jobs;
	arg = ObjectIdGetDatum(jobs);
	ret = SPI_execute_with_args("SELECT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p "
								"WHERE p.logicalrelid OPERATOR(pg_catalog.=) "
								"$1::pg_catalog.regclass)",
								1, (Oid[]) {OIDOID}, &arg, NULL, true, 1);
	if (ret != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read pg_dist_partition: %s", SPI_result_code_string(ret));
	distributed_mode = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
												  SPI_tuptable->tupdesc, 1,
												  &isnull)) ? 1 : 0;
	return distributed_mode == 1;
}

/* The jobs table Citus distributes, as jq_distributed_mode() read it */
Oid
jq_distributed_jobs(void)
{
	return distributed_mode == 1 ? distributed_mode_jobs : InvalidOid;
}

/*
 * Read the distributed mode again, and forget the kept plans when it
 * changed: for the background worker, whose backend lives across a
 * jq_distribute().  A read of Citus's catalog where Citus is installed,
 * nothing otherwise.  Only between statements, connected to SPI.
 */
void
jq_plans_check_mode(void)
{
	int			before = distributed_mode;

	if (before < 0)
		return;					/* read at the next use */
	if (before == 0 &&
		!OidIsValid(get_relname_relid("pg_dist_partition", PG_CATALOG_NAMESPACE)))
		return;
	distributed_mode = -1;
	if (jq_distributed_mode() != (before == 1))
		jq_plans_reset();
}

/* Relation cache callback, where Citus is loaded: see jq_distributed_mode */
static void
jq_plans_relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == distributed_mode_jobs)
		distributed_mode_stale = true;
}

/*
 * At the first statement of this backend, watch for jobs being distributed
 * where Citus is loaded (its settings exist: it comes first in
 * shared_preload_libraries); then, before each statement not nested in
 * another kept statement, read the mode again if jobs's relation cache
 * entry changed.
 */
static void
jq_plan_check_mode_changed(void)
{
	static bool registered = false;

	if (!registered)
	{
		registered = true;
		if (GetConfigOption("citus.enable_ddl_propagation", true, false) != NULL)
			CacheRegisterRelcacheCallback(jq_plans_relcache_callback, (Datum) 0);
	}
	if (!distributed_mode_stale || jq_statement_depth > 1)
		return;
	distributed_mode_stale = false;
	jq_plans_check_mode();
}

/*
 * Forget the kept plans and the distributed mode of this backend: the next
 * use of each statement prepares it again, for the mode then read.
 */
void
jq_plans_reset(void)
{
	for (int id = 0; id < JQ_NUM_PLANS; id++)
	{
		if (plans[id] != NULL)
			SPI_freeplan(plans[id]);
		plans[id] = NULL;
	}
	distributed_mode = -1;
	for (int t = 0; t < JQ_PLANS_SIZED_TABLES; t++)
		plans_blocks[t] = InvalidBlockNumber;
	jq_plans_generation++;
}

/*
 * The Unix epoch of t in seconds, for the statements that compute times
 * with IMMUTABLE functions only (JQ_EPOCH_PLUS_SQL)
 */
double
jq_epoch_seconds(TimestampTz t)
{
	return (double) t / USECS_PER_SEC +
		((double) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY);
}

/*
 * A uniformly random float8 in [0, 1): the jitter of a retry's backoff,
 * drawn here rather than by random() in the statement, which Citus does not
 * run in an UPDATE
 */
double
jq_jitter(void)
{
	return pg_prng_double(&pg_global_prng_state);
}

/*
 * Let glibc keep this backend's freed heap top across statements, as it
 * does in any backend that has once freed a large block.
 *
 * A claim's executor memory (about 175 kB, in blocks of up to 64 kB) is
 * malloc'd at the top of the heap and freed when the statement ends.  Until
 * the backend frees a block that malloc placed with mmap, glibc's trim
 * threshold is 128 kB, so it gives that memory back to the kernel after
 * every claim (brk) and faults it in again at the next: measured, 3 brk
 * calls per job, and 5 % of the throughput of one client claiming one job
 * at a time.  Freeing one mmap'd block of JQ_MALLOC_WARM_BYTES raises the
 * thresholds by glibc's own dynamic rule (mmap threshold to the block's
 * size, trim threshold to twice that), which a backend reaches anyway after
 * its first large sort or hash.  It only moves the thresholds up, keeps
 * their dynamic adjustment (a mallopt() would turn it off), and costs at
 * most 1 MB of free heap kept per backend that uses jobqueue's statements.
 */
#define JQ_MALLOC_WARM_BYTES (512 * 1024)

static void
jq_keep_heap_top(void)
{
#ifdef __GLIBC__
	static bool done = false;
	void	   *volatile block;

	if (done)
		return;
	done = true;
	block = malloc(JQ_MALLOC_WARM_BYTES);
	free(block);
#endif
}

/*
 * Return the prepared statement id, preparing and keeping it on first use:
 * with a generic plan, or in distributed mode a custom plan per call for
 * the statements that need one (JqDistPlan).  Must be called while
 * connected to SPI.
 */
SPIPlanPtr
jq_plan(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	jq_plans_check();
	if (plans[id] != NULL)
		return plans[id];

	plans[id] = jq_plan_prepare(id, jq_plan_sql(id),
								jq_distributed_mode() &&
								plan_specs[id].dist != JQ_DIST_GENERIC);
	return plans[id];
}

/*
 * Prepare and keep sql as statement id (its parameters; sql is its text or
 * one derived from it), with a custom plan per call or a generic plan.
 * Connected to SPI.
 */
SPIPlanPtr
jq_plan_prepare(JqPlanId id, const char *sql, bool custom)
{
	SPIPlanPtr	plan;
	Oid			argtypes[lengthof(plan_specs[0].argtypes) + 1];
	int			nargs;

	jq_keep_heap_top();
	nargs = plan_specs[id].nargs;
	memcpy(argtypes, plan_specs[id].argtypes, sizeof(plan_specs[id].argtypes));
	if (jq_plan_takes_queue_row(id))
		argtypes[nargs++] = TEXTOID;
	plan = SPI_prepare_cursor(sql, nargs, argtypes,
							  custom ? CURSOR_OPT_CUSTOM_PLAN : CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for jobqueue statement \"%s\": %s",
			 plan_specs[id].name, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed for jobqueue statement \"%s\"",
			 plan_specs[id].name);
	return plan;
}

/*
 * Before a kept statement runs: read the distributed mode again if it may
 * have changed, and have the plans rebuilt if a table's size changed
 * tenfold.  Either bumps jq_plans_generation.
 */
void
jq_plans_check(void)
{
	jq_plan_check_mode_changed();
	jq_plans_check_size();
}

/* Is statement id planned per call against a queue's shards (queue_param)? */
bool
jq_plan_local_custom(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	return plan_specs[id].dist == JQ_DIST_NODE;
}

/* The text of statement id against a queue's shards (JqPlanSpec) */
const char *
jq_plan_local_sql(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	return plan_specs[id].local_sql != NULL ? plan_specs[id].local_sql : jq_plan_sql(id);
}

/* The parameter naming the queue of statement id, or 0 (JqPlanSpec) */
int
jq_plan_queue_param(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	return plan_specs[id].queue_param;
}

/* The text of statement id in this mode, also for EXPLAIN.  Connected to SPI. */
const char *
jq_plan_sql(JqPlanId id)
{
	static char *queue_row_sql[JQ_NUM_PLANS];

	Assert(id >= 0 && id < JQ_NUM_PLANS);
	if (plan_specs[id].dist_sql != NULL && jq_distributed_mode())
		return plan_specs[id].dist_sql;
	if (jq_plan_takes_queue_row(id))
	{
		if (queue_row_sql[id] == NULL)
		{
			const char *sql = plan_specs[id].sql;
			const char *at = strstr(sql, JQ_QUEUES_FROM_SQL);
			StringInfoData buf;

			if (at == NULL || strstr(at + 1, JQ_QUEUES_FROM_SQL) != NULL)
				elog(ERROR, "jobqueue statement \"%s\" does not read one queue row",
					 plan_specs[id].name);
			initStringInfo(&buf);
			appendBinaryStringInfo(&buf, sql, at - sql);
			appendStringInfo(&buf, JQ_QUEUE_ROW_FROM_SQL, plan_specs[id].nargs + 1);
			appendStringInfoString(&buf, at + strlen(JQ_QUEUES_FROM_SQL));
			queue_row_sql[id] = MemoryContextStrdup(TopMemoryContext, buf.data);
			pfree(buf.data);
		}
		return queue_row_sql[id];
	}
	return plan_specs[id].sql;
}

/*
 * Does statement id take the queue's row as its last parameter, one after
 * its own (dist_queue_row, in distributed mode)?  Connected to SPI.
 */
bool
jq_plan_takes_queue_row(JqPlanId id)
{
	Assert(id >= 0 && id < JQ_NUM_PLANS);
	return plan_specs[id].dist_queue_row && jq_distributed_mode();
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
