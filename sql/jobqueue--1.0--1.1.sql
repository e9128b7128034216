/* jobqueue--1.0--1.1.sql -- upgrade from 1.0 (the core) to 1.1 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.1'" to load this file. \quit

-- 1.1 adds the background worker's status, queue statistics, event
-- counters and the role helpers.  A fresh CREATE EXTENSION runs the 1.0
-- script and then this one, so there is a single definition of each object.

------------------------------------------------------------------------------
-- Queue statistics
------------------------------------------------------------------------------

/*
 * Lets the planner estimate "queue X has N succeeded jobs" from one
 * multi-column MCV list instead of multiplying the two columns'
 * frequencies (queues differ a lot in their mix of states).
 */
CREATE STATISTICS jobqueue.jobs_queue_status_stats (mcv)
	ON queue_name, status FROM jobqueue.jobs;

/*
 * Number of jobs of a queue in one finished state (succeeded, cancelled).
 * Exact while the jobs table is smaller than jobqueue.exact_count_limit
 * (default 8 MB, some 50,000 jobs: a count then takes milliseconds; -1:
 * always exact); above that, the planner's estimate from the last ANALYZE
 * (see jobs_queue_status_stats), because an exact count would read every
 * retained job of the queue.  Planner estimates are never below 1.
 */
CREATE FUNCTION jobqueue.jq_finished_count(queue_name text, status jobqueue.job_status)
RETURNS bigint
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	n		bigint;
	plan	json;
	lim		bigint := pg_catalog.pg_size_bytes(COALESCE(
				pg_catalog.current_setting('jobqueue.exact_count_limit', true), '8MB'));
BEGIN
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
COMMENT ON FUNCTION jobqueue.jq_finished_count(text, jobqueue.job_status) IS
	'jobs of a queue in a finished state: exact while the table is under jobqueue.exact_count_limit, else the planner''s estimate';

/*
 * One row per queue.  ready, running, expiring_soon and oldest_ready_age are
 * exact and read the partial indexes only (jobs_claim_idx for pending,
 * jobs_lease_idx for running, jobs_dead_idx for dead), so their cost grows
 * with the backlog, not with the table.  Pending and running jobs are read
 * in one grouped pass each, whatever the number of queues.  dead and oldest_dead_age are exact
 * (jobs_dead_idx); succeeded and cancelled come from jq_finished_count.
 * expiring_soon: running jobs with less than 10 % of the queue's
 * lease_duration, or less than 5 seconds, left -- including leases that
 * have already expired but were not reaped yet.
 */
CREATE VIEW jobqueue.queue_stats AS
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
	   d.oldest_dead_age
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
	 GROUP BY j.queue_name) r ON r.queue_name = q.queue_name;
COMMENT ON VIEW jobqueue.queue_stats IS
	'per queue: backlog, running and expiring leases, finished counts, age of the oldest ready and dead job';

------------------------------------------------------------------------------
-- Event counters (shared memory; need shared_preload_libraries = jobqueue)
------------------------------------------------------------------------------

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

CREATE FUNCTION jobqueue.jq_counters_reset(queue_name text DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_counters_reset'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_counters_reset(text) IS
	'forget the event counters of one queue, or of every queue of this database';

------------------------------------------------------------------------------
-- Role helpers
------------------------------------------------------------------------------

/*
 * The three sets of rights.  Each helper grants USAGE on the schema and
 * EXECUTE on its set (SELECT on the statistics view for admins); none grants
 * anything on the tables, so payloads stay unreadable except through the
 * functions.  The helpers run with the caller's rights: only the extension's
 * owner (or a superuser) can hand out rights on its objects.
 */
CREATE FUNCTION jobqueue.jq_role_functions(kind text)
RETURNS SETOF regprocedure
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
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
			'jobqueue.jq_worker_status()']
		WHEN 'monitor' THEN ARRAY[
			'jobqueue.jq_finished_count(text, jobqueue.job_status)',
			'jobqueue.jq_counters(boolean)',
			'jobqueue.jq_worker_status()']
		END) AS f(name)
	-- functions of later versions or of other features may be missing
	CROSS JOIN LATERAL pg_catalog.to_regprocedure(f.name) AS r(p)
	WHERE r.p IS NOT NULL
$$;
COMMENT ON FUNCTION jobqueue.jq_role_functions(text) IS
	'the functions that jq_grant_producer, jq_grant_worker and jq_grant_admin hand out';

CREATE FUNCTION jobqueue.jq_grant_role(kind text, role regrole, grant_it boolean)
RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	f	regprocedure;
BEGIN
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
	IF kind IS NULL OR kind NOT IN ('producer', 'worker', 'admin', 'monitor') THEN
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
COMMENT ON FUNCTION jobqueue.jq_grant_role(text, regrole, boolean) IS
	'common part of the jq_grant_* and jq_revoke_* helpers';

CREATE FUNCTION jobqueue.jq_grant_producer(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('producer', role, true) $$;
COMMENT ON FUNCTION jobqueue.jq_grant_producer(regrole) IS
	'let a role enqueue jobs (jq_enqueue, jq_enqueue_many), nothing else';

CREATE FUNCTION jobqueue.jq_grant_worker(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('worker', role, true) $$;
COMMENT ON FUNCTION jobqueue.jq_grant_worker(regrole) IS
	'let a role claim and finish jobs (jq_claim, jq_complete[_many], jq_fail, jq_heartbeat, jq_release)';

CREATE FUNCTION jobqueue.jq_grant_admin(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('admin', role, true) $$;
COMMENT ON FUNCTION jobqueue.jq_grant_admin(regrole) IS
	'let a role manage queues, cancel, replay, reap and purge jobs, and read statistics and counters';

CREATE FUNCTION jobqueue.jq_grant_monitor(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('monitor', role, true) $$;
COMMENT ON FUNCTION jobqueue.jq_grant_monitor(regrole) IS
	'let a role (a metrics exporter) read queue_stats, jq_counters and jq_worker_status, nothing else';

CREATE FUNCTION jobqueue.jq_revoke_producer(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('producer', role, false) $$;
COMMENT ON FUNCTION jobqueue.jq_revoke_producer(regrole) IS 'take back what jq_grant_producer gave';

CREATE FUNCTION jobqueue.jq_revoke_worker(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('worker', role, false) $$;
COMMENT ON FUNCTION jobqueue.jq_revoke_worker(regrole) IS 'take back what jq_grant_worker gave';

CREATE FUNCTION jobqueue.jq_revoke_admin(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('admin', role, false) $$;
COMMENT ON FUNCTION jobqueue.jq_revoke_admin(regrole) IS 'take back what jq_grant_admin gave';

CREATE FUNCTION jobqueue.jq_revoke_monitor(role regrole) RETURNS void
LANGUAGE sql SET search_path = pg_catalog, pg_temp
AS $$ SELECT jobqueue.jq_grant_role('monitor', role, false) $$;
COMMENT ON FUNCTION jobqueue.jq_revoke_monitor(regrole) IS 'take back what jq_grant_monitor gave';

-- Nothing new for PUBLIC either (new functions are executable by PUBLIC
-- by default; views are not readable).
REVOKE ALL ON FUNCTION jobqueue.jq_finished_count(text, jobqueue.job_status) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_counters(boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_counters_reset(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_role_functions(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_grant_role(text, regrole, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_grant_producer(regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_grant_worker(regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_grant_admin(regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_revoke_producer(regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_revoke_worker(regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_revoke_admin(regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_grant_monitor(regrole) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_revoke_monitor(regrole) FROM PUBLIC;
REVOKE ALL ON jobqueue.queue_stats FROM PUBLIC;

------------------------------------------------------------------------------
-- Background worker (needs shared_preload_libraries = jobqueue)
------------------------------------------------------------------------------

/*
 * The worker of the current database, from shared memory.  Without the
 * library preloaded it says so (configured = false, state 'not preloaded')
 * instead of raising an error: jq_reap() from a scheduler does the work then.
 */
CREATE FUNCTION jobqueue.jq_worker_status(
	OUT configured boolean,
	OUT attached boolean,
	OUT state text,
	OUT pid integer,
	OUT started_at timestamptz,
	OUT last_tick timestamptz,
	OUT reaped bigint,
	OUT purged bigint,
	OUT notified bigint,
	OUT last_error text,
	OUT last_error_at timestamptz)
RETURNS record
AS 'MODULE_PATHNAME', 'jq_worker_status'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION jobqueue.jq_worker_status() IS
	'the background worker of this database: configured, attached, pid, last tick, jobs reaped and purged and notifications sent since it started, last error';

REVOKE ALL ON FUNCTION jobqueue.jq_worker_status() FROM PUBLIC;
