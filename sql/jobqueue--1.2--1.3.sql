/* jobqueue--1.2--1.3.sql -- upgrade from 1.2 to 1.3 */

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.3'" to load this file. \quit

-- 1.3 is about speed: fewer round trips and less table work per job.  A
-- fresh CREATE EXTENSION runs 1.0 and every upgrade script up to this one.

------------------------------------------------------------------------------
-- Less work per transition: value rules as domains, lighter group triggers
------------------------------------------------------------------------------

/*
 * PostgreSQL re-reads and re-plans every CHECK constraint of a table for
 * each UPDATE statement, whichever columns it sets: the four on jobs cost
 * the claim and the completion of every job as much as a fifth of their
 * work.  The same rules as domains are checked only when a statement
 * assigns the column (an insert, a claim for the token), from definitions
 * the backend keeps.  The constraints keep their names, so errors read as
 * before.  The columns first change to domains without a constraint (the
 * same type underneath: no table rewrite, indexes kept), and the domains
 * then get their constraint, which checks the existing rows once.
 */
ALTER TABLE jobqueue.jobs
	DROP CONSTRAINT jobs_max_attempts_positive,
	DROP CONSTRAINT jobs_lease_token_in_range,
	DROP CONSTRAINT jobs_dependencies_left_nonnegative,
	DROP CONSTRAINT jobs_group_key_length;

CREATE DOMAIN jobqueue.attempt_limit AS integer;
COMMENT ON DOMAIN jobqueue.attempt_limit IS
	'the number of attempts a job may make: at least 1';
CREATE DOMAIN jobqueue.fencing_token AS bigint;
COMMENT ON DOMAIN jobqueue.fencing_token IS
	'a lease''s fencing token: from 0, below the bigint maximum (a claim adds 1)';
CREATE DOMAIN jobqueue.dependency_count AS integer;
COMMENT ON DOMAIN jobqueue.dependency_count IS
	'the number of a job''s dependencies that have not succeeded yet: never negative';

ALTER TABLE jobqueue.jobs
	ALTER COLUMN max_attempts TYPE jobqueue.attempt_limit,
	ALTER COLUMN lease_token TYPE jobqueue.fencing_token,
	ALTER COLUMN dependencies_left TYPE jobqueue.dependency_count;

ALTER DOMAIN jobqueue.attempt_limit
	ADD CONSTRAINT jobs_max_attempts_positive CHECK (VALUE >= 1);
ALTER DOMAIN jobqueue.fencing_token
	ADD CONSTRAINT jobs_lease_token_in_range CHECK (
		VALUE >= 0 AND VALUE < 9223372036854775807);
ALTER DOMAIN jobqueue.dependency_count
	ADD CONSTRAINT jobs_dependencies_left_nonnegative CHECK (VALUE >= 0);

/*
 * The group triggers' WHEN clauses are also re-read for each statement;
 * the one of the status trigger tested the transition as well, which made
 * it cost every claim and completion of every queue.  Now the clauses only
 * ask whether the job has a group (the cheapest test there is), and
 * jq_group_count() looks at the transition itself.  The length of a group
 * key, which queue_stats keeps from being a domain, is checked there too:
 * on insert, and on an update that sets it.
 */
DROP TRIGGER jobs_group_insert ON jobqueue.jobs;
DROP TRIGGER jobs_group_status ON jobqueue.jobs;
CREATE TRIGGER jobs_group_insert AFTER INSERT ON jobqueue.jobs
	FOR EACH ROW WHEN (NEW.group_key IS NOT NULL)
	EXECUTE FUNCTION jobqueue.jq_group_count();
CREATE TRIGGER jobs_group_status AFTER UPDATE OF status, group_key ON jobqueue.jobs
	FOR EACH ROW WHEN (OLD.group_key IS NOT NULL OR NEW.group_key IS NOT NULL)
	EXECUTE FUNCTION jobqueue.jq_group_count();

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
