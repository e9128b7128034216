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
-- (jq_role_functions gets its check in its last definition, at the end)
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
-- Results, progress and dependencies
------------------------------------------------------------------------------

/*
 * A job that waits for other jobs has status 'waiting': it is outside the
 * claim index (WHERE status = 'pending') until its last dependency
 * succeeds.  An enum value added here cannot be used before this
 * transaction commits (CREATE EXTENSION runs the whole chain in one), so
 * nothing below names it: the index and the view select waiting jobs as
 * the ones before 'pending' in the enum's order.
 */
ALTER TYPE jobqueue.job_status ADD VALUE 'waiting' BEFORE 'pending';

/*
 * result: what jq_complete stored.  progress: what the last jq_progress
 * stored.  dependencies_left: the number of rows of job_dependencies for
 * this job (dependencies that had not succeeded when last looked at); it
 * is updated under the job's row lock, so concurrent completions of two
 * dependencies cannot both miss that the other one finished.
 * has_dependents: some job was enqueued to wait for this one.  The
 * enqueue sets it with an UPDATE, so a completion that waited for that
 * row lock reads it from the row it then changes (a subquery would still
 * use the completion's older snapshot and miss the new dependent).
 */
ALTER TABLE jobqueue.jobs
	ADD COLUMN result jsonb,
	ADD COLUMN progress jsonb,
	ADD COLUMN dependencies_left integer NOT NULL DEFAULT 0
		CONSTRAINT jobs_dependencies_left_nonnegative CHECK (dependencies_left >= 0),
	ADD COLUMN has_dependents boolean NOT NULL DEFAULT false;

ALTER TABLE jobqueue.queues
	ADD COLUMN notify_finished boolean NOT NULL DEFAULT false;

/*
 * One row per dependency of a job that had not succeeded when last looked
 * at: the row goes when the dependency succeeds.  A dependent cancelled
 * because a dependency failed keeps its rows, so that jq_retry can look at
 * them again, and so that purging keeps the jobs they name.  No foreign
 * keys: their triggers would run for every job deleted by purging; the
 * functions keep the rows consistent instead (purging deletes a job's
 * rows with the job).
 */
CREATE TABLE jobqueue.job_dependencies
(
	job_id		bigint		NOT NULL,
	depends_on	bigint		NOT NULL,
	PRIMARY KEY (job_id, depends_on)
)
WITH (autovacuum_vacuum_scale_factor = 0.01,
	  autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE jobqueue.job_dependencies IS
	'dependencies of jobs that have not succeeded yet: job_id waits for depends_on';
-- Serves the release of dependents and the purge check: who waits for a job.
CREATE INDEX job_dependencies_depends_on_idx ON jobqueue.job_dependencies (depends_on);
SELECT pg_catalog.pg_extension_config_dump('jobqueue.job_dependencies', '');

-- Waiting jobs by queue, for queue_stats ('waiting' sorts before 'pending').
CREATE INDEX jobs_waiting_idx ON jobqueue.jobs (queue_name)
	WHERE status < 'pending';

/*
 * New arguments, last and with defaults, so that positional calls keep
 * working: the new signatures are created beside the old ones, the old
 * ones' EXECUTE grants are copied to them, then the old ones are dropped.
 * The C entry points read a new argument only when PG_NARGS() has it, so
 * an old definition still binds to the new library.
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
	rate_burst int DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_create_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int) IS
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
	notify_finished boolean DEFAULT NULL,
	group_concurrency int DEFAULT NULL,
	group_ordered boolean DEFAULT NULL,
	fairness text DEFAULT NULL,
	priority_aging interval DEFAULT NULL,
	rate_limit float8 DEFAULT NULL,
	rate_burst int DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_alter_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int) IS
	'change a queue''s policy; NULL arguments leave a setting unchanged (group_concurrency 0 and priority_aging ''0'' remove the limit and the aging; rate_limit 0 removes the limit and its burst, rate_burst 0 restores the default burst)';

CREATE FUNCTION jobqueue.jq_enqueue(
	queue_name text,
	payload jsonb,
	priority int DEFAULT 0,
	run_at timestamptz DEFAULT NULL,
	max_attempts int DEFAULT NULL,
	idempotency_key text DEFAULT NULL,
	depends_on bigint[] DEFAULT NULL,
	group_key text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jq_enqueue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text) IS
	'add a job and return its id; with an idempotency key the queue already holds, return that job''s id; with depends_on, the job waits until those jobs have succeeded';

CREATE FUNCTION jobqueue.jq_enqueue_many(
	queue_name text,
	payloads jsonb[],
	priority int DEFAULT 0,
	run_at timestamptz DEFAULT NULL,
	depends_on bigint[] DEFAULT NULL,
	group_keys text[] DEFAULT NULL)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'jq_enqueue_many'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[]) IS
	'add one job per payload in one statement; returns the ids in payload order; with depends_on, every job waits for those jobs';

CREATE FUNCTION jobqueue.jq_complete(id bigint, token bigint, result jsonb DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_complete'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_complete(bigint, bigint, jsonb) IS
	'mark a job succeeded, storing its result; false (and no change) when the token is stale or the lease has expired';

CREATE FUNCTION jobqueue.jq_complete_many(ids bigint[], tokens bigint[], results jsonb[] DEFAULT NULL)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'jq_complete_many'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 100;
COMMENT ON FUNCTION jobqueue.jq_complete_many(bigint[], bigint[], jsonb[]) IS
	'complete many jobs in one statement, each with its result; returns the ids that were completed';

CREATE FUNCTION jobqueue.jq_fail(
	id bigint,
	token bigint,
	error_code text,
	error_message text DEFAULT NULL,
	retryable boolean DEFAULT true,
	retry_in interval DEFAULT NULL,
	error_detail jsonb DEFAULT NULL)
RETURNS jobqueue.job_status
AS 'MODULE_PATHNAME', 'jq_fail'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb) IS
	'record a failed attempt (error_detail is kept in the history entry); returns pending (retry scheduled), dead, or NULL when fenced';

DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT o.sig AS old_sig, o.new_sig, a.grantee::pg_catalog.regrole AS grantee
		FROM (VALUES
			('jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval)',
			 'jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int)'),
			('jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean)',
			 'jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int)'),
			('jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text)',
			 'jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text)'),
			('jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz)',
			 'jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[])'),
			('jobqueue.jq_complete(bigint, bigint)', 'jobqueue.jq_complete(bigint, bigint, jsonb)'),
			('jobqueue.jq_complete_many(bigint[], bigint[])',
			 'jobqueue.jq_complete_many(bigint[], bigint[], jsonb[])'),
			('jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval)',
			 'jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb)')
		) AS o(sig, new_sig)
		JOIN pg_catalog.pg_proc p ON p.oid = o.sig::pg_catalog.regprocedure
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s', r.new_sig, r.grantee);
	END LOOP;
END
$$;

DROP FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval);
DROP FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean);
DROP FUNCTION jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text);
DROP FUNCTION jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz);
DROP FUNCTION jobqueue.jq_complete(bigint, bigint);
DROP FUNCTION jobqueue.jq_complete_many(bigint[], bigint[]);
DROP FUNCTION jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval);

CREATE FUNCTION jobqueue.jq_progress(id bigint, token bigint, progress jsonb)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_progress'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_progress(bigint, bigint, jsonb) IS
	'replace a held job''s progress (the lease is not extended); false (and no change) when the token is stale or the lease has expired';

/*
 * One job, as its producer or an operator sees it; no row for an unknown
 * id.  The column group_key (of fair claiming) goes after priority when
 * that feature adds it to jobs; the statement JQ_PLAN_JOB in plans.c then
 * reads it.
 */
CREATE FUNCTION jobqueue.jq_job(id bigint)
RETURNS TABLE(id bigint, queue_name text, status jobqueue.job_status,
	attempt int, max_attempts int, priority int,
	result jsonb, progress jsonb, last_error_code text, errors jsonb,
	created_at timestamptz, available_at timestamptz,
	started_at timestamptz, finished_at timestamptz,
	waiting_for bigint[])
AS 'MODULE_PATHNAME', 'jq_job'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 1;
COMMENT ON FUNCTION jobqueue.jq_job(bigint) IS
	'one job: state, attempts, result, progress, errors, times, and the dependencies it waits for; no row for an unknown id';

REVOKE ALL ON FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval, boolean, int, boolean, text, interval, float8, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean, boolean, int, boolean, text, interval, float8, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz, bigint[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_complete(bigint, bigint, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_complete_many(bigint[], bigint[], jsonb[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_progress(bigint, bigint, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION jobqueue.jq_job(bigint) FROM PUBLIC;
REVOKE ALL ON jobqueue.job_dependencies FROM PUBLIC;

------------------------------------------------------------------------------
-- Ordering and fairness: groups, per-group limits, strict order per group,
-- round-robin claims and priority aging
------------------------------------------------------------------------------

/*
 * A job may belong to a group (a tenant, an account, an entity whose jobs
 * must not overlap).  Keys are 1 to 256 bytes.  In a queue with a group
 * policy (group_concurrency, group_ordered or round_robin), a job enqueued
 * without a group is stored with the key '' (the group of the jobs without
 * a group), so that every job of such a queue is found through the group
 * indexes; the functions never accept '' as a key.
 */
ALTER TABLE jobqueue.jobs ADD COLUMN group_key text
	CONSTRAINT jobs_group_key_length CHECK (pg_catalog.octet_length(group_key) <= 256);

/*
 * The queue's ordering policy.  group_ordered runs one job of a group at a
 * time, so it admits no other concurrency than 1.
 */
ALTER TABLE jobqueue.queues
	ADD COLUMN group_concurrency int
		CONSTRAINT queues_group_concurrency_positive CHECK (group_concurrency >= 1),
	ADD COLUMN group_ordered boolean NOT NULL DEFAULT false,
	ADD COLUMN fairness text NOT NULL DEFAULT 'priority'
		CONSTRAINT queues_fairness_valid CHECK (fairness IN ('priority', 'round_robin')),
	ADD COLUMN priority_aging interval
		CONSTRAINT queues_priority_aging_positive CHECK (
			priority_aging > interval '0' AND priority_aging <= interval '100 years'),
	ADD CONSTRAINT queues_group_ordered_one_at_a_time CHECK (
		NOT group_ordered OR COALESCE(group_concurrency, 1) = 1);

/*
 * One row per (queue, group) that ever had a job: the number of its jobs
 * that are running, kept exact by the triggers below in the transaction
 * that moves the job, and the row that a claim locks (FOR UPDATE SKIP
 * LOCKED) before it takes jobs of the group.  The lock serializes claims
 * per group; the counter in the locked row version is the current one, so
 * two claims can never both take the last slot of a group.  Rows are
 * removed with their queue.  The table is not dumped: on restore, the
 * triggers rebuild it as the jobs are loaded.
 */
CREATE TABLE jobqueue.groups
(
	queue_name		text		NOT NULL,
	group_key		text		NOT NULL,
	running			int			NOT NULL DEFAULT 0,
	PRIMARY KEY (queue_name, group_key)
)
WITH (fillfactor = 50,
	  autovacuum_vacuum_scale_factor = 0.01,
	  autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE jobqueue.groups IS
	'one row per group of a queue: its running jobs (kept by triggers), locked by claims that take its jobs';
REVOKE ALL ON jobqueue.groups FROM PUBLIC;

-- A group's ready jobs in claim order (claims with a group policy).
CREATE INDEX jobs_group_idx ON jobqueue.jobs
	(queue_name, group_key, priority DESC, available_at, id)
	WHERE status = 'pending' AND group_key IS NOT NULL;
-- A group's unfinished jobs in enqueue order: the head of a strictly
-- ordered group, dead heads (blocked groups).
CREATE INDEX jobs_group_head_idx ON jobqueue.jobs (queue_name, group_key, id)
	WHERE status IN ('pending', 'running', 'dead') AND group_key IS NOT NULL;

/*
 * Keeps jobqueue.groups.running equal to the number of running jobs of
 * each group, whatever statement moves the job (claim, complete, fail,
 * reap, release, cancel, hand-written SQL), and creates a group's row
 * with its first job.  The WHEN clauses leave jobs without a group, and
 * updates that do not enter or leave running, untouched.
 */
CREATE FUNCTION jobqueue.jq_group_count()
RETURNS trigger
AS 'MODULE_PATHNAME', 'jq_group_count'
LANGUAGE C;
COMMENT ON FUNCTION jobqueue.jq_group_count() IS
	'trigger: keeps jobqueue.groups (one row per group, its running jobs) exact';
REVOKE ALL ON FUNCTION jobqueue.jq_group_count() FROM PUBLIC;

CREATE TRIGGER jobs_group_insert AFTER INSERT ON jobqueue.jobs
	FOR EACH ROW WHEN (NEW.group_key IS NOT NULL)
	EXECUTE FUNCTION jobqueue.jq_group_count();
CREATE TRIGGER jobs_group_status AFTER UPDATE OF status ON jobqueue.jobs
	FOR EACH ROW WHEN (OLD.group_key IS NOT NULL AND
					   (OLD.status = 'running') <> (NEW.status = 'running'))
	EXECUTE FUNCTION jobqueue.jq_group_count();
CREATE TRIGGER jobs_group_delete AFTER DELETE ON jobqueue.jobs
	FOR EACH ROW WHEN (OLD.group_key IS NOT NULL AND OLD.status = 'running')
	EXECUTE FUNCTION jobqueue.jq_group_count();

/*
 * One row per group of a queue: ready, running, scheduled (pending, not
 * yet due) and dead jobs, whether the group is blocked (strict order and a
 * dead head: nothing of the group runs until the head is replayed or
 * cancelled), and how long its oldest ready job has waited.  Jobs without
 * a group show as the group NULL.
 */
CREATE FUNCTION jobqueue.jq_group_stats(
	queue_name text,
	OUT group_key text,
	OUT ready bigint,
	OUT running bigint,
	OUT scheduled bigint,
	OUT dead bigint,
	OUT blocked boolean,
	OUT oldest_ready_age interval)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'jq_group_stats'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_group_stats(text) IS
	'per group of a queue: ready, running, scheduled and dead jobs, blocked (strict order, dead head), age of the oldest ready job';
REVOKE ALL ON FUNCTION jobqueue.jq_group_stats(text) FROM PUBLIC;

/*
 * queue_stats gains waiting (jobs whose dependencies have not all
 * succeeded, never counted in pending or ready) and the groups: with a
 * ready job, with a running job, and blocked by a dead head (strictly
 * ordered queues).  The columns are added at the end, so CREATE OR REPLACE
 * keeps the view's grants.
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
	 WHERE j.queue_name = q.queue_name AND j.status < 'pending') w
CROSS JOIN LATERAL
	(SELECT pg_catalog.count(*) FILTER (WHERE EXISTS (
				SELECT FROM jobqueue.jobs j
				WHERE j.queue_name = gr.queue_name AND j.group_key = gr.group_key
				  AND j.status = 'pending' AND j.available_at <= pg_catalog.now())) AS groups_ready,
			pg_catalog.count(*) FILTER (WHERE gr.running > 0) AS groups_running,
			pg_catalog.count(*) FILTER (WHERE q.group_ordered AND gr.group_key <> '' AND (
				SELECT h.status = 'dead' FROM jobqueue.jobs h
				WHERE h.queue_name = gr.queue_name AND h.group_key = gr.group_key
				  AND h.status IN ('pending', 'running', 'dead')
				ORDER BY h.id LIMIT 1)) AS groups_blocked
	 FROM jobqueue.groups gr
	 WHERE gr.queue_name = q.queue_name) gs;
COMMENT ON VIEW jobqueue.queue_stats IS
	'per queue: backlog, running and expiring leases, finished counts, age of the oldest ready and dead job, jobs waiting for dependencies, groups ready, running and blocked';

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

-- The new signatures, and the functions of results, ordering, schedules and
-- rate limits, in the sets of rights.
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
				'jobqueue.jq_enqueue(text, jsonb, integer, timestamp with time zone, integer, text, bigint[], text)',
				'jobqueue.jq_enqueue_many(text, jsonb[], integer, timestamp with time zone, bigint[], text[])',
				'jobqueue.jq_job(bigint)']
			WHEN 'worker' THEN ARRAY[
				'jobqueue.jq_claim(text, integer, text, interval)',
				'jobqueue.jq_complete(bigint, bigint, jsonb)',
				'jobqueue.jq_complete_many(bigint[], bigint[], jsonb[])',
				'jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb)',
				'jobqueue.jq_heartbeat(bigint, bigint, interval)',
				'jobqueue.jq_release(bigint, bigint, interval)',
				'jobqueue.jq_progress(bigint, bigint, jsonb)',
				'jobqueue.jq_job(bigint)']
			WHEN 'admin' THEN ARRAY[
				'jobqueue.jq_create_queue(text, integer, interval, interval, interval, interval, interval, boolean, integer, boolean, text, interval, double precision, integer)',
				'jobqueue.jq_alter_queue(text, integer, interval, interval, interval, interval, interval, boolean, boolean, integer, boolean, text, interval, double precision, integer)',
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
				'jobqueue.jq_job(bigint)',
				'jobqueue.jq_group_stats(text)',
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
				'jobqueue.jq_group_stats(text)',
				'jobqueue.jq_cron_next(text, timestamp with time zone, text, integer)',
				'jobqueue.jq_rate_limits()']
			END) AS f(name)
		-- functions of later versions or of other features may be missing
		CROSS JOIN LATERAL pg_catalog.to_regprocedure(f.name) AS r(p)
		WHERE r.p IS NOT NULL;
END
$$;
