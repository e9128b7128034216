/* jobqueue--1.0.sql -- install script of the jobqueue extension */

-- complain if script is sourced in psql, rather than via CREATE EXTENSION
\echo Use "CREATE EXTENSION jobqueue" to load this file. \quit

------------------------------------------------------------------------------
-- Types
------------------------------------------------------------------------------

CREATE TYPE jobqueue.job_status AS ENUM
	('pending', 'running', 'succeeded', 'dead', 'cancelled');
COMMENT ON TYPE jobqueue.job_status IS
	'life-cycle state of a job: pending -> running -> succeeded, or back to pending (retry), dead or cancelled';

------------------------------------------------------------------------------
-- Tables
------------------------------------------------------------------------------

CREATE TABLE jobqueue.queues
(
	queue_name		text		PRIMARY KEY
		CONSTRAINT queues_name_valid CHECK (queue_name ~ '^[A-Za-z0-9_.:-]{1,128}$'),
	max_attempts	int			NOT NULL DEFAULT 8
		CONSTRAINT queues_max_attempts_positive CHECK (max_attempts >= 1),
	lease_duration	interval	NOT NULL DEFAULT '60 seconds'
		CONSTRAINT queues_lease_duration_positive CHECK (lease_duration > interval '0'),
	max_runtime		interval	NOT NULL DEFAULT '1 hour'
		CONSTRAINT queues_max_runtime_positive CHECK (max_runtime > interval '0'),
	backoff_base	interval	NOT NULL DEFAULT '10 seconds'
		CONSTRAINT queues_backoff_base_positive CHECK (backoff_base > interval '0'),
	backoff_max		interval	NOT NULL DEFAULT '1 hour'
		CONSTRAINT queues_backoff_max_positive CHECK (backoff_max > interval '0'),
	retention		interval	NOT NULL DEFAULT '7 days'
		CONSTRAINT queues_retention_positive CHECK (retention > interval '0'),
	paused			boolean		NOT NULL DEFAULT false,
	notify			boolean		NOT NULL DEFAULT true,
	created_at		timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE jobqueue.queues IS 'one row per queue with its retry, lease and retention policy';

/*
 * No foreign key to jobqueue.queues: its check would take a KEY SHARE lock on
 * the same queues row for every enqueue, and concurrent producers would then
 * pile up in multixacts.  The functions validate the queue instead, and
 * jq_drop_queue locks out concurrent enqueues while it deletes.
 *
 * Autovacuum: every job is inserted, updated two or three times and deleted,
 * so the table is mostly dead tuples unless vacuum keeps up.  Vacuum it after
 * 1 % of changes (not 20 %) and without cost-based throttling, and keep some
 * free space on each page so that the new row versions of claim and complete
 * stay on the page of the old one.
 */
CREATE TABLE jobqueue.jobs
(
	id				bigint		GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	queue_name		text		NOT NULL,
	payload			jsonb		NOT NULL,
	status			jobqueue.job_status NOT NULL DEFAULT 'pending',
	priority		int			NOT NULL DEFAULT 0,
	available_at	timestamptz NOT NULL DEFAULT pg_catalog.now(),
	attempt_count	int			NOT NULL DEFAULT 0,
	max_attempts	int			NOT NULL
		CONSTRAINT jobs_max_attempts_positive CHECK (max_attempts >= 1),
	lease_owner		text,
	lease_token		bigint		NOT NULL DEFAULT 0,
	lease_expires_at timestamptz,
	started_at		timestamptz,
	finished_at		timestamptz,
	created_at		timestamptz NOT NULL DEFAULT pg_catalog.now(),
	idempotency_key text,
	last_error_code text,
	errors			jsonb		NOT NULL DEFAULT '[]'
)
WITH (fillfactor = 80,
	  autovacuum_vacuum_scale_factor = 0.01,
	  autovacuum_vacuum_threshold = 1000,
	  autovacuum_vacuum_insert_scale_factor = 0.05,
	  autovacuum_analyze_scale_factor = 0.02,
	  autovacuum_vacuum_cost_delay = 0);
COMMENT ON TABLE jobqueue.jobs IS 'every job of every queue; the table is the queue, notifications are only hints';

-- Serves jq_claim exactly: equality on the queue, then the claim order.
CREATE INDEX jobs_claim_idx ON jobqueue.jobs
	(queue_name, priority DESC, available_at, id)
	WHERE status = 'pending';
-- Serves jq_reap: running jobs by lease expiry.
CREATE INDEX jobs_lease_idx ON jobqueue.jobs (lease_expires_at)
	WHERE status = 'running';
-- Serves jq_purge: finished jobs by age, per queue.
CREATE INDEX jobs_finished_idx ON jobqueue.jobs (queue_name, finished_at)
	WHERE status IN ('succeeded', 'cancelled');
-- Serves jq_retry_dead and the dead-letter views.
CREATE INDEX jobs_dead_idx ON jobqueue.jobs (queue_name, finished_at)
	WHERE status = 'dead';
-- Enforces idempotency keys per queue, also between concurrent producers.
CREATE UNIQUE INDEX jobs_idempotency_key_idx ON jobqueue.jobs
	(queue_name, idempotency_key)
	WHERE idempotency_key IS NOT NULL;

-- pg_dump keeps the rows (and the identity sequence) of the extension's tables.
SELECT pg_catalog.pg_extension_config_dump('jobqueue.queues', '');
SELECT pg_catalog.pg_extension_config_dump('jobqueue.jobs', '');
SELECT pg_catalog.pg_extension_config_dump('jobqueue.jobs_id_seq', '');

------------------------------------------------------------------------------
-- Queue administration
------------------------------------------------------------------------------

CREATE FUNCTION jobqueue.jq_create_queue(
	queue_name text,
	max_attempts int DEFAULT 8,
	lease_duration interval DEFAULT '60 seconds',
	max_runtime interval DEFAULT '1 hour',
	backoff_base interval DEFAULT '10 seconds',
	backoff_max interval DEFAULT '1 hour',
	retention interval DEFAULT '7 days')
RETURNS void
AS 'MODULE_PATHNAME', 'jq_create_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_create_queue(text, int, interval, interval, interval, interval, interval) IS
	'create a queue with its policy; does nothing (with a NOTICE) when it exists';

CREATE FUNCTION jobqueue.jq_alter_queue(
	queue_name text,
	max_attempts int DEFAULT NULL,
	lease_duration interval DEFAULT NULL,
	max_runtime interval DEFAULT NULL,
	backoff_base interval DEFAULT NULL,
	backoff_max interval DEFAULT NULL,
	retention interval DEFAULT NULL,
	notify boolean DEFAULT NULL)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_alter_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_alter_queue(text, int, interval, interval, interval, interval, interval, boolean) IS
	'change a queue''s policy; NULL arguments leave a setting unchanged';

CREATE FUNCTION jobqueue.jq_drop_queue(queue_name text, force boolean DEFAULT false)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_drop_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_drop_queue(text, boolean) IS
	'drop a queue; refuses while it has jobs unless force, which deletes them';

CREATE FUNCTION jobqueue.jq_pause_queue(queue_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_pause_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_pause_queue(text) IS 'stop handing out the queue''s jobs (claims return no rows)';

CREATE FUNCTION jobqueue.jq_resume_queue(queue_name text)
RETURNS void
AS 'MODULE_PATHNAME', 'jq_resume_queue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_resume_queue(text) IS 'hand out a paused queue''s jobs again';

------------------------------------------------------------------------------
-- Job life cycle (the hot path)
------------------------------------------------------------------------------

CREATE FUNCTION jobqueue.jq_enqueue(
	queue_name text,
	payload jsonb,
	priority int DEFAULT 0,
	run_at timestamptz DEFAULT NULL,
	max_attempts int DEFAULT NULL,
	idempotency_key text DEFAULT NULL)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jq_enqueue'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text) IS
	'add a job and return its id; with an idempotency key the queue already holds, return that job''s id';

CREATE FUNCTION jobqueue.jq_enqueue_many(
	queue_name text,
	payloads jsonb[],
	priority int DEFAULT 0,
	run_at timestamptz DEFAULT NULL)
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'jq_enqueue_many'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_enqueue_many(text, jsonb[], int, timestamptz) IS
	'add one job per payload in one statement; returns the ids in payload order';

CREATE FUNCTION jobqueue.jq_claim(
	queue_name text,
	n int,
	owner text,
	lease interval DEFAULT NULL)
RETURNS TABLE(id bigint, payload jsonb, attempt int, token bigint, lease_expires_at timestamptz)
AS 'MODULE_PATHNAME', 'jq_claim'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 10;
COMMENT ON FUNCTION jobqueue.jq_claim(text, int, text, interval) IS
	'lease up to n ready jobs, highest priority first; never waits for a job another worker holds';

CREATE FUNCTION jobqueue.jq_complete(id bigint, token bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_complete'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_complete(bigint, bigint) IS
	'mark a job succeeded; false (and no change) when the token is stale or the lease has expired';

CREATE FUNCTION jobqueue.jq_complete_many(ids bigint[], tokens bigint[])
RETURNS SETOF bigint
AS 'MODULE_PATHNAME', 'jq_complete_many'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 100;
COMMENT ON FUNCTION jobqueue.jq_complete_many(bigint[], bigint[]) IS
	'complete many jobs in one statement; returns the ids that were completed';

CREATE FUNCTION jobqueue.jq_fail(
	id bigint,
	token bigint,
	error_code text,
	error_message text DEFAULT NULL,
	retryable boolean DEFAULT true,
	retry_in interval DEFAULT NULL)
RETURNS jobqueue.job_status
AS 'MODULE_PATHNAME', 'jq_fail'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval) IS
	'record a failed attempt; returns pending (retry scheduled), dead, or NULL when fenced';

CREATE FUNCTION jobqueue.jq_heartbeat(id bigint, token bigint, extend interval DEFAULT NULL)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'jq_heartbeat'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_heartbeat(bigint, bigint, interval) IS
	'extend a lease (never past started_at + max_runtime); NULL when the lease is lost';

CREATE FUNCTION jobqueue.jq_release(id bigint, token bigint, delay interval DEFAULT '0')
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_release'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_release(bigint, bigint, interval) IS
	'give a claimed job back without counting a failed attempt';

------------------------------------------------------------------------------
-- Operator actions
------------------------------------------------------------------------------

CREATE FUNCTION jobqueue.jq_cancel(id bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_cancel'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_cancel(bigint) IS
	'cancel a pending or running job; a running worker''s later writes are fenced';

CREATE FUNCTION jobqueue.jq_retry(id bigint, run_at timestamptz DEFAULT NULL)
RETURNS boolean
AS 'MODULE_PATHNAME', 'jq_retry'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_retry(bigint, timestamptz) IS
	'replay a dead or cancelled job with the same id; its error history is kept';

CREATE FUNCTION jobqueue.jq_retry_dead(queue_name text, error_code text DEFAULT NULL, max_jobs int DEFAULT 1000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jq_retry_dead'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_retry_dead(text, text, int) IS
	'replay up to max_jobs dead jobs of a queue, optionally only those with one error code';

------------------------------------------------------------------------------
-- Maintenance (also run by the background worker)
------------------------------------------------------------------------------

CREATE FUNCTION jobqueue.jq_reap(max_jobs int DEFAULT 10000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jq_reap'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_reap(int) IS
	'return jobs whose lease expired to pending (with backoff) or dead; returns how many';

CREATE FUNCTION jobqueue.jq_purge(queue_name text, older_than interval DEFAULT NULL, max_jobs int DEFAULT 10000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'jq_purge'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_purge(text, interval, int) IS
	'delete up to max_jobs succeeded or cancelled jobs finished longer ago than older_than (default: the queue''s retention)';

CREATE FUNCTION jobqueue.jq_explain_claim(queue_name text, n int DEFAULT 1)
RETURNS SETOF text
AS 'MODULE_PATHNAME', 'jq_explain_claim'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp;
COMMENT ON FUNCTION jobqueue.jq_explain_claim(text, int) IS
	'show the plan of the statement jq_claim runs (EXPLAIN, COSTS OFF), without claiming anything';

------------------------------------------------------------------------------
-- Privileges: nothing for PUBLIC; see jq_grant_* for the roles' rights.
------------------------------------------------------------------------------

REVOKE ALL ON ALL TABLES IN SCHEMA jobqueue FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA jobqueue FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA jobqueue FROM PUBLIC;
