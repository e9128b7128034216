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
-- Event counters: a bounded table with an overflow row
------------------------------------------------------------------------------

/*
 * The counters' shared hash table holds jobqueue.max_counter_queues
 * (database, queue) entries and never grows; the events of further queues
 * are added to one overflow row, shown as dbid NULL, queue_name '*'.
 */
COMMENT ON FUNCTION jobqueue.jq_counters(boolean) IS
	'cumulative event counters per queue of this database (all databases: pg_read_all_stats); times in milliseconds; queue_name ''*'' (dbid NULL) sums the queues of any database beyond jobqueue.max_counter_queues';
