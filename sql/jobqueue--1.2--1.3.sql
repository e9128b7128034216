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

------------------------------------------------------------------------------
-- Room on each page for the new row versions of claim and complete
------------------------------------------------------------------------------

/*
 * Neither the claim nor the completion can be a HOT update (status is in
 * the predicate of the partial indexes), but a new row version that stays
 * on the page of the old one is still cheaper: its WAL record carries only
 * the bytes that changed, and no lock record is written first.  A claim of
 * 100 jobs updates every job on the pages that jq_enqueue_many filled; at
 * fillfactor 80 most new versions did not fit and went to other pages.  At
 * 50, a page keeps room for a new version of each of its jobs (measured in
 * bench/wal.sh: WAL per job of enqueue + claim + complete of 100 at 0.84x,
 * one at a time unchanged).  Page pruning also starts earlier, so that the
 * space of dead versions is reused before vacuum comes.  Only pages written
 * from now on are filled to the new limit.
 */
ALTER TABLE jobqueue.jobs SET (fillfactor = 50);
