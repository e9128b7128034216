/* jobqueue--1.2--1.3.sql -- upgrade from 1.2 to 1.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.3'" to load this file. \quit

-- 1.3 is about speed: fewer round trips and less table work per job.  A
-- fresh CREATE EXTENSION runs 1.0 and every upgrade script up to this one.

------------------------------------------------------------------------------
-- Queues that keep no history
------------------------------------------------------------------------------

/*
 * A retention of zero means: a job of the queue that succeeds is deleted
 * by the statement that completes it (one DELETE instead of an UPDATE to
 * 'succeeded': no new row version, no index entries, nothing left for the
 * purge).  Dead jobs are kept as in every queue, until replayed or deleted;
 * cancelled jobs are purged at the next purge, as for any retention that
 * has passed.
 */
ALTER TABLE jobqueue.queues
	DROP CONSTRAINT queues_retention_positive,
	ADD CONSTRAINT queues_retention_nonnegative CHECK (retention >= interval '0');
