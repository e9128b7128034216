/* jobqueue--1.1--1.2.sql -- upgrade from 1.1 to 1.2 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.2'" to load this file. \quit

-- 1.2 closes the gaps a hostile review found.  A fresh CREATE EXTENSION runs
-- 1.0, 1.0--1.1 and this script, so there is a single definition of each
-- object.

------------------------------------------------------------------------------
-- Rows that only a hand-written UPDATE could store
------------------------------------------------------------------------------

/*
 * The SQL functions refuse a policy interval above 100 years (the time
 * arithmetic of claim, fail and reap would overflow a timestamp otherwise)
 * and never let lease_token reach the bigint maximum (a claim adds 1).  The
 * same limits as constraints mean no row can exist on which claim or reap
 * fails forever.
 */
ALTER TABLE jobqueue.queues
	ADD CONSTRAINT queues_intervals_bounded CHECK (
		lease_duration <= interval '100 years' AND
		max_runtime <= interval '100 years' AND
		backoff_base <= interval '100 years' AND
		backoff_max <= interval '100 years' AND
		retention <= interval '100 years');

ALTER TABLE jobqueue.jobs
	ADD CONSTRAINT jobs_lease_token_in_range CHECK (
		lease_token >= 0 AND lease_token < 9223372036854775807);

------------------------------------------------------------------------------
-- Background worker tasks
------------------------------------------------------------------------------

/*
 * One row per task of the background worker in this database (reap,
 * announce, purge): how often it runs, when it last completed, how many
 * runs and items (jobs reaped, queues announced, jobs purged) since the
 * server started, and its last error.  No rows without
 * shared_preload_libraries, or before the launcher registered the database.
 */
CREATE FUNCTION jobqueue.jq_worker_tasks(
	OUT task text,
	OUT run_interval interval,
	OUT last_run timestamptz,
	OUT runs bigint,
	OUT items bigint,
	OUT consecutive_errors integer,
	OUT last_error text,
	OUT last_error_at timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_worker_tasks_status'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_worker_tasks() IS
	'the tasks of the background worker in this database: interval, last run, runs, items, consecutive errors, last error';

REVOKE ALL ON FUNCTION jobqueue.jq_worker_tasks() FROM PUBLIC;
-- Event counters: a bounded table with an overflow row
------------------------------------------------------------------------------

/*
 * The counters' shared hash table holds jobqueue.max_counter_queues
 * (database, queue) entries and never grows; the events of further queues
 * are added to one overflow row, shown as dbid NULL, queue_name '*'.
 */
COMMENT ON FUNCTION jobqueue.jq_counters(boolean) IS
	'cumulative event counters per queue of this database (all databases: pg_read_all_stats); times in milliseconds; queue_name ''*'' (dbid NULL) sums the queues of any database beyond jobqueue.max_counter_queues';

------------------------------------------------------------------------------
-- NULL arguments of the SQL-language functions: 22004, as everywhere else
------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION jobqueue.jq_finished_count(queue_name text, status jobqueue.job_status)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n		bigint;
	plan	json;
	lim		bigint := pg_catalog.pg_size_bytes(COALESCE(
				pg_catalog.current_setting('jobqueue.exact_count_limit', true), '8MB'));
BEGIN
	IF queue_name IS NULL THEN
		RAISE EXCEPTION 'queue name must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF status IS NULL THEN
		RAISE EXCEPTION 'status must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF lim < 0 OR pg_catalog.pg_relation_size('jobqueue.jobs'::pg_catalog.regclass) < lim THEN
		SELECT pg_catalog.count(*) INTO n FROM jobqueue.jobs j
		WHERE j.queue_name = jq_finished_count.queue_name
		  AND j.status = jq_finished_count.status;
		RETURN n;
	END IF;
	EXECUTE 'EXPLAIN (FORMAT JSON) SELECT FROM jobqueue.jobs j '
			'WHERE j.queue_name = $1 AND j.status = $2'
		INTO plan USING queue_name, status;
	RETURN pg_catalog.round((plan -> 0 -> 'Plan' ->> 'Plan Rows')::pg_catalog.float8)::bigint;
END
$$;

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
				'jobqueue.jq_enqueue(text, jsonb, integer, timestamp with time zone, integer, text)',
				'jobqueue.jq_enqueue_many(text, jsonb[], integer, timestamp with time zone)']
			WHEN 'worker' THEN ARRAY[
				'jobqueue.jq_claim(text, integer, text, interval)',
				'jobqueue.jq_complete(bigint, bigint)',
				'jobqueue.jq_complete_many(bigint[], bigint[])',
				'jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval)',
				'jobqueue.jq_heartbeat(bigint, bigint, interval)',
				'jobqueue.jq_release(bigint, bigint, interval)']
			WHEN 'admin' THEN ARRAY[
				'jobqueue.jq_create_queue(text, integer, interval, interval, interval, interval, interval)',
				'jobqueue.jq_alter_queue(text, integer, interval, interval, interval, interval, interval, boolean)',
				'jobqueue.jq_drop_queue(text, boolean)',
				'jobqueue.jq_pause_queue(text)',
				'jobqueue.jq_resume_queue(text)',
				'jobqueue.jq_cancel(bigint)',
				'jobqueue.jq_retry(bigint, timestamp with time zone)',
				'jobqueue.jq_retry_dead(text, text, integer)',
				'jobqueue.jq_purge(text, interval, integer)',
				'jobqueue.jq_reap(integer)',
				'jobqueue.jq_explain_claim(text, integer)',
				'jobqueue.jq_finished_count(text, jobqueue.job_status)',
				'jobqueue.jq_counters(boolean)',
				'jobqueue.jq_counters_reset(text)',
				'jobqueue.jq_worker_status()',
				'jobqueue.jq_worker_tasks()']
			WHEN 'monitor' THEN ARRAY[
				'jobqueue.jq_finished_count(text, jobqueue.job_status)',
				'jobqueue.jq_counters(boolean)',
				'jobqueue.jq_worker_status()',
				'jobqueue.jq_worker_tasks()']
			END) AS f(name)
		-- functions of later versions or of other features may be missing
		CROSS JOIN LATERAL pg_catalog.to_regprocedure(f.name) AS r(p)
		WHERE r.p IS NOT NULL;
END
$$;

CREATE OR REPLACE FUNCTION jobqueue.jq_grant_role(kind text, role regrole, grant_it boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	f	regprocedure;
BEGIN
	IF kind IS NULL THEN
		RAISE EXCEPTION 'kind must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	-- '-'::regrole is 0, and a dropped role's OID prints as a number:
	-- neither may reach the GRANT text
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.oid = role) THEN
		RAISE EXCEPTION 'role with OID % does not exist', role::pg_catalog.oid
			USING ERRCODE = 'undefined_object';
	END IF;
	IF grant_it IS NULL THEN
		RAISE EXCEPTION 'grant_it must not be null' USING ERRCODE = 'null_value_not_allowed';
	END IF;
	IF kind NOT IN ('producer', 'worker', 'admin', 'monitor') THEN
		RAISE EXCEPTION 'unknown set of rights "%"', kind
			USING ERRCODE = 'invalid_parameter_value',
				  HINT = 'The sets are producer, worker, admin and monitor.';
	END IF;
	IF grant_it THEN
		EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA jobqueue TO %s', role);
	END IF;
	FOR f IN SELECT * FROM jobqueue.jq_role_functions(kind) LOOP
		EXECUTE pg_catalog.format(CASE WHEN grant_it THEN 'GRANT EXECUTE ON FUNCTION %s TO %s'
								  ELSE 'REVOKE EXECUTE ON FUNCTION %s FROM %s' END, f, role);
	END LOOP;
	IF kind IN ('admin', 'monitor') THEN
		EXECUTE pg_catalog.format(CASE WHEN grant_it THEN 'GRANT SELECT ON jobqueue.queue_stats TO %s'
								  ELSE 'REVOKE SELECT ON jobqueue.queue_stats FROM %s' END, role);
	END IF;
	-- the schema goes when the role has no right left on any of our objects
	IF NOT grant_it AND NOT EXISTS (
		SELECT FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
		WHERE p.pronamespace = 'jobqueue'::pg_catalog.regnamespace AND a.grantee = role
		UNION ALL
		SELECT FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) a
		WHERE c.relnamespace = 'jobqueue'::pg_catalog.regnamespace AND a.grantee = role)
	THEN
		EXECUTE pg_catalog.format('REVOKE USAGE ON SCHEMA jobqueue FROM %s', role);
	END IF;
END
$$;

------------------------------------------------------------------------------
-- Schedules and rate limits
------------------------------------------------------------------------------

/*
 * Cron expressions: the next fire times of an expression in a time zone,
 * strictly after a given instant.  Pure (reads no table), so IMMUTABLE is
 * not claimed only because time zone data may change with the server.
 */
CREATE FUNCTION jobqueue.jq_cron_next(
	cron text,
	after timestamptz,
	timezone text DEFAULT 'UTC',
	count integer DEFAULT 1)
RETURNS SETOF timestamptz
AS 'MODULE_PATHNAME', 'jq_cron_next'
LANGUAGE C STABLE PARALLEL SAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_cron_next(text, timestamptz, text, integer) IS
	'the next count fire times of a cron expression in a time zone, strictly after a given instant';
REVOKE ALL ON FUNCTION jobqueue.jq_cron_next(text, timestamptz, text, integer) FROM PUBLIC;

/*
 * Recurring schedules.  The background worker (or jq_run_schedules(), for
 * installations without it) enqueues one job per due slot into the
 * schedule's queue.  next_run_at is the next slot not yet handled (NULL:
 * the expression fires no more, or the schedule is disabled); the job of a
 * slot and the advance of next_run_at commit together, and the job's
 * idempotency key names the schedule and the slot, so no slot is enqueued
 * twice.  last_run_at is the slot of the last job enqueued, last_job_id
 * that job.
 */
CREATE TABLE jobqueue.schedules (
	schedule_name	text NOT NULL PRIMARY KEY
		CONSTRAINT schedules_name_valid CHECK (schedule_name ~ '^[A-Za-z0-9_.:-]{1,128}$'),
	queue_name		text NOT NULL
		CONSTRAINT schedules_queue_name_valid CHECK (queue_name ~ '^[A-Za-z0-9_.:-]{1,128}$'),
	cron			text NOT NULL
		CONSTRAINT schedules_cron_length CHECK (pg_catalog.octet_length(cron) BETWEEN 1 AND 1000),
	timezone		text NOT NULL DEFAULT 'UTC'
		CONSTRAINT schedules_timezone_length CHECK (pg_catalog.octet_length(timezone) BETWEEN 1 AND 255),
	payload			jsonb NOT NULL DEFAULT '{}'
		CONSTRAINT schedules_payload_object CHECK (pg_catalog.jsonb_typeof(payload) = 'object'),
	priority		integer NOT NULL DEFAULT 0,
	enabled			boolean NOT NULL DEFAULT true,
	catch_up		text NOT NULL DEFAULT 'latest'
		CONSTRAINT schedules_catch_up_valid CHECK (catch_up IN ('latest', 'all', 'none')),
	next_run_at		timestamptz,
	last_run_at		timestamptz,
	last_job_id		bigint,
	created_at		timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE jobqueue.schedules IS
	'recurring schedules: one job per due slot of the cron expression, enqueued by the background worker or jq_run_schedules()';

-- the scheduler's probe for the earliest due slot
CREATE INDEX schedules_due_idx ON jobqueue.schedules (next_run_at) WHERE enabled;

SELECT pg_catalog.pg_extension_config_dump('jobqueue.schedules', '');
REVOKE ALL ON jobqueue.schedules FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_schedule(
	schedule_name text,
	queue_name text,
	cron text,
	payload jsonb DEFAULT '{}',
	timezone text DEFAULT 'UTC',
	priority integer DEFAULT 0,
	catch_up text DEFAULT 'latest',
	enabled boolean DEFAULT true)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'jq_schedule'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean) IS
	'create or replace a recurring schedule; returns its next run time (NULL when disabled)';
REVOKE ALL ON FUNCTION jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean) FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_unschedule(schedule_name text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_unschedule'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_unschedule(text) IS
	'delete a schedule; false when there was none of that name';
REVOKE ALL ON FUNCTION jobqueue.jq_unschedule(text) FROM PUBLIC;

CREATE FUNCTION jobqueue.jq_run_schedules()
RETURNS integer
AS 'MODULE_PATHNAME', 'jq_run_schedules'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_run_schedules() IS
	'enqueue the jobs of every due schedule slot now (without the background worker); returns how many';
REVOKE ALL ON FUNCTION jobqueue.jq_run_schedules() FROM PUBLIC;



/*
 * Rate limits: jobs started per second for a queue across the cluster
 * (NULL: none), and the size of its token bucket (NULL: the rate rounded
 * up, at least 1).  Kept in shared memory by jq_claim(); see
 * docs/rate-limits.md.
 */
ALTER TABLE jobqueue.queues
	ADD COLUMN rate_limit float8 DEFAULT NULL
		CONSTRAINT queues_rate_limit_valid CHECK (rate_limit > 0 AND rate_limit <= 1000000),
	ADD COLUMN rate_burst integer DEFAULT NULL
		CONSTRAINT queues_rate_burst_valid CHECK (rate_burst >= 1 AND rate_burst <= 1000000);

/*
 * jq_create_queue and jq_alter_queue take the two as new last arguments:
 * the new signatures are created, the rights granted on the old ones are
 * granted on them, and the old ones are dropped.
 */
CREATE FUNCTION jobqueue.jq_create_queue(
	queue_name text,
	max_attempts int DEFAULT 8,
	lease_duration interval DEFAULT '60 seconds',
	max_runtime interval DEFAULT '1 hour',
	backoff_base interval DEFAULT '10 seconds',
	backoff_max interval DEFAULT '1 hour',
	retention interval DEFAULT '7 days',
	rate_limit float8 DEFAULT NULL,
	rate_burst int DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_create_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, float8, int) IS
	'create a queue with its policy; does nothing (with a NOTICE) when it exists';

CREATE FUNCTION jobqueue.jq_alter_queue(
	queue_name text,
	max_attempts int DEFAULT NULL,
	lease_duration interval DEFAULT NULL,
	max_runtime interval DEFAULT NULL,
	backoff_base interval DEFAULT NULL,
	backoff_max interval DEFAULT NULL,
	retention interval DEFAULT NULL,
	notify boolean DEFAULT NULL,
	rate_limit float8 DEFAULT NULL,
	rate_burst int DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_alter_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, float8, int) IS
	'change a queue''s policy; NULL arguments leave a setting unchanged (rate_limit => 0 removes the limit and its burst, rate_burst => 0 restores the default burst)';

REVOKE ALL ON FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, float8, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, float8, int) FROM PUBLIC;

DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT CASE p.proname
				 WHEN 'jq_create_queue' THEN 'jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, float8, int)'
				 ELSE 'jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, float8, int)'
			   END AS fn,
			   a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid IN ('jobqueue.jq_create_queue(text, integer, interval, interval, interval, interval, interval)'::pg_catalog.regprocedure,
						'jobqueue.jq_alter_queue(text, integer, interval, interval, interval, interval, interval, boolean)'::pg_catalog.regprocedure)
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', r.fn, r.grantee);
	END LOOP;
END
$$;

DROP FUNCTION jobqueue.jq_create_queue(text, integer, interval, interval, interval, interval, interval);
DROP FUNCTION jobqueue.jq_alter_queue(text, integer, interval, interval, interval, interval, interval, boolean);

/*
 * The rate limit buckets of this database's queues: the policy in use, the
 * tokens now, how many claims the limit cut short and how many jobs were
 * claimed, since the bucket was created (at the first claim after start).
 */
CREATE FUNCTION jobqueue.jq_rate_limits(
	OUT queue_name text,
	OUT rate_limit float8,
	OUT rate_burst integer,
	OUT tokens float8,
	OUT claims_limited bigint,
	OUT jobs_claimed bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_rate_limits'
LANGUAGE C VOLATILE PARALLEL RESTRICTED SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_rate_limits() IS
	'the rate limit buckets of this database''s queues: tokens, claims cut short by the limit, jobs claimed';
REVOKE ALL ON FUNCTION jobqueue.jq_rate_limits() FROM PUBLIC;

-- The functions above join the admin set (and jq_cron_next and
-- jq_rate_limits the monitor set; jq_create_queue and jq_alter_queue have
-- new signatures); the definition of 1.2's earlier section, extended.
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
				'jobqueue.jq_enqueue(text, jsonb, integer, timestamp with time zone, integer, text)',
				'jobqueue.jq_enqueue_many(text, jsonb[], integer, timestamp with time zone)']
			WHEN 'worker' THEN ARRAY[
				'jobqueue.jq_claim(text, integer, text, interval)',
				'jobqueue.jq_complete(bigint, bigint)',
				'jobqueue.jq_complete_many(bigint[], bigint[])',
				'jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval)',
				'jobqueue.jq_heartbeat(bigint, bigint, interval)',
				'jobqueue.jq_release(bigint, bigint, interval)']
			WHEN 'admin' THEN ARRAY[
				'jobqueue.jq_create_queue(text, integer, interval, interval, interval, interval, interval, double precision, integer)',
				'jobqueue.jq_alter_queue(text, integer, interval, interval, interval, interval, interval, boolean, double precision, integer)',
				'jobqueue.jq_drop_queue(text, boolean)',
				'jobqueue.jq_pause_queue(text)',
				'jobqueue.jq_resume_queue(text)',
				'jobqueue.jq_cancel(bigint)',
				'jobqueue.jq_retry(bigint, timestamp with time zone)',
				'jobqueue.jq_retry_dead(text, text, integer)',
				'jobqueue.jq_purge(text, interval, integer)',
				'jobqueue.jq_reap(integer)',
				'jobqueue.jq_explain_claim(text, integer)',
				'jobqueue.jq_finished_count(text, jobqueue.job_status)',
				'jobqueue.jq_counters(boolean)',
				'jobqueue.jq_counters_reset(text)',
				'jobqueue.jq_worker_status()',
				'jobqueue.jq_worker_tasks()',
				'jobqueue.jq_cron_next(text, timestamp with time zone, text, integer)',
				'jobqueue.jq_schedule(text, text, text, jsonb, text, integer, text, boolean)',
				'jobqueue.jq_unschedule(text)',
				'jobqueue.jq_run_schedules()',
				'jobqueue.jq_rate_limits()']
			WHEN 'monitor' THEN ARRAY[
				'jobqueue.jq_finished_count(text, jobqueue.job_status)',
				'jobqueue.jq_counters(boolean)',
				'jobqueue.jq_worker_status()',
				'jobqueue.jq_worker_tasks()',
				'jobqueue.jq_cron_next(text, timestamp with time zone, text, integer)',
				'jobqueue.jq_rate_limits()']
			END) AS f(name)
		-- functions of later versions or of other features may be missing
		CROSS JOIN LATERAL pg_catalog.to_regprocedure(f.name) AS r(p)
		WHERE r.p IS NOT NULL;
END
$$;

