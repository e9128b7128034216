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
