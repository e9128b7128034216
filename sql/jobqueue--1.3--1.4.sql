/* jobqueue--1.3--1.4.sql -- upgrade from 1.3 to 1.4 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.4'" to load this file. \quit

-- 1.4 is about trust under real conditions: group bookkeeping that cannot
-- drift or deadlock, and what operators and clients need to run it.  A
-- fresh CREATE EXTENSION runs 1.0 and every upgrade script up to this one.

------------------------------------------------------------------------------
-- Which library is loaded: jq_version(), created first, so that an update
-- run while the 1.3 library is still loaded (installed, not yet restarted)
-- stops here and says why
------------------------------------------------------------------------------

DO $$
BEGIN
	CREATE FUNCTION jobqueue.jq_version(OUT library_version text, OUT extension_version text)
	RETURNS record
	AS 'MODULE_PATHNAME', 'jq_version'
	LANGUAGE C STABLE PARALLEL SAFE;
EXCEPTION WHEN undefined_function THEN
	-- the loaded library lacks the symbol: it is older than 1.4
	RAISE EXCEPTION 'the jobqueue library loaded in this session is older than version 1.4'
		USING ERRCODE = 'object_not_in_prerequisite_state',
			DETAIL = SQLERRM,
			HINT = 'Restart the server so that the new library is loaded (a new session is enough when jobqueue is not in shared_preload_libraries), then run ALTER EXTENSION jobqueue UPDATE again.';
END
$$;
COMMENT ON FUNCTION jobqueue.jq_version() IS
	'the version of the library this session runs and that of the extension in this database (they differ between make install and the restart, or between the restart and ALTER EXTENSION UPDATE)';
REVOKE ALL ON FUNCTION jobqueue.jq_version() FROM PUBLIC;

------------------------------------------------------------------------------
-- Operators see what they manage: stack traces of failures, jq_jobs,
-- jq_schedules
------------------------------------------------------------------------------

/*
 * jq_fail keeps a stack trace next to the message in the history entry
 * (the field "stack"), cut to jobqueue.max_error_stack_size bytes on a
 * character boundary.  New argument last, so every call that worked goes
 * on working; the EXECUTE rights on the old definition carry over.
 */
CREATE FUNCTION jobqueue.jq_fail(
	id bigint,
	token bigint,
	error_code text,
	error_message text DEFAULT NULL,
	retryable boolean DEFAULT true,
	retry_in interval DEFAULT NULL,
	error_detail jsonb DEFAULT NULL,
	stack text DEFAULT NULL)
RETURNS jobqueue.job_status
AS 'MODULE_PATHNAME', 'jq_fail'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb, text) IS
	'record a failed attempt (error_detail and the stack trace are kept in the history entry); returns pending (retry scheduled), dead, or NULL when fenced';
REVOKE ALL ON FUNCTION jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb, text) FROM PUBLIC;

DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s',
			'jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb, text)',
			r.grantee);
	END LOOP;
END
$$;

DROP FUNCTION jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb);

/*
 * One index of the jobs neither pending nor running, by status, queue and
 * time of finish, in place of three: the two of finished jobs of 1.0
 * (succeeded and cancelled; dead) and the one of waiting jobs of 1.2.  The
 * purge takes each finished status's oldest, jq_retry_dead the oldest
 * dead, queue_stats and the admission limits count the waiting and the
 * dead, and jq_jobs lists waiting jobs and finished jobs most recently
 * finished first, each from one range of it.  Every statement that writes
 * a job pays for every index of jobs (it opens it and prepares its
 * predicate), whether or not the row goes in: one index for these uses is
 * what keeps a claim and a completion as cheap as in 1.3 (a partial
 * index dropped alone saved 15,000 to 29,000 instructions per job claimed
 * and completed one at a time).  Only the row versions of a waiting job
 * and the one written by the end of a job get an entry.  No id in the
 * key: the jobs finished by one batch share their finished_at, and each of
 * their insertions would compare one more column (about 6,000 instructions
 * a job in batches of 100); readers that page by (finished_at, id) sort
 * the ties of one finished_at, which an incremental sort does cheaply.
 * The status first:
 * a B-tree comparison finds a key column at a fixed offset only up to the
 * first of variable length (queue_name), and a comparison that walks to
 * the status as well as to finished_at cost about 1,300 instructions per
 * job in batches.  Readers of waiting jobs test status = 'waiting', the
 * one status before 'pending', so that the scan starts at the queue (with
 * status < 'pending' it would start at the first waiting job of all).
 */
DROP INDEX jobqueue.jobs_finished_idx;
DROP INDEX jobqueue.jobs_dead_idx;
DROP INDEX jobqueue.jobs_waiting_idx;
CREATE INDEX jobs_status_idx ON jobqueue.jobs (status, queue_name, finished_at)
	WHERE status < 'pending' OR status > 'running';

/*
 * The jobs of a queue in pages: the unfinished ones newest first, then the
 * finished ones most recently finished first.  The next page is before_id
 * => the last id of this one, before_finished_at => its finished_at if it
 * was finished.  job_id: one job's row (for a role without jq_job).  The payload, result, progress and
 * error history (and the last error message) are NULL unless the caller
 * may read jobs' data anyway (the worker or admin rights, or SELECT on
 * jobs.payload); see listing.c.
 */
CREATE FUNCTION jobqueue.jq_jobs(
	queue_name text,
	status jobqueue.job_status DEFAULT NULL,
	max_jobs int DEFAULT 100,
	before_id bigint DEFAULT NULL,
	group_key text DEFAULT NULL,
	error_code text DEFAULT NULL,
	before_finished_at timestamptz DEFAULT NULL,
	job_id bigint DEFAULT NULL)
RETURNS TABLE(id bigint, queue_name text, status jobqueue.job_status,
	priority int, group_key text, attempt int, max_attempts int,
	created_at timestamptz, available_at timestamptz,
	started_at timestamptz, finished_at timestamptz,
	lease_owner text, lease_expires_at timestamptz,
	last_error_code text, last_error_message text,
	payload jsonb, result jsonb, progress jsonb, errors jsonb)
AS 'MODULE_PATHNAME', 'jq_jobs'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 100;
COMMENT ON FUNCTION jobqueue.jq_jobs(text, jobqueue.job_status, int, bigint, text, text, timestamptz, bigint) IS
	'a queue''s jobs, unfinished newest first, then finished most recently finished first, max_jobs at a time after the job before_id (finished at before_finished_at), optionally of one status, group or last error code; payloads, results and errors only for roles that may read them';
REVOKE ALL ON FUNCTION jobqueue.jq_jobs(text, jobqueue.job_status, int, bigint, text, text, timestamptz, bigint) FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_schedules()
RETURNS TABLE(schedule_name text, queue_name text, cron text, timezone text,
	enabled boolean, catch_up text, priority int,
	next_run_at timestamptz, last_run_at timestamptz, last_job_id bigint,
	created_at timestamptz, payload jsonb)
AS 'MODULE_PATHNAME', 'jq_schedules'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_schedules() IS
	'every schedule with its next run, by name; the payload only for roles that may read jobs'' payloads';
REVOKE ALL ON FUNCTION jobqueue.jq_schedules() FROM PUBLIC;

-- The sets of rights (jq_role_functions, at the end of this script) gain
-- jq_jobs, jq_schedules and jq_version for admins and monitors ...
COMMENT ON FUNCTION jobqueue.jq_grant_admin(regrole) IS
	'let a role manage queues and schedules, list, cancel, replay, reap and purge jobs, and read statistics and counters';
COMMENT ON FUNCTION jobqueue.jq_grant_monitor(regrole) IS
	'let a role (a metrics exporter, a dashboard) read queue_stats, the counters, the worker''s status and the lists of jobs and schedules without their payloads; nothing else';

-- ... and every role that holds a set already gets the new functions: a
-- role that may call jq_worker_status holds the admin or monitor set.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_worker_status()'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s, %s, %s TO %s',
			'jobqueue.jq_jobs(text, jobqueue.job_status, integer, bigint, text, text, timestamp with time zone, bigint)',
			'jobqueue.jq_schedules()', 'jobqueue.jq_version()', r.grantee);
	END LOOP;
END
$$;

------------------------------------------------------------------------------
-- Observability: latency histograms, failures by error code, releases
------------------------------------------------------------------------------

CREATE FUNCTION jobqueue.jq_latency(
	queue_name text DEFAULT NULL,
	OUT queue_name text,
	OUT kind text,
	OUT count bigint,
	OUT p50 interval,
	OUT p90 interval,
	OUT p99 interval,
	OUT max interval,
	OUT sum interval,
	OUT since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_latency'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_latency(text) IS
	'latency distributions per queue of this database (wait, run, total): count, quantiles, max, sum';

CREATE FUNCTION jobqueue.jq_latency_buckets(
	queue_name text DEFAULT NULL,
	OUT queue_name text,
	OUT kind text,
	OUT bucket integer,
	OUT le double precision,
	OUT count bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_latency_buckets'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_latency_buckets(text) IS
	'the latency histograms bucket by bucket: upper bound le in seconds, cumulative count';

CREATE FUNCTION jobqueue.jq_latency_histograms(
	queue_name text DEFAULT NULL,
	OUT queue_name text,
	OUT kind text,
	OUT le double precision[],
	OUT counts bigint[],
	OUT count bigint,
	OUT sum double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_latency_histograms'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_latency_histograms(text) IS
	'the latency histograms one row per queue and kind, one bucket per octave: bounds in seconds, cumulative counts, count, sum';

CREATE FUNCTION jobqueue.jq_latency_reset(queue_name text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_latency_reset'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_latency_reset(text) IS
	'zero the latency histograms of one queue, or of every queue of this database';

REVOKE ALL ON FUNCTION jobqueue.jq_latency(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_latency_buckets(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_latency_histograms(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_latency_reset(text) FROM PUBLIC;

-- Failed attempts by queue, error code and attempt number
CREATE FUNCTION jobqueue.jq_error_counts(
	queue_name text DEFAULT NULL,
	OUT queue_name text,
	OUT error_code text,
	OUT attempt integer,
	OUT retries bigint,
	OUT dead_lettered bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_error_counts'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_error_counts(text) IS
	'failed attempts per queue of this database by last_error_code and attempt: retried, dead';
REVOKE ALL ON FUNCTION jobqueue.jq_error_counts(text) FROM PUBLIC;

-- jq_counters gets the column released (jobs given back by jq_release),
-- next to leases_expired (found by the reaper): the function is made
-- again, with the rights it had
ALTER FUNCTION jobqueue.jq_counters(boolean) RENAME TO jq_counters_1_3;
CREATE FUNCTION jobqueue.jq_counters(
	all_databases boolean DEFAULT false,
	OUT dbid oid,
	OUT queue_name text,
	OUT enqueued bigint,
	OUT claimed bigint,
	OUT completed bigint,
	OUT complete_fenced bigint,
	OUT heartbeat_refused bigint,
	OUT failed_retryable bigint,
	OUT failed_permanent bigint,
	OUT retries_scheduled bigint,
	OUT leases_expired bigint,
	OUT dead_lettered bigint,
	OUT replayed bigint,
	OUT purged bigint,
	OUT released bigint,
	OUT debounced bigint,
	OUT expired bigint,
	OUT claim_calls bigint,
	OUT claim_time double precision,
	OUT complete_calls bigint,
	OUT complete_time double precision,
	OUT since timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_counters'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_counters(boolean) IS
	'cumulative event counters per queue of this database (all databases: pg_read_all_stats); times in milliseconds';
REVOKE ALL ON FUNCTION jobqueue.jq_counters(boolean) FROM PUBLIC;
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_counters_1_3(boolean)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s',
			'jobqueue.jq_counters(boolean)', r.grantee);
	END LOOP;
END
$$;
DROP FUNCTION jobqueue.jq_counters_1_3(boolean);

------------------------------------------------------------------------------
-- Observability: trace context (W3C traceparent, tracestate) with each job
------------------------------------------------------------------------------

-- A job records the context of its producer: an explicit argument, or else
-- the session's settings jobqueue.traceparent and jobqueue.tracestate
-- (checked by the library: an invalid value is refused with 22023), which
-- the columns default to, so that every INSERT records it.  trace_origin:
-- the traceparent of what the job came from (the dependency whose success
-- released it, the job's context before a replay).
ALTER TABLE jobqueue.jobs
	ADD COLUMN traceparent text
		DEFAULT NULLIF(pg_catalog.current_setting('jobqueue.traceparent', true), ''),
	ADD COLUMN tracestate text
		DEFAULT CASE WHEN NULLIF(pg_catalog.current_setting('jobqueue.traceparent', true), '') IS NOT NULL
			THEN NULLIF(pg_catalog.current_setting('jobqueue.tracestate', true), '') END,
	ADD COLUMN trace_origin text;
-- a schedule records the context of its jq_schedule call, for its runs
ALTER TABLE jobqueue.schedules
	ADD COLUMN traceparent text
		DEFAULT NULLIF(pg_catalog.current_setting('jobqueue.traceparent', true), ''),
	ADD COLUMN tracestate text
		DEFAULT CASE WHEN NULLIF(pg_catalog.current_setting('jobqueue.traceparent', true), '') IS NOT NULL
			THEN NULLIF(pg_catalog.current_setting('jobqueue.tracestate', true), '') END;

-- The explicit context: new last arguments of jq_enqueue, jq_enqueue_many
-- and jq_schedule (the rights on the old definitions carry over) ...
CREATE FUNCTION jobqueue.jq_enqueue(
	queue_name text,
	payload jsonb,
	priority int DEFAULT 0,
	run_at timestamptz DEFAULT NULL,
	max_attempts int DEFAULT NULL,
	idempotency_key text DEFAULT NULL,
	depends_on bigint[] DEFAULT NULL,
	group_key text DEFAULT NULL,
	traceparent text DEFAULT NULL,
	tracestate text DEFAULT NULL,
	debounce_key text DEFAULT NULL,
	debounce interval DEFAULT NULL,
	debounce_max_wait interval DEFAULT NULL,
	start_by timestamptz DEFAULT NULL,
	cost float8 DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jq_enqueue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text, text, text, text, interval, interval, timestamptz, float8) IS
	'add a job and return its id; with an idempotency key the queue already holds, return that job''s id; with depends_on, the job waits until those jobs have succeeded; traceparent (else jobqueue.traceparent) is recorded with it';
REVOKE ALL ON FUNCTION jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text, text, text, text, interval, interval, timestamptz, float8) FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_enqueue_many(
	queue_name text,
	payloads jsonb[],
	priority int DEFAULT 0,
	run_at timestamptz DEFAULT NULL,
	depends_on bigint[] DEFAULT NULL,
	group_keys text[] DEFAULT NULL,
	traceparent text DEFAULT NULL,
	tracestate text DEFAULT NULL,
	start_by timestamptz DEFAULT NULL,
	cost float8 DEFAULT NULL)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'jq_enqueue_many'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[], text, text, timestamptz, float8) IS
	'add one job per payload in one statement; returns the ids in payload order; with depends_on, every job waits for those jobs; traceparent (else jobqueue.traceparent) is recorded with them';
REVOKE ALL ON FUNCTION jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[], text, text, timestamptz, float8) FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_schedule(
	schedule_name text,
	queue_name text,
	cron text,
	payload jsonb DEFAULT '{}',
	timezone text DEFAULT 'UTC',
	priority integer DEFAULT 0,
	catch_up text DEFAULT 'latest',
	enabled boolean DEFAULT true,
	traceparent text DEFAULT NULL,
	tracestate text DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'jq_schedule'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean, text, text) IS
	'create or replace a recurring schedule (cron in a time zone); returns the next run, NULL when disabled; its runs carry traceparent (else jobqueue.traceparent)';
REVOKE ALL ON FUNCTION jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean, text, text) FROM PUBLIC;

-- ... and the claims return the context: three new result columns, so the
-- functions are made again, with the rights they had
ALTER FUNCTION jobqueue.jq_claim(text, int, text, interval) RENAME TO jq_claim_1_3;
CREATE FUNCTION jobqueue.jq_claim(
	queue_name text,
	n int,
	owner text,
	lease interval DEFAULT NULL)
RETURNS TABLE(id bigint, payload jsonb, attempt int, token bigint, lease_expires_at timestamptz,
	traceparent text, tracestate text, trace_origin text)
AS 'MODULE_PATHNAME', 'jq_claim'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 10;
COMMENT ON FUNCTION jobqueue.jq_claim(text, int, text, interval) IS
	'lease up to n ready jobs (highest priority first, then oldest); returns id, payload, attempt, token, lease expiry and the trace context of each';
REVOKE ALL ON FUNCTION jobqueue.jq_claim(text, int, text, interval) FROM PUBLIC;

ALTER FUNCTION jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[])
	RENAME TO jq_complete_and_claim_1_3;
CREATE FUNCTION jobqueue.jq_complete_and_claim(
	queue_name text,
	ids bigint[],
	tokens bigint[],
	n int,
	owner text,
	lease interval DEFAULT NULL,
	results jsonb[] DEFAULT NULL)
RETURNS TABLE(id bigint, payload jsonb, attempt int, token bigint, lease_expires_at timestamptz,
	traceparent text, tracestate text, trace_origin text)
AS 'MODULE_PATHNAME', 'jq_complete_and_claim'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 10;
COMMENT ON FUNCTION jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[]) IS
	'complete held jobs as jq_complete_many does (any queue), then lease up to n ready jobs of queue_name as jq_claim does, in one call; returns the jobs claimed';
REVOKE ALL ON FUNCTION jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[]) FROM PUBLIC;

DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT o.new_sig, a.grantee::pg_catalog.regrole AS grantee
		FROM (VALUES
			('jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text)',
			 'jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text, text, text, text, interval, interval, timestamptz, float8)'),
			('jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[])',
			 'jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[], text, text, timestamptz, float8)'),
			('jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean)',
			 'jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean, text, text)'),
			('jobqueue.jq_claim_1_3(text, int, text, interval)',
			 'jobqueue.jq_claim(text, int, text, interval)'),
			('jobqueue.jq_complete_and_claim_1_3(text, bigint[], bigint[], int, text, interval, jsonb[])',
			 'jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[])')
		) AS o(sig, new_sig)
		JOIN pg_catalog.pg_proc p ON p.oid = o.sig::pg_catalog.regprocedure
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', r.new_sig, r.grantee);
	END LOOP;
END
$$;

DROP FUNCTION jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text);
DROP FUNCTION jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[]);
DROP FUNCTION jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean);
DROP FUNCTION jobqueue.jq_claim_1_3(text, int, text, interval);
DROP FUNCTION jobqueue.jq_complete_and_claim_1_3(text, bigint[], bigint[], int, text, interval, jsonb[]);

-- The sets of rights gain the latency and error-count functions: every
-- role that reads (or resets) the counters already gets them.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee, p.oid AS fn
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid IN ('jobqueue.jq_counters(boolean)'::pg_catalog.regprocedure,
						'jobqueue.jq_counters_reset(text)'::pg_catalog.regprocedure)
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		IF r.fn = 'jobqueue.jq_counters(boolean)'::pg_catalog.regprocedure THEN
			EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s, %s, %s, %s TO %s',
				'jobqueue.jq_latency(text)', 'jobqueue.jq_latency_buckets(text)',
				'jobqueue.jq_latency_histograms(text)',
				'jobqueue.jq_error_counts(text)', r.grantee);
		ELSE
			EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s',
				'jobqueue.jq_latency_reset(text)', r.grantee);
		END IF;
	END LOOP;
END
$$;

------------------------------------------------------------------------------
-- Group bookkeeping: counters that follow every move and can be repaired
------------------------------------------------------------------------------

/*
 * The counter of a group follows its jobs whatever column a statement sets:
 * a hand-written UPDATE that moves a job to another queue moves its count
 * (the trigger also fires on queue_name).  A TRUNCATE of jobs empties the
 * groups with them.  Whatever still escapes the triggers (a data-only
 * restore with triggers disabled, session_replication_role = replica) is
 * found and repaired by the background worker at its next pass and by
 * jq_recount_groups().
 */
DROP TRIGGER jobs_group_status ON jobqueue.jobs;
CREATE TRIGGER jobs_group_status AFTER UPDATE OF status, group_key, queue_name ON jobqueue.jobs
	FOR EACH ROW WHEN (OLD.group_key IS NOT NULL OR NEW.group_key IS NOT NULL)
	EXECUTE FUNCTION jobqueue.jq_group_count();
CREATE TRIGGER jobs_group_truncate AFTER TRUNCATE ON jobqueue.jobs
	FOR EACH STATEMENT EXECUTE FUNCTION jobqueue.jq_group_count();

CREATE FUNCTION jobqueue.jq_recount_groups(queue_name text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jq_recount_groups'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_recount_groups(text) IS
	'recount the running jobs of the groups of a queue (NULL: of every queue) from the jobs; returns the number of groups corrected';
REVOKE ALL ON FUNCTION jobqueue.jq_recount_groups(text) FROM PUBLIC;

/*
 * queue_stats: the group columns count groups with a key only (the jobs
 * without a group are no group), from the unfinished jobs, so that their
 * cost follows the live groups, not every group a queue ever had.
 * Same columns in the same order: CREATE OR REPLACE keeps the grants.
 */
CREATE OR REPLACE VIEW jobqueue.queue_stats AS
SELECT q.queue_name,
	   q.paused,
	   COALESCE(p.pending, 0) AS pending,
	   COALESCE(p.ready, 0) AS ready,
	   COALESCE(p.pending - p.ready, 0) AS scheduled,
	   COALESCE(r.running, 0) AS running,
	   COALESCE(r.expiring_soon, 0) AS expiring_soon,
	   jobqueue.jq_finished_count(q.queue_name, 'succeeded') AS succeeded,
	   d.dead,
	   jobqueue.jq_finished_count(q.queue_name, 'cancelled') AS cancelled,
	   p.oldest_ready_age,
	   d.oldest_dead_age,
	   w.waiting,
	   gs.groups_ready,
	   gs.groups_running,
	   gs.groups_blocked
FROM jobqueue.queues q
LEFT JOIN
	(SELECT j.queue_name,
			pg_catalog.count(*) AS pending,
			pg_catalog.count(*) FILTER (WHERE j.available_at <= pg_catalog.now()) AS ready,
			pg_catalog.now() - pg_catalog.min(j.available_at)
				FILTER (WHERE j.available_at <= pg_catalog.now()) AS oldest_ready_age
	 FROM jobqueue.jobs j
	 WHERE j.status = 'pending'
	 GROUP BY j.queue_name) p ON p.queue_name = q.queue_name
CROSS JOIN LATERAL
	(SELECT pg_catalog.count(*) AS dead,
			pg_catalog.now() - pg_catalog.min(j.finished_at) AS oldest_dead_age
	 FROM jobqueue.jobs j
	 WHERE j.queue_name = q.queue_name AND j.status = 'dead') d
LEFT JOIN
	(SELECT j.queue_name,
			pg_catalog.count(*) AS running,
			pg_catalog.count(*) FILTER (WHERE j.lease_expires_at <
				pg_catalog.now() + GREATEST(interval '5 seconds', rq.lease_duration * 0.1)) AS expiring_soon
	 FROM jobqueue.jobs j
	 JOIN jobqueue.queues rq ON rq.queue_name = j.queue_name
	 WHERE j.status = 'running'
	 GROUP BY j.queue_name) r ON r.queue_name = q.queue_name
CROSS JOIN LATERAL
	(SELECT pg_catalog.count(*) AS waiting
	 FROM jobqueue.jobs j
	 -- = 'waiting', which this script may not name: CREATE EXTENSION adds
	 -- the value in its own transaction (the first status, found when the
	 -- view runs; the range proves the predicate of jobs_status_idx)
	 WHERE j.status < 'pending'
	   AND j.status = pg_catalog.enum_first(NULL::jobqueue.job_status)
	   AND j.queue_name = q.queue_name) w
CROSS JOIN LATERAL
	(SELECT pg_catalog.count(*) FILTER (WHERE g.ready) AS groups_ready,
			pg_catalog.count(*) FILTER (WHERE g.running) AS groups_running,
			pg_catalog.count(*) FILTER (WHERE q.group_ordered AND (
				SELECT h.status = 'dead' FROM jobqueue.jobs h
				WHERE h.queue_name = q.queue_name AND h.group_key = g.group_key
				  AND h.status IN ('pending', 'running', 'dead')
				ORDER BY h.id LIMIT 1)) AS groups_blocked
	 FROM (SELECT j.group_key,
				  pg_catalog.bool_or(j.status = 'pending' AND j.available_at <= pg_catalog.now()) AS ready,
				  pg_catalog.bool_or(j.status = 'running') AS running
		   FROM jobqueue.jobs j
		   WHERE j.queue_name = q.queue_name AND j.group_key IS NOT NULL AND j.group_key <> ''
			 AND j.status IN ('pending', 'running', 'dead')
		   GROUP BY j.group_key) g) gs;

/*
 * The counts of queue_stats at a bounded cost, for a page that is loaded
 * often (a dashboard), of the queues named (all: NULL): every count is exact up to count_limit and
 * count_limit + 1 when there are more, so that one call reads at most some
 * count_limit index entries per count and queue, whatever the backlog
 * (queue_stats counts every unfinished job).  Pending jobs are read
 * priority by priority on jobs_claim_idx, where the ready ones of a
 * priority come before the scheduled ones: ready, scheduled and the age of
 * the oldest ready job need a few probes per priority and the counted
 * entries only.  groups_blocked counts the blocked groups among the first
 * count_limit + 1 dead jobs.  succeeded and cancelled are
 * jq_finished_count's.
 */
CREATE FUNCTION jobqueue.jq_queue_counts(
	queue_names text[] DEFAULT NULL,
	count_limit integer DEFAULT 1000,
	OUT queue_name text,
	OUT paused boolean,
	OUT ready bigint,
	OUT scheduled bigint,
	OUT running bigint,
	OUT expiring_soon bigint,
	OUT waiting bigint,
	OUT dead bigint,
	OUT succeeded bigint,
	OUT cancelled bigint,
	OUT oldest_ready_age interval,
	OUT oldest_dead_age interval,
	OUT groups_blocked bigint)
RETURNS SETOF record
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q		record;
	lim		bigint;
	t0		timestamptz := pg_catalog.now();
	prio	integer;
	first	timestamptz;
	oldest	timestamptz;
	n		bigint;
	levels	bigint;
BEGIN
	IF $2 IS NULL THEN
		RAISE EXCEPTION 'count_limit must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF $2 < 1 OR $2 > 1000000 THEN
		RAISE EXCEPTION 'count_limit must be between 1 and 1000000'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	lim := $2;
	FOR q IN
		SELECT qq.queue_name, qq.paused, qq.lease_duration, qq.group_ordered
		FROM jobqueue.queues qq
		WHERE $1 IS NULL OR qq.queue_name = ANY ($1)
		ORDER BY qq.queue_name
	LOOP
		queue_name := q.queue_name;
		paused := q.paused;
		ready := 0;
		scheduled := 0;
		oldest := NULL;
		levels := 0;
		SELECT j.priority INTO prio FROM jobqueue.jobs j
		WHERE j.queue_name = q.queue_name AND j.status = 'pending'
		ORDER BY j.priority DESC LIMIT 1;
		-- more priorities than count_limit leave lower bounds
		WHILE FOUND AND levels <= lim LOOP
			levels := levels + 1;
			SELECT j.available_at INTO first FROM jobqueue.jobs j
			WHERE j.queue_name = q.queue_name AND j.status = 'pending'
			  AND j.priority = prio
			ORDER BY j.available_at LIMIT 1;
			IF first <= t0 THEN
				oldest := LEAST(oldest, first);
				IF ready <= lim THEN
					SELECT pg_catalog.count(*) INTO n FROM (
						SELECT FROM jobqueue.jobs j
						WHERE j.queue_name = q.queue_name AND j.status = 'pending'
						  AND j.priority = prio
						  AND j.available_at <= t0
						LIMIT lim + 1 - ready) x;
					ready := ready + n;
				END IF;
			END IF;
			IF scheduled <= lim THEN
				SELECT pg_catalog.count(*) INTO n FROM (
					SELECT FROM jobqueue.jobs j
					WHERE j.queue_name = q.queue_name AND j.status = 'pending'
					  AND j.priority = prio
					  AND j.available_at > t0
					LIMIT lim + 1 - scheduled) x;
				scheduled := scheduled + n;
			END IF;
			SELECT j.priority INTO prio FROM jobqueue.jobs j
			WHERE j.queue_name = q.queue_name AND j.status = 'pending'
			  AND j.priority < prio
			ORDER BY j.priority DESC LIMIT 1;
		END LOOP;
		oldest_ready_age := t0 - oldest;

		SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (
				   WHERE x.lease_expires_at < t0 +
					   GREATEST(interval '5 seconds', q.lease_duration * 0.1))
		INTO running, expiring_soon
		FROM (SELECT j.lease_expires_at FROM jobqueue.jobs j
			  WHERE j.queue_name = q.queue_name AND j.status = 'running'
			  LIMIT lim + 1) x;

		SELECT pg_catalog.count(*) INTO waiting FROM (
			SELECT FROM jobqueue.jobs j
			WHERE j.queue_name = q.queue_name
			  AND j.status = 'waiting'::jobqueue.job_status
			LIMIT lim + 1) x;

		SELECT pg_catalog.count(*) INTO dead FROM (
			SELECT FROM jobqueue.jobs j
			WHERE j.queue_name = q.queue_name AND j.status = 'dead'
			LIMIT lim + 1) x;
		SELECT t0 - pg_catalog.min(j.finished_at) INTO oldest_dead_age
		FROM jobqueue.jobs j
		WHERE j.queue_name = q.queue_name AND j.status = 'dead';

		groups_blocked := 0;
		IF q.group_ordered THEN
			-- a group is blocked when its oldest unfinished job is dead
			SELECT pg_catalog.count(DISTINCT d.group_key) INTO groups_blocked
			FROM (SELECT j.id, j.group_key FROM jobqueue.jobs j
				  WHERE j.queue_name = q.queue_name AND j.status = 'dead'
				  LIMIT lim + 1) d
			WHERE d.group_key <> ''
			  AND NOT EXISTS (
				SELECT FROM jobqueue.jobs h
				WHERE h.queue_name = q.queue_name
				  AND h.group_key = d.group_key
				  AND h.status IN ('pending', 'running', 'dead')
				  AND h.id < d.id);
		END IF;

		succeeded := jobqueue.jq_finished_count(q.queue_name, 'succeeded');
		cancelled := jobqueue.jq_finished_count(q.queue_name, 'cancelled');
		RETURN NEXT;
	END LOOP;
END
$$;
COMMENT ON FUNCTION jobqueue.jq_queue_counts(text[], integer) IS
	'the counts of queue_stats at a bounded cost: exact up to count_limit, count_limit + 1 for more';
REVOKE ALL ON FUNCTION jobqueue.jq_queue_counts(text[], integer) FROM PUBLIC;

-- Every role that holds the admin or monitor set gets jq_queue_counts.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_worker_status()'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s',
			'jobqueue.jq_queue_counts(text[], integer)', r.grantee);
	END LOOP;
END
$$;

-- Every role that holds the admin set gets jq_recount_groups.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_explain_claim(text, integer)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION jobqueue.jq_recount_groups(text) TO %s',
								  r.grantee);
	END LOOP;
END
$$;

/*
 * The rotation of round_robin claims, shared by every session: the last
 * group a claim of the queue served.  A fresh connection (a serverless
 * worker, a cron script, a pooler's new server connection) continues the
 * rotation instead of starting at the first group.  A claim moves it only
 * when no other claim holds the row (it never waits).
 */
CREATE TABLE jobqueue.group_rotation
(
	queue_name	text	PRIMARY KEY REFERENCES jobqueue.queues ON DELETE CASCADE,
	group_key	text	NOT NULL
);
COMMENT ON TABLE jobqueue.group_rotation IS
	'per round_robin queue: the last group a claim served, where the next claim of any session starts';
REVOKE ALL ON jobqueue.group_rotation FROM PUBLIC;

------------------------------------------------------------------------------
-- Controls: per-group overrides of a queue's group limits
------------------------------------------------------------------------------

/*
 * One row per group with an override of its queue's group defaults
 * (group_concurrency, the group rate limit, the fair-share weight); a NULL
 * column takes the queue's default.  A claim reads a group's row only for
 * the groups it visits (groups with ready jobs), through the primary key:
 * overrides of groups without jobs cost nothing.  Written by
 * jq_set_group_limit, which checks every value; the CHECK constraints
 * guard hand-written rows.
 */
CREATE TABLE jobqueue.group_limits
(
	queue_name	text	NOT NULL REFERENCES jobqueue.queues ON DELETE CASCADE,
	group_key	text	NOT NULL CHECK (group_key <> ''),
	concurrency	integer	CHECK (concurrency >= 0),
	rate_limit	double precision CHECK (rate_limit > 0 AND rate_limit <= 1000000),
	rate_burst	integer	CHECK (rate_burst BETWEEN 1 AND 1000000),
	weight		double precision CHECK (weight > 0 AND weight <= 1000000),
	PRIMARY KEY (queue_name, group_key),
	CHECK (concurrency IS NOT NULL OR rate_limit IS NOT NULL
		   OR rate_burst IS NOT NULL OR weight IS NOT NULL)
);
COMMENT ON TABLE jobqueue.group_limits IS
	'per (queue, group): overrides of the queue''s group defaults (concurrency, rate limit, burst, fair-share weight); NULL: the default';
REVOKE ALL ON jobqueue.group_limits FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_set_group_limit(queue_name text, group_key text,
	concurrency integer DEFAULT NULL, rate_limit double precision DEFAULT NULL,
	rate_burst integer DEFAULT NULL, weight double precision DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_set_group_limit'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_set_group_limit(text, text, integer, double precision, integer, double precision) IS
	'set the overrides of one group of a queue (concurrency, rate limit, burst, fair-share weight); all NULL removes them';
REVOKE ALL ON FUNCTION jobqueue.jq_set_group_limit(text, text, integer, double precision, integer, double precision) FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_group_limits(queue_name text)
RETURNS TABLE (group_key text, concurrency integer, rate_limit double precision,
	rate_burst integer, weight double precision)
AS 'MODULE_PATHNAME', 'jq_group_limits'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_group_limits(text) IS
	'the overrides of the groups of a queue, by group key';
REVOKE ALL ON FUNCTION jobqueue.jq_group_limits(text) FROM PUBLIC;

-- Every role that holds the admin set gets both, a monitor jq_group_limits.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_explain_claim(text, integer)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s',
			'jobqueue.jq_set_group_limit(text, text, integer, double precision, integer, double precision)',
			r.grantee);
	END LOOP;
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_group_stats(text)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION jobqueue.jq_group_limits(text) TO %s',
								  r.grantee);
	END LOOP;
END
$$;

------------------------------------------------------------------------------
-- Controls: debounce, deadlines, admission limits, per-group limits and
-- fair share (the columns and arguments; see docs/controls.md)
------------------------------------------------------------------------------

/*
 * The controls' settings of a job:
 * - debounce_key: while the job is pending and has never been claimed,
 *   a debounced jq_enqueue with the same key replaces it instead of
 *   adding a job (jobs_debounce_key_idx keeps one such job per queue and
 *   key); debounce_until: the latest available_at a replacement may set
 *   (the first enqueue + debounce_max_wait; infinity: no bound), set only
 *   until the job's first claim, which sets it NULL.
 * - start_by: a job not claimed by then never runs; it is cancelled with
 *   last_error_code 'EXPIRED' (by a claim that meets it, or by the worker).
 * - cost: the declared cost of the job for fair share, in seconds of
 *   worker time (NULL: measured).
 */
CREATE DOMAIN jobqueue.debounce_key AS text
	CONSTRAINT jobs_debounce_key_length CHECK (
		pg_catalog.octet_length(VALUE) BETWEEN 1 AND 512);
COMMENT ON DOMAIN jobqueue.debounce_key IS
	'a debounce key: 1 to 512 bytes';
CREATE DOMAIN jobqueue.job_cost AS float8
	CONSTRAINT jobs_cost_valid CHECK (VALUE > 0 AND VALUE <= 1e9);
COMMENT ON DOMAIN jobqueue.job_cost IS
	'the declared cost of a job in seconds of worker time: above 0, at most 1e9';
-- (domains, not CHECK constraints of jobs: those would be planned into
-- every UPDATE of a job)
ALTER TABLE jobqueue.jobs
	ADD COLUMN debounce_key jobqueue.debounce_key,
	ADD COLUMN debounce_until timestamptz,
	ADD COLUMN start_by timestamptz,
	ADD COLUMN cost jobqueue.job_cost;

/*
 * One never claimed job per (queue, debounce key): the arbiter of the
 * debounced INSERT ... ON CONFLICT DO UPDATE.  A claim moves the job out
 * of the index for good (it sets debounce_until NULL, and nothing sets it
 * again), so the next call starts a new job, and a claimed job that comes
 * back to pending (a retry, a release) never conflicts with it.  A job
 * cancelled or expired before any claim gives its key up at the next call
 * of the key.  The predicate tests only columns that are NULL in a job
 * that was never debounced, and no status, on purpose: every UPDATE of a
 * job compares the old and new values of each column an index or its
 * predicate names (to tell whether the update changes the index), which
 * is cheap for a NULL and a walk of the row for a column set in every job
 * (lease_token, in an earlier form of this index: 2,400 instructions per
 * job in batches).
 */
CREATE UNIQUE INDEX jobs_debounce_key_idx ON jobqueue.jobs (queue_name, debounce_key)
	WHERE debounce_key IS NOT NULL AND debounce_until IS NOT NULL;

/*
 * Jobs with a deadline, by queue, status and deadline: the worker's expiry
 * finds the pending jobs past start_by through it, and the claim of a
 * 'deadline' queue reads the earliest deadlines first, each from the range
 * of pending jobs.  The status is a column rather than a test of the
 * predicate on purpose: every statement that writes any job prepares the
 * predicate, and one test is the cheapest; the jobs with a deadline pay
 * with an entry for each of their row versions.
 */
CREATE INDEX jobs_start_by_idx ON jobqueue.jobs (queue_name, status, start_by, id)
	WHERE start_by IS NOT NULL;

/*
 * The controls' settings of a queue:
 * - group_rate_limit, group_rate_burst: the rate limit of each group that
 *   has no override of its own (jq_set_group_limit); the queue's
 *   rate_limit stays the cap over all groups.
 * - max_wait: a job not claimed within max_wait of becoming available is
 *   never claimed (start_by = available_at + max_wait when not given).
 * - max_pending, group_max_pending: the most pending jobs (waiting, pending
 *   and scheduled; not running) the queue and each of its groups admit.
 * - fair_share_half_life: the half-life of the usage that fair share
 *   charges to each group.
 * - fairness gains 'deadline' (earliest start_by first) and 'fair_share'.
 */
ALTER TABLE jobqueue.queues
	ADD COLUMN group_rate_limit float8
		CONSTRAINT queues_group_rate_limit_valid CHECK (
			group_rate_limit > 0 AND group_rate_limit <= 1000000),
	ADD COLUMN group_rate_burst integer
		CONSTRAINT queues_group_rate_burst_valid CHECK (
			group_rate_burst >= 1 AND group_rate_burst <= 1000000),
	ADD COLUMN max_wait interval
		CONSTRAINT queues_max_wait_valid CHECK (
			max_wait > interval '0' AND max_wait <= interval '100 years'),
	ADD COLUMN max_pending integer
		CONSTRAINT queues_max_pending_positive CHECK (max_pending >= 1),
	ADD COLUMN group_max_pending integer
		CONSTRAINT queues_group_max_pending_positive CHECK (group_max_pending >= 1),
	ADD COLUMN fair_share_half_life interval NOT NULL DEFAULT '1 hour'
		CONSTRAINT queues_fair_share_half_life_valid CHECK (
			fair_share_half_life > interval '0' AND fair_share_half_life <= interval '100 years'),
	DROP CONSTRAINT queues_fairness_valid,
	ADD CONSTRAINT queues_fairness_valid CHECK (
		fairness IN ('priority', 'round_robin', 'deadline', 'fair_share'));

/*
 * Admission limits (max_pending, group_max_pending): per queue (group_key
 * NULL) and per group of a queue with a limit, an upper bound of its
 * unfinished jobs (waiting, pending, scheduled and running).  It is exact
 * when recounted from the jobs, and every enqueue adds its jobs to it, in
 * the producer's transaction, under the row's lock: producers of a limited
 * queue take these rows in one order (the queue's, then its groups' by
 * key) and wait for each other there, and only there.  While the bound
 * plus the new jobs stays within the limit, the enqueue is admitted
 * without counting; otherwise the jobs are counted again (the pending ones
 * against the limit, the running ones too for the new bound, since they
 * may come back).  Claims and completions never touch it.  A replay
 * (jq_retry, jq_retry_dead) or a schedule run removes the queue's rows, so
 * that the next enqueue recounts.  Not dumped: after a restore the first
 * enqueue recounts.
 */
CREATE TABLE jobqueue.admission
(
	queue_name	text	NOT NULL REFERENCES jobqueue.queues ON DELETE CASCADE,
	group_key	text,
	bound		bigint	NOT NULL,
	CONSTRAINT admission_key UNIQUE NULLS NOT DISTINCT (queue_name, group_key)
);
COMMENT ON TABLE jobqueue.admission IS
	'per queue (group_key NULL) and group with an admission limit: an upper bound of its unfinished jobs, exact at its last recount';
REVOKE ALL ON jobqueue.admission FROM PUBLIC;

/*
 * jq_create_queue and jq_alter_queue gain the queue's controls, last and
 * with defaults; the rights on the old definitions carry over.
 */
CREATE FUNCTION jobqueue.jq_create_queue(
	queue_name text,
	max_attempts int DEFAULT 8,
	lease_duration interval DEFAULT '60 seconds',
	max_runtime interval DEFAULT '1 hour',
	backoff_base interval DEFAULT '10 seconds',
	backoff_max interval DEFAULT '1 hour',
	retention interval DEFAULT '7 days',
	notify_finished boolean DEFAULT false,
	group_concurrency int DEFAULT NULL,
	group_ordered boolean DEFAULT false,
	fairness text DEFAULT 'priority',
	priority_aging interval DEFAULT NULL,
	rate_limit float8 DEFAULT NULL,
	rate_burst int DEFAULT NULL,
	group_rate_limit float8 DEFAULT NULL,
	group_rate_burst int DEFAULT NULL,
	max_wait interval DEFAULT NULL,
	max_pending int DEFAULT NULL,
	group_max_pending int DEFAULT NULL,
	fair_share_half_life interval DEFAULT '1 hour')
RETURNS void
AS 'MODULE_PATHNAME', 'jq_create_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int, float8, int, interval, int, int, interval) IS
	'create a queue with its policy; does nothing (with a NOTICE) when it exists';
REVOKE ALL ON FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int, float8, int, interval, int, int, interval) FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_alter_queue(
	queue_name text,
	max_attempts int DEFAULT NULL,
	lease_duration interval DEFAULT NULL,
	max_runtime interval DEFAULT NULL,
	backoff_base interval DEFAULT NULL,
	backoff_max interval DEFAULT NULL,
	retention interval DEFAULT NULL,
	notify boolean DEFAULT NULL,
	notify_finished boolean DEFAULT NULL,
	group_concurrency int DEFAULT NULL,
	group_ordered boolean DEFAULT NULL,
	fairness text DEFAULT NULL,
	priority_aging interval DEFAULT NULL,
	rate_limit float8 DEFAULT NULL,
	rate_burst int DEFAULT NULL,
	group_rate_limit float8 DEFAULT NULL,
	group_rate_burst int DEFAULT NULL,
	max_wait interval DEFAULT NULL,
	max_pending int DEFAULT NULL,
	group_max_pending int DEFAULT NULL,
	fair_share_half_life interval DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_alter_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int, float8, int, interval, int, int, interval) IS
	'change a queue''s policy; NULL arguments leave a setting unchanged (0, or ''0'' for an interval, removes a limit: group_concurrency, priority_aging, rate_limit with its burst, group_rate_limit with its burst, max_wait, max_pending, group_max_pending; a burst of 0 restores the default burst)';
REVOKE ALL ON FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int, float8, int, interval, int, int, interval) FROM PUBLIC;

/*
 * jq_job shows the job's controls: its debounce key, deadline and declared
 * cost (new result columns: the function is made again).
 */
ALTER FUNCTION jobqueue.jq_job(bigint) RENAME TO jq_job_1_3;
CREATE FUNCTION jobqueue.jq_job(id bigint)
RETURNS TABLE(id bigint, queue_name text, status jobqueue.job_status,
	attempt int, max_attempts int, priority int,
	result jsonb, progress jsonb, last_error_code text, errors jsonb,
	created_at timestamptz, available_at timestamptz,
	started_at timestamptz, finished_at timestamptz,
	waiting_for bigint[],
	debounce_key text, start_by timestamptz, cost float8)
AS 'MODULE_PATHNAME', 'jq_job'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1;
COMMENT ON FUNCTION jobqueue.jq_job(bigint) IS
	'one job: state, attempts, result, progress, errors, times, the dependencies it waits for, its debounce key, deadline and cost; no row for an unknown id';
REVOKE ALL ON FUNCTION jobqueue.jq_job(bigint) FROM PUBLIC;

DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT o.new_sig, a.grantee::pg_catalog.regrole AS grantee
		FROM (VALUES
			('jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int)',
			 'jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int, float8, int, interval, int, int, interval)'),
			('jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int)',
			 'jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int, float8, int, interval, int, int, interval)'),
			('jobqueue.jq_job_1_3(bigint)', 'jobqueue.jq_job(bigint)')
		) AS o(sig, new_sig)
		JOIN pg_catalog.pg_proc p ON p.oid = o.sig::pg_catalog.regprocedure
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', r.new_sig, r.grantee);
	END LOOP;
END
$$;

DROP FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int);
DROP FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int);
DROP FUNCTION jobqueue.jq_job_1_3(bigint);

------------------------------------------------------------------------------
-- Scale-out: jobqueue on a Citus cluster, jobs distributed by queue
------------------------------------------------------------------------------

/*
 * The changes one node of a Citus cluster needs before and after the tables
 * are distributed, run on every node by jq_distribute() (each in its own
 * transaction there) and idempotent:
 *   - the primary key of jobs becomes (queue_name, id), that of
 *     job_dependencies (job_id, depends_on, queue_name): Citus needs the
 *     distribution column in every unique index; the calls by id alone
 *     find their job through jobs_id_idx;
 *   - foreign keys between its tables are dropped until the tables are
 *     distributed (jq_distribute() makes them again from the coordinator);
 *   - the identity sequence of jobs hands out the range of the node's
 *     group, the one Citus gives the sequences it creates itself (group g:
 *     g * 2^48 + 1 up to (g + 1) * 2^48 + 1), so that ids inserted through
 *     any node are unique and a later metadata sync finds nothing to change;
 *   - queue_stats gets the same columns from statements Citus can plan:
 *     the counts of each queue from one pass over its unfinished jobs,
 *     grouped by queue_name (run on each shard), joined to the queues
 *     afterwards.  The view of one server correlates a subquery per queue
 *     (LATERAL), which Citus does not plan over a reference table;
 *   - jq_finished_count may run a distributed query inside the query of a
 *     shard: queue_stats filtered by one queue is sent whole to that
 *     queue's shard, with the function, whose read of the queue's jobs
 *     Citus otherwise refuses there ("cannot execute a distributed query
 *     from a query on a shard"); it is a read of that same queue.
 * DDL propagation is off: each node changes only its own copy (the shards
 * are made from the coordinator's definition).  Returns what it changed.
 * Nothing of this runs on plain PostgreSQL.
 */
CREATE FUNCTION jobqueue.jq_distribute_node()
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	grp bigint;
	lo bigint;
	hi bigint;
	seq regclass := pg_catalog.pg_get_serial_sequence('jobqueue.jobs', 'id')::pg_catalog.regclass;
	cur_min bigint;
	cur_max bigint;
	last bigint;
	r record;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
		RAISE EXCEPTION 'jq_distribute_node() needs Citus'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'jq_distribute() runs it on every node of a Citus cluster.';
	END IF;
	PERFORM pg_catalog.set_config('citus.enable_ddl_propagation', 'off', true);
	IF (SELECT pg_catalog.array_agg(a.attname::text ORDER BY k.ord)
		FROM pg_catalog.pg_constraint c
		CROSS JOIN LATERAL pg_catalog.unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
		WHERE c.conrelid = 'jobqueue.jobs'::pg_catalog.regclass AND c.contype = 'p')
		IS DISTINCT FROM ARRAY['queue_name', 'id'] THEN
		ALTER TABLE jobqueue.jobs DROP CONSTRAINT jobs_pkey,
			ADD CONSTRAINT jobs_pkey PRIMARY KEY (queue_name, id);
		RETURN NEXT 'jobs: primary key (queue_name, id)';
	END IF;
	IF pg_catalog.to_regclass('jobqueue.jobs_id_idx') IS NULL THEN
		CREATE INDEX jobs_id_idx ON jobqueue.jobs (id);
		RETURN NEXT 'jobs: index jobs_id_idx (id)';
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_constraint c
				   JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
				   WHERE c.conrelid = 'jobqueue.job_dependencies'::pg_catalog.regclass
					 AND c.contype = 'p' AND a.attname = 'queue_name') THEN
		ALTER TABLE jobqueue.job_dependencies DROP CONSTRAINT job_dependencies_pkey,
			ADD CONSTRAINT job_dependencies_pkey PRIMARY KEY (job_id, depends_on, queue_name);
		RETURN NEXT 'job_dependencies: primary key (job_id, depends_on, queue_name)';
	END IF;

	-- foreign keys of tables not yet distributed (jq_distribute() makes
	-- them again once they are)
	FOR r IN
		SELECT c.conrelid::pg_catalog.regclass AS rel, c.conname
		FROM pg_catalog.pg_constraint c
		JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			AND d.objid = c.conrelid AND d.deptype = 'e'
		JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'
		WHERE c.contype = 'f'
		  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = c.conrelid)
	LOOP
		EXECUTE pg_catalog.format('ALTER TABLE %s DROP CONSTRAINT %I', r.rel, r.conname);
		RETURN NEXT pg_catalog.format('%s: foreign key %s set aside', r.rel, r.conname);
	END LOOP;

	SELECT l.groupid INTO grp FROM pg_catalog.pg_dist_local_group l;
	lo := (grp << 48) + 1;
	hi := lo + (1::bigint << 48);
	SELECT s.seqmin, s.seqmax INTO cur_min, cur_max
	FROM pg_catalog.pg_sequence s WHERE s.seqrelid = seq;
	IF cur_min IS DISTINCT FROM lo OR cur_max IS DISTINCT FROM hi THEN
		EXECUTE pg_catalog.format('SELECT CASE WHEN is_called THEN last_value END FROM %s', seq)
			INTO last;
		IF last IS NULL OR last < lo OR last >= hi THEN
			EXECUTE pg_catalog.format('ALTER SEQUENCE %s MINVALUE %s MAXVALUE %s START %s RESTART %s',
									  seq, lo, hi, lo, lo);
		ELSE
			EXECUTE pg_catalog.format('ALTER SEQUENCE %s MINVALUE %s MAXVALUE %s START %s',
									  seq, lo, hi, lo);
		END IF;
		RETURN NEXT pg_catalog.format('jobs: ids of group %s from %s', grp, lo);
	END IF;

	IF pg_catalog.strpos(pg_catalog.pg_get_viewdef('jobqueue.queue_stats'::pg_catalog.regclass),
						 'per_group') = 0 THEN
		CREATE OR REPLACE VIEW jobqueue.queue_stats AS
		SELECT q.queue_name,
			   q.paused,
			   COALESCE(s.pending, 0) AS pending,
			   COALESCE(s.ready, 0) AS ready,
			   COALESCE(s.pending - s.ready, 0) AS scheduled,
			   COALESCE(s.running, 0) AS running,
			   COALESCE(s.expiring_soon, 0) AS expiring_soon,
			   jobqueue.jq_finished_count(q.queue_name, 'succeeded') AS succeeded,
			   COALESCE(s.dead, 0) AS dead,
			   jobqueue.jq_finished_count(q.queue_name, 'cancelled') AS cancelled,
			   s.oldest_ready_age,
			   s.oldest_dead_age,
			   COALESCE(s.waiting, 0) AS waiting,
			   COALESCE(gs.groups_ready, 0) AS groups_ready,
			   COALESCE(gs.groups_running, 0) AS groups_running,
			   COALESCE(gs.groups_blocked, 0) AS groups_blocked
		FROM jobqueue.queues q
		LEFT JOIN
			(SELECT j.queue_name,
					pg_catalog.count(*) FILTER (WHERE j.status = 'pending') AS pending,
					pg_catalog.count(*) FILTER (WHERE j.status = 'pending'
						AND j.available_at <= pg_catalog.now()) AS ready,
					pg_catalog.now() - pg_catalog.min(j.available_at)
						FILTER (WHERE j.status = 'pending' AND j.available_at <= pg_catalog.now()) AS oldest_ready_age,
					pg_catalog.count(*) FILTER (WHERE j.status = 'running') AS running,
					pg_catalog.count(*) FILTER (WHERE j.status = 'running' AND j.lease_expires_at <
						pg_catalog.now() + GREATEST(interval '5 seconds', rq.lease_duration * 0.1)) AS expiring_soon,
					pg_catalog.count(*) FILTER (WHERE j.status = 'dead') AS dead,
					pg_catalog.now() - pg_catalog.min(j.finished_at)
						FILTER (WHERE j.status = 'dead') AS oldest_dead_age,
					pg_catalog.count(*) FILTER (WHERE j.status < 'pending') AS waiting
			 FROM jobqueue.jobs j
			 JOIN jobqueue.queues rq ON rq.queue_name = j.queue_name
			 WHERE j.status NOT IN ('succeeded', 'cancelled')
			 GROUP BY j.queue_name) s ON s.queue_name = q.queue_name
		LEFT JOIN
			-- a strictly ordered group is blocked when its oldest unfinished
			-- job is dead
			(SELECT per_group.queue_name,
					pg_catalog.count(*) FILTER (WHERE per_group.ready) AS groups_ready,
					pg_catalog.count(*) FILTER (WHERE per_group.running) AS groups_running,
					pg_catalog.count(*) FILTER (WHERE per_group.ordered AND per_group.head = 'dead') AS groups_blocked
			 FROM (SELECT j.queue_name,
						  pg_catalog.bool_or(gq.group_ordered) AS ordered,
						  pg_catalog.bool_or(j.status = 'pending' AND j.available_at <= pg_catalog.now()) AS ready,
						  pg_catalog.bool_or(j.status = 'running') AS running,
						  (pg_catalog.array_agg(j.status ORDER BY j.id))[1] AS head
				   FROM jobqueue.jobs j
				   JOIN jobqueue.queues gq ON gq.queue_name = j.queue_name
				   WHERE j.group_key IS NOT NULL AND j.group_key <> ''
					 AND j.status IN ('pending', 'running', 'dead')
				   GROUP BY j.queue_name, j.group_key) per_group
			 GROUP BY per_group.queue_name) gs ON gs.queue_name = q.queue_name;
		RETURN NEXT 'queue_stats: counts grouped by queue_name';
	END IF;

	IF NOT EXISTS (SELECT FROM pg_catalog.pg_proc p
				   WHERE p.oid = 'jobqueue.jq_finished_count(text, jobqueue.job_status)'::pg_catalog.regprocedure
					 AND 'citus.allow_nested_distributed_execution=on' = ANY (p.proconfig)) THEN
		ALTER FUNCTION jobqueue.jq_finished_count(text, jobqueue.job_status)
			SET citus.allow_nested_distributed_execution = on;
		RETURN NEXT 'jq_finished_count: reads jobs within the query of a shard';
	END IF;
END
$$;
COMMENT ON FUNCTION jobqueue.jq_distribute_node() IS
	'internal, run on every node by jq_distribute(): the primary key and the id range of this node''s copy of jobs, queue_stats in a form Citus plans';
REVOKE ALL ON FUNCTION jobqueue.jq_distribute_node() FROM PUBLIC;

/*
 * Spread jobqueue over a Citus cluster: run on the coordinator after
 * CREATE EXTENSION jobqueue, and again after citus_add_node (each run does
 * only what is missing, and returns what it did).
 *   - The tables of one queue's jobs (jobs and every table with a
 *     queue_name column) are distributed by queue_name, colocated with
 *     jobs: a queue's jobs, groups, rotation and dependencies are on one
 *     shard, and every statement of a queue is a single-shard statement.
 *   - The configuration (queues, schedules, and any table without
 *     queue_name) becomes reference tables, on every node.
 *   - The triggers of jobs go with its shards (citus.enable_unsafe_triggers
 *     for the distribution: they only touch the groups of the row's
 *     queue, which are on the same shard's node).
 *   - The functions that name a queue first are delegated to the node of
 *     that queue's shard; jq_claim and jq_complete_and_claim even inside a
 *     transaction block (force_delegation), so that a queue's rate limit,
 *     kept in that node's shared memory, counts every claim of the queue.
 * The distributed mode itself is no setting: the library reads it from
 * Citus's catalog (jobs in pg_dist_partition).
 */
/*
 * Internal: forget this session's kept statements and distributed mode
 * (plans.c), so that its next calls plan them for the mode the catalog
 * says now; jq_distribute() calls it in its own session.
 */
CREATE FUNCTION jobqueue.jq_plans_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'jq_plans_reset_sql'
LANGUAGE C VOLATILE;
COMMENT ON FUNCTION jobqueue.jq_plans_reset() IS
	'internal, called by jq_distribute(): the session prepares its statements again, for the distributed mode';
REVOKE ALL ON FUNCTION jobqueue.jq_plans_reset() FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_distribute()
RETURNS SETOF text
LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	r record;
	step text;
	fkeys text[] := '{}';
	force_delegation boolean;
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
		RAISE EXCEPTION 'jq_distribute() needs Citus'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'The extension citus is not installed in this database.',
				  HINT = 'On a single server jobqueue needs no distribution; on a Citus cluster, CREATE EXTENSION citus on every node first.';
	END IF;
	IF NOT pg_catalog.citus_is_coordinator() THEN
		RAISE EXCEPTION 'jq_distribute() must run on the Citus coordinator'
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  DETAIL = 'This node is a worker node, or a server without nodes in its metadata.',
				  HINT = 'Connect to the coordinator; add the workers there first (citus_set_coordinator_host, citus_add_node).';
	END IF;

	-- foreign keys between the tables (group_rotation to queues) are set
	-- aside while the tables are distributed (every node drops its own,
	-- below), and made again between the distributed tables: Citus would
	-- turn a local table that references a reference table into a table
	-- of the coordinator
	FOR r IN
		SELECT c.conrelid::pg_catalog.regclass AS rel, c.conname, pg_catalog.pg_get_constraintdef(c.oid) AS def
		FROM pg_catalog.pg_constraint c
		JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			AND d.objid = c.conrelid AND d.deptype = 'e'
		JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'
		WHERE c.contype = 'f'
		  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = c.conrelid)
	LOOP
		fkeys := fkeys || pg_catalog.format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.rel, r.conname, r.def);
	END LOOP;

	-- every node's copy of the tables: keys, id range (their own transactions)
	FOR r IN
		SELECT n.nodeid, n.success, n.result
		FROM pg_catalog.run_command_on_all_nodes(
			'SELECT pg_catalog.string_agg(s, ''; '') FROM jobqueue.jq_distribute_node() s') n
	LOOP
		IF NOT r.success THEN
			RAISE EXCEPTION 'could not prepare node % for distribution: %', r.nodeid, r.result
				USING ERRCODE = 'object_not_in_prerequisite_state',
					  HINT = 'Every node needs CREATE EXTENSION jobqueue (Citus propagates it from the coordinator to nodes added before it).';
		END IF;
		IF r.result <> '' THEN
			RETURN NEXT pg_catalog.format('node %s: %s', r.nodeid, r.result);
		END IF;
	END LOOP;

	PERFORM pg_catalog.set_config('citus.enable_unsafe_triggers', 'on', true);
	-- one connection per node: the foreign keys to reference tables need it
	PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);


	-- configuration: reference tables
	FOR r IN
		SELECT c.oid::pg_catalog.regclass AS rel
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			AND d.objid = c.oid AND d.deptype = 'e'
		JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'
		WHERE c.relkind = 'r'
		  AND (c.relname IN ('queues', 'schedules')
			   OR NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a
							  WHERE a.attrelid = c.oid AND a.attname = 'queue_name' AND NOT a.attisdropped))
		  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = c.oid)
		ORDER BY c.relname <> 'queues', c.relname
	LOOP
		PERFORM pg_catalog.create_reference_table(r.rel);
		RETURN NEXT pg_catalog.format('%s: reference table', r.rel);
	END LOOP;

	-- a queue's jobs and everything per job: distributed by queue_name,
	-- colocated with jobs
	FOR r IN
		SELECT c.oid::pg_catalog.regclass AS rel
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
			AND d.objid = c.oid AND d.deptype = 'e'
		JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'
		WHERE c.relkind = 'r' AND c.relname NOT IN ('queues', 'schedules')
		  AND EXISTS (SELECT FROM pg_catalog.pg_attribute a
					  WHERE a.attrelid = c.oid AND a.attname = 'queue_name' AND NOT a.attisdropped)
		  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p WHERE p.logicalrelid = c.oid)
		ORDER BY c.relname <> 'jobs', c.relname
	LOOP
		IF r.rel = 'jobqueue.jobs'::pg_catalog.regclass THEN
			PERFORM pg_catalog.create_distributed_table(r.rel, 'queue_name');
		ELSE
			PERFORM pg_catalog.create_distributed_table(r.rel, 'queue_name',
														colocate_with => 'jobqueue.jobs');
		END IF;
		RETURN NEXT pg_catalog.format('%s: distributed by queue_name', r.rel);
	END LOOP;

	FOREACH step IN ARRAY fkeys
	LOOP
		EXECUTE step;
	END LOOP;

	-- the functions of one queue run on its shard's node
	FOR r IN
		SELECT p.oid::pg_catalog.regprocedure AS fn, p.proname::text AS name
		FROM pg_catalog.pg_proc p
		JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
			AND d.objid = p.oid AND d.deptype = 'e'
		JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'
		WHERE p.proname IN ('jq_enqueue', 'jq_enqueue_many', 'jq_claim', 'jq_complete_and_claim',
							'jq_complete', 'jq_complete_many', 'jq_fail', 'jq_heartbeat',
							'jq_release', 'jq_progress', 'jq_cancel', 'jq_retry', 'jq_job',
							'jq_retry_dead', 'jq_purge', 'jq_jobs', 'jq_group_stats',
							'jq_explain_claim', 'jq_finished_count', 'jq_recount_groups')
		  AND p.pronargs >= 1 AND p.proargtypes[0] = 'pg_catalog.text'::pg_catalog.regtype
		  AND p.proargnames[1] = 'queue_name'
		  AND NOT EXISTS (SELECT FROM pg_catalog.pg_dist_object o
						  WHERE o.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
							AND o.objid = p.oid AND o.distribution_argument_index = 0)
		ORDER BY 1::text
	LOOP
		force_delegation := r.name IN ('jq_claim', 'jq_complete_and_claim');
		PERFORM pg_catalog.create_distributed_function(r.fn, '$1',
			colocate_with => 'jobqueue.jobs', force_delegation => force_delegation);
		RETURN NEXT pg_catalog.format('%s: delegated by queue_name%s', r.fn,
			CASE WHEN force_delegation THEN ', also in transaction blocks' ELSE '' END);
	END LOOP;
	-- this session's statements were planned for one server
	PERFORM jobqueue.jq_plans_reset();
END
$$;
COMMENT ON FUNCTION jobqueue.jq_distribute() IS
	'on a Citus coordinator: distribute jobqueue''s tables by queue (configuration as reference tables), delegate the functions of a queue to its node; idempotent, again after citus_add_node; returns what it changed';
REVOKE ALL ON FUNCTION jobqueue.jq_distribute() FROM PUBLIC;

/*
 * Where a queue lives: the node that holds its shard, where its
 * notifications are sent (the functions of a queue run there) and where a
 * client should LISTEN.  NULL on a single server (or before
 * jq_distribute()): the server itself.
 */
CREATE FUNCTION jobqueue.jq_queue_node(queue_name text, OUT node_name text, OUT node_port integer)
RETURNS record
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF queue_name IS NULL THEN
		RAISE EXCEPTION 'queue_name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'citus') THEN
		RETURN;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_dist_partition p
				   WHERE p.logicalrelid = 'jobqueue.jobs'::pg_catalog.regclass) THEN
		RETURN;
	END IF;
	SELECT n.nodename, n.nodeport INTO node_name, node_port
	FROM pg_catalog.pg_dist_placement pl
	JOIN pg_catalog.pg_dist_node n ON n.groupid = pl.groupid AND n.noderole = 'primary'
	WHERE pl.shardid = pg_catalog.get_shard_id_for_distribution_column('jobqueue.jobs', queue_name)
	ORDER BY n.nodeid
	LIMIT 1;
END
$$;
COMMENT ON FUNCTION jobqueue.jq_queue_node(text) IS
	'the Citus node that holds a queue''s jobs, where its notifications are sent (LISTEN there); NULL on a single server';
REVOKE ALL ON FUNCTION jobqueue.jq_queue_node(text) FROM PUBLIC;

-- Whoever may follow a job (producers, workers, admins) may ask where its
-- queue lives.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_job(bigint)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION jobqueue.jq_queue_node(text) TO %s',
								  r.grantee);
	END LOOP;
END
$$;

------------------------------------------------------------------------------
-- Routing: queue-first calls
--
-- Every function that acts on one job gets a form whose first argument is
-- the job's queue, the other arguments and defaults those of the id-only
-- form.  Each statement it runs is filtered by queue_name, so that on
-- Citus (jobs distributed by queue_name) the call is one statement on the
-- queue's shard; on one node it is as fast as the id-only form.  The
-- id-only forms stay: they read the job's queue first, then run the same
-- statement.  A queue that does not exist is an error; a job of another
-- queue is not found: the call changes nothing and says so, as a fenced
-- write does.
------------------------------------------------------------------------------

CREATE FUNCTION jobqueue.jq_complete(queue_name text, id bigint, token bigint, result jsonb DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_complete_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_complete(text, bigint, bigint, jsonb) IS
	'mark a job of the queue succeeded, storing its result; false (and no change) when the token is stale, the lease has expired or the job is of another queue';

CREATE FUNCTION jobqueue.jq_complete_many(queue_name text, ids bigint[], tokens bigint[], results jsonb[] DEFAULT NULL)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'jq_complete_many_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 100;
COMMENT ON FUNCTION jobqueue.jq_complete_many(text, bigint[], bigint[], jsonb[]) IS
	'complete many jobs of the queue in one statement, each with its result; returns the ids that were completed';

CREATE FUNCTION jobqueue.jq_fail(
	queue_name text,
	id bigint,
	token bigint,
	error_code text,
	error_message text DEFAULT NULL,
	retryable boolean DEFAULT true,
	retry_in interval DEFAULT NULL,
	error_detail jsonb DEFAULT NULL,
	stack text DEFAULT NULL)
RETURNS jobqueue.job_status
AS 'MODULE_PATHNAME', 'jq_fail_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_fail(text, bigint, bigint, text, text, boolean, interval, jsonb, text) IS
	'record a failed attempt of a job of the queue; returns pending (retry scheduled), dead, or NULL when fenced or of another queue';

CREATE FUNCTION jobqueue.jq_heartbeat(queue_name text, id bigint, token bigint, extend interval DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'jq_heartbeat_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_heartbeat(text, bigint, bigint, interval) IS
	'extend the lease of a job of the queue (never past started_at + max_runtime); NULL when the lease is lost or the job is of another queue';

CREATE FUNCTION jobqueue.jq_release(queue_name text, id bigint, token bigint, delay interval DEFAULT '0')
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_release_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_release(text, bigint, bigint, interval) IS
	'give a claimed job of the queue back without counting a failed attempt';

CREATE FUNCTION jobqueue.jq_progress(queue_name text, id bigint, token bigint, progress jsonb)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_progress_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_progress(text, bigint, bigint, jsonb) IS
	'replace the progress of a held job of the queue; false (and no change) when the token is stale, the lease has expired or the job is of another queue';

CREATE FUNCTION jobqueue.jq_cancel(queue_name text, id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_cancel_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_cancel(text, bigint) IS
	'cancel a pending or running job of the queue; a running worker''s later writes are fenced';

CREATE FUNCTION jobqueue.jq_retry(queue_name text, id bigint, run_at timestamptz DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_retry_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_retry(text, bigint, timestamptz) IS
	'replay a dead or cancelled job of the queue with the same id; its error history is kept';

CREATE FUNCTION jobqueue.jq_job(queue_name text, id bigint)
RETURNS TABLE(id bigint, queue_name text, status jobqueue.job_status,
	attempt int, max_attempts int, priority int,
	result jsonb, progress jsonb, last_error_code text, errors jsonb,
	created_at timestamptz, available_at timestamptz,
	started_at timestamptz, finished_at timestamptz,
	waiting_for bigint[],
	debounce_key text, start_by timestamptz, cost float8)
AS 'MODULE_PATHNAME', 'jq_job_in_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1;
COMMENT ON FUNCTION jobqueue.jq_job(text, bigint) IS
	'one job of the queue, as jq_job(id) shows it; no row for an unknown id or a job of another queue';

REVOKE ALL ON FUNCTION jobqueue.jq_complete(text, bigint, bigint, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_complete_many(text, bigint[], bigint[], jsonb[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_fail(text, bigint, bigint, text, text, boolean, interval, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_heartbeat(text, bigint, bigint, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_release(text, bigint, bigint, interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_progress(text, bigint, bigint, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_cancel(text, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_retry(text, bigint, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_job(text, bigint) FROM PUBLIC;

-- Whoever may call the id-only form may call the queue-first one.
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT o.new_sig, a.grantee::pg_catalog.regrole AS grantee
		FROM (VALUES
			('jobqueue.jq_complete(bigint, bigint, jsonb)',
			 'jobqueue.jq_complete(text, bigint, bigint, jsonb)'),
			('jobqueue.jq_complete_many(bigint[], bigint[], jsonb[])',
			 'jobqueue.jq_complete_many(text, bigint[], bigint[], jsonb[])'),
			('jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb, text)',
			 'jobqueue.jq_fail(text, bigint, bigint, text, text, boolean, interval, jsonb, text)'),
			('jobqueue.jq_heartbeat(bigint, bigint, interval)',
			 'jobqueue.jq_heartbeat(text, bigint, bigint, interval)'),
			('jobqueue.jq_release(bigint, bigint, interval)',
			 'jobqueue.jq_release(text, bigint, bigint, interval)'),
			('jobqueue.jq_progress(bigint, bigint, jsonb)',
			 'jobqueue.jq_progress(text, bigint, bigint, jsonb)'),
			('jobqueue.jq_cancel(bigint)', 'jobqueue.jq_cancel(text, bigint)'),
			('jobqueue.jq_retry(bigint, timestamptz)',
			 'jobqueue.jq_retry(text, bigint, timestamptz)'),
			('jobqueue.jq_job(bigint)', 'jobqueue.jq_job(text, bigint)')
		) AS o(sig, new_sig)
		JOIN pg_catalog.pg_proc p ON p.oid = o.sig::pg_catalog.regprocedure
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', r.new_sig, r.grantee);
	END LOOP;
END
$$;

------------------------------------------------------------------------------
-- Dependencies: a producer's open transaction never holds up a running job
------------------------------------------------------------------------------

/*
 * Each row of job_dependencies names the queues of both its jobs:
 * queue_name that of depends_on, job_queue that of job_id.  On Citus the
 * table is distributed by queue_name with jobs, so a row sits on the shard
 * of the job it waits for and the statement that finishes that job finds
 * its dependents there; their updates name job_queue and go to their own
 * shard.  Rows of earlier versions get the queues of their jobs (a row
 * naming a job that no longer exists, the other job's queue; a row naming
 * neither is of no use and goes).
 */
ALTER TABLE jobqueue.job_dependencies
	ADD COLUMN queue_name text,
	ADD COLUMN job_queue text;
UPDATE jobqueue.job_dependencies d
SET queue_name = (SELECT j.queue_name FROM jobqueue.jobs j WHERE j.id = d.depends_on),
	job_queue = (SELECT j.queue_name FROM jobqueue.jobs j WHERE j.id = d.job_id);
DELETE FROM jobqueue.job_dependencies d WHERE d.queue_name IS NULL AND d.job_queue IS NULL;
UPDATE jobqueue.job_dependencies d
SET queue_name = COALESCE(d.queue_name, d.job_queue),
	job_queue = COALESCE(d.job_queue, d.queue_name)
WHERE d.queue_name IS NULL OR d.job_queue IS NULL;
ALTER TABLE jobqueue.job_dependencies
	ALTER COLUMN queue_name SET NOT NULL,
	ALTER COLUMN job_queue SET NOT NULL;
COMMENT ON COLUMN jobqueue.job_dependencies.queue_name IS
	'the queue of depends_on (on Citus the row sits on that queue''s shard)';
COMMENT ON COLUMN jobqueue.job_dependencies.job_queue IS
	'the queue of job_id';

/*
 * On Citus a call delegated with force_delegation (jq_claim,
 * jq_complete_and_claim) may only write to its own queue: when the job it
 * finishes has dependents in other queues, their rows are marked deferred
 * and the worker of the job's node resolves them at its next pass
 * (src/outcome.c).  Only marked rows are in the index, so that pass costs
 * what is deferred, not what the table holds.  Never set on one server.
 */
ALTER TABLE jobqueue.job_dependencies
	ADD COLUMN deferred boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN jobqueue.job_dependencies.deferred IS
	'on Citus: depends_on has finished, and resolving job_id is left to the worker of its node';
CREATE INDEX job_dependencies_deferred_idx ON jobqueue.job_dependencies (queue_name, depends_on)
	WHERE deferred;

/*
 * An enqueue with depends_on locks its dependencies FOR KEY SHARE only (no
 * UPDATE of a job waits for that), and the dependencies are settled when
 * the producer's transaction commits: this trigger locks them in id order,
 * sets has_dependents and resolves those that finished while the
 * transaction was open (src/dependencies.c).  SECURITY DEFINER: it fires
 * at commit, outside the function that wrote the rows.
 */
CREATE FUNCTION jobqueue.jq_dependencies_settle()
RETURNS trigger
AS 'MODULE_PATHNAME', 'jq_dependencies_settle'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_dependencies_settle() IS
	'at the commit of a transaction that made jobs wait: lock their dependencies, mark them, and resolve those that finished meanwhile';
REVOKE ALL ON FUNCTION jobqueue.jq_dependencies_settle() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER job_dependencies_settle
	AFTER INSERT ON jobqueue.job_dependencies
	DEFERRABLE INITIALLY DEFERRED
	FOR EACH ROW EXECUTE FUNCTION jobqueue.jq_dependencies_settle();

------------------------------------------------------------------------------
-- Controls: fair share charged by use
------------------------------------------------------------------------------

/*
 * The fair-share usage of a group: seconds of finished attempts (run time
 * from claim to end, or the job's declared cost), decayed with the queue's
 * fair_share_half_life, as of usage_epoch (Unix epoch seconds).  Charged by
 * the group trigger in the transaction that ends the attempt, in queues
 * with fairness 'fair_share' only; read decayed to now, so the decay needs
 * no sweep over the rows.  The running jobs' use so far is read from the
 * jobs by the claim.
 */
ALTER TABLE jobqueue.groups
	ADD COLUMN usage double precision NOT NULL DEFAULT 0
		CONSTRAINT groups_usage_valid CHECK (usage >= 0),
	ADD COLUMN usage_epoch double precision NOT NULL DEFAULT 0;
COMMENT ON COLUMN jobqueue.groups.usage IS
	'fair share: seconds charged to the group, decayed to usage_epoch';
COMMENT ON COLUMN jobqueue.groups.usage_epoch IS
	'fair share: when usage was last charged, in seconds since the Unix epoch';

/*
 * The fair-share order of a group: log2(usage / weight) + usage_epoch /
 * half-life, -Infinity before its first charge.  Decay leaves it as it is
 * (it moves every group's usage by the same factor), so the claims of a
 * fair-share queue walk the groups in usage order through an index
 * instead of reading every ready group.  Set with usage by the group
 * trigger, and again by jq_set_group_limit (a new weight) and
 * jq_alter_queue (a new half-life).  In other queues it never changes, so
 * their updates of the row stay HOT.
 */
ALTER TABLE jobqueue.groups
	ADD COLUMN share_key double precision NOT NULL DEFAULT '-Infinity';
COMMENT ON COLUMN jobqueue.groups.share_key IS
	'fair share: log2(usage / weight) + usage_epoch / half-life, the order in which claims serve the groups';
CREATE INDEX groups_share_idx ON jobqueue.groups (queue_name, share_key, group_key);

/*
 * Per-group rate limits: a group's tokens as of rate_epoch (Unix epoch
 * seconds; 0: never debited, a full bucket).  Debited by the claim that
 * leases the group's jobs, on the row it holds locked; refilled on read.
 */
ALTER TABLE jobqueue.groups
	ADD COLUMN rate_tokens double precision NOT NULL DEFAULT 0,
	ADD COLUMN rate_epoch double precision NOT NULL DEFAULT 0;
COMMENT ON COLUMN jobqueue.groups.rate_tokens IS
	'per-group rate limit: the tokens left at rate_epoch';
COMMENT ON COLUMN jobqueue.groups.rate_epoch IS
	'per-group rate limit: when tokens were last taken, in seconds since the Unix epoch (0: never)';

-- jq_group_stats gets each group's usage and share: made again, with the
-- rights it had
ALTER FUNCTION jobqueue.jq_group_stats(text) RENAME TO jq_group_stats_1_3;
CREATE FUNCTION jobqueue.jq_group_stats(
	queue_name text,
	OUT group_key text,
	OUT ready bigint,
	OUT running bigint,
	OUT scheduled bigint,
	OUT dead bigint,
	OUT blocked boolean,
	OUT oldest_ready_age interval,
	OUT usage double precision,
	OUT share double precision)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_group_stats'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_group_stats(text) IS
	'per group of a queue with unfinished jobs: ready, running, scheduled and dead jobs, blocked, the oldest ready job''s wait; under fair share the usage charged and the share of it';
REVOKE ALL ON FUNCTION jobqueue.jq_group_stats(text) FROM PUBLIC;
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_group_stats_1_3(text)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s',
			'jobqueue.jq_group_stats(text)', r.grantee);
	END LOOP;
END
$$;
DROP FUNCTION jobqueue.jq_group_stats_1_3(text);

-- The sets of rights of 1.4: every function a producer, a worker, an admin
-- or a monitor may call (jq_grant_* and the upgrade's grants read this).
CREATE OR REPLACE FUNCTION jobqueue.jq_role_functions(kind text)
RETURNS SETOF regprocedure
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF kind IS NULL THEN
		RAISE EXCEPTION 'kind must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	RETURN QUERY
		SELECT r.p FROM pg_catalog.unnest(CASE kind
			WHEN 'producer' THEN ARRAY[
				'jobqueue.jq_enqueue(text, jsonb, integer, timestamp with time zone, integer, text, bigint[], text, text, text, text, interval, interval, timestamp with time zone, double precision)',
				'jobqueue.jq_enqueue_many(text, jsonb[], integer, timestamp with time zone, bigint[], text[], text, text, timestamp with time zone, double precision)',
				'jobqueue.jq_job(bigint)',
				'jobqueue.jq_job(text, bigint)',
				'jobqueue.jq_queue_node(text)']
			WHEN 'worker' THEN ARRAY[
				'jobqueue.jq_claim(text, integer, text, interval)',
				'jobqueue.jq_complete(bigint, bigint, jsonb)',
				'jobqueue.jq_complete(text, bigint, bigint, jsonb)',
				'jobqueue.jq_complete_many(bigint[], bigint[], jsonb[])',
				'jobqueue.jq_complete_many(text, bigint[], bigint[], jsonb[])',
				'jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])',
				'jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb, text)',
				'jobqueue.jq_fail(text, bigint, bigint, text, text, boolean, interval, jsonb, text)',
				'jobqueue.jq_heartbeat(bigint, bigint, interval)',
				'jobqueue.jq_heartbeat(text, bigint, bigint, interval)',
				'jobqueue.jq_release(bigint, bigint, interval)',
				'jobqueue.jq_release(text, bigint, bigint, interval)',
				'jobqueue.jq_progress(bigint, bigint, jsonb)',
				'jobqueue.jq_progress(text, bigint, bigint, jsonb)',
				'jobqueue.jq_job(bigint)',
				'jobqueue.jq_job(text, bigint)',
				'jobqueue.jq_queue_node(text)']
			WHEN 'admin' THEN ARRAY[
				'jobqueue.jq_create_queue(text, integer, interval, interval, interval, interval, interval, boolean, integer, boolean, text, interval, double precision, integer, double precision, integer, interval, integer, integer, interval)',
				'jobqueue.jq_alter_queue(text, integer, interval, interval, interval, interval, interval, boolean, boolean, integer, boolean, text, interval, double precision, integer, double precision, integer, interval, integer, integer, interval)',
				'jobqueue.jq_drop_queue(text, boolean)',
				'jobqueue.jq_pause_queue(text)',
				'jobqueue.jq_resume_queue(text)',
				'jobqueue.jq_cancel(bigint)',
				'jobqueue.jq_cancel(text, bigint)',
				'jobqueue.jq_retry(bigint, timestamp with time zone)',
				'jobqueue.jq_retry(text, bigint, timestamp with time zone)',
				'jobqueue.jq_retry_dead(text, text, integer)',
				'jobqueue.jq_purge(text, interval, integer)',
				'jobqueue.jq_reap(integer)',
				'jobqueue.jq_explain_claim(text, integer)',
				'jobqueue.jq_recount_groups(text)',
				'jobqueue.jq_finished_count(text, jobqueue.job_status)',
				'jobqueue.jq_queue_counts(text[], integer)',
				'jobqueue.jq_counters(boolean)',
				'jobqueue.jq_counters_reset(text)',
				'jobqueue.jq_latency(text)',
				'jobqueue.jq_latency_buckets(text)',
				'jobqueue.jq_latency_histograms(text)',
				'jobqueue.jq_latency_reset(text)',
				'jobqueue.jq_error_counts(text)',
				'jobqueue.jq_worker_status()',
				'jobqueue.jq_worker_tasks()',
				'jobqueue.jq_version()',
				'jobqueue.jq_job(bigint)',
				'jobqueue.jq_job(text, bigint)',
				'jobqueue.jq_queue_node(text)',
				'jobqueue.jq_jobs(text, jobqueue.job_status, integer, bigint, text, text, timestamp with time zone, bigint)',
				'jobqueue.jq_group_stats(text)',
				'jobqueue.jq_set_group_limit(text, text, integer, double precision, integer, double precision)',
				'jobqueue.jq_group_limits(text)',
				'jobqueue.jq_cron_next(text, timestamp with time zone, text, integer)',
				'jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean, text, text)',
				'jobqueue.jq_unschedule(text)',
				'jobqueue.jq_schedules()',
				'jobqueue.jq_run_schedules()',
				'jobqueue.jq_rate_limits()']
			WHEN 'monitor' THEN ARRAY[
				'jobqueue.jq_finished_count(text, jobqueue.job_status)',
				'jobqueue.jq_queue_counts(text[], integer)',
				'jobqueue.jq_counters(boolean)',
				'jobqueue.jq_latency(text)',
				'jobqueue.jq_latency_buckets(text)',
				'jobqueue.jq_latency_histograms(text)',
				'jobqueue.jq_error_counts(text)',
				'jobqueue.jq_worker_status()',
				'jobqueue.jq_worker_tasks()',
				'jobqueue.jq_version()',
				'jobqueue.jq_jobs(text, jobqueue.job_status, integer, bigint, text, text, timestamp with time zone, bigint)',
				'jobqueue.jq_group_stats(text)',
				'jobqueue.jq_group_limits(text)',
				'jobqueue.jq_cron_next(text, timestamp with time zone, text, integer)',
				'jobqueue.jq_schedules()',
				'jobqueue.jq_rate_limits()']
			END) AS f(name)
		-- functions of later versions or of other features may be missing
		CROSS JOIN LATERAL pg_catalog.to_regprocedure(f.name) AS r(p)
		WHERE r.p IS NOT NULL;
END
$$;
