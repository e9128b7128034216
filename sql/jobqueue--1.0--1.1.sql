/* jobqueue--1.0--1.1.sql -- upgrade from 1.0 (the core) to 1.1 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.1'" to load this file. \quit

-- 1.1 adds the background worker's status, queue statistics, event
-- counters and the role helpers.  A fresh CREATE EXTENSION runs the 1.0
-- script and then this one, so there is a single definition of each object.

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
