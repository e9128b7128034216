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

------------------------------------------------------------------------------
-- One round trip per batch for a worker loop: complete, then claim
------------------------------------------------------------------------------

/*
 * jq_complete_many(ids, tokens, results) followed by jq_claim(queue_name,
 * n, owner, lease), in one call and one transaction: the same rules, the
 * same counters, the same result as jq_claim.  The ids may belong to any
 * queue; n = 0 only completes, empty ids only claim.
 */
CREATE FUNCTION jobqueue.jq_complete_and_claim(
	queue_name text,
	ids bigint[],
	tokens bigint[],
	n int,
	owner text,
	lease interval DEFAULT NULL,
	results jsonb[] DEFAULT NULL)
RETURNS TABLE(id bigint, payload jsonb, attempt int, token bigint, lease_expires_at timestamptz)
AS 'MODULE_PATHNAME', 'jq_complete_and_claim'
LANGUAGE C VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp ROWS 10;
COMMENT ON FUNCTION jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[]) IS
	'complete held jobs as jq_complete_many does (any queue), then lease up to n ready jobs of queue_name as jq_claim does, in one call; returns the jobs claimed';
REVOKE ALL ON FUNCTION jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[]) FROM PUBLIC;

-- The worker set of rights gets the new function ...
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
				'jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])',
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

COMMENT ON FUNCTION jobqueue.jq_grant_worker(regrole) IS
	'let a role claim and finish jobs (jq_claim, jq_complete[_many], jq_complete_and_claim, jq_fail, jq_heartbeat, jq_release, jq_progress, jq_job)';

-- ... and so does every role that can claim already (a role given the
-- worker rights before this update)
DO $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT a.grantee::pg_catalog.regrole AS grantee
		FROM pg_catalog.pg_proc p
		CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) a
		WHERE p.oid = 'jobqueue.jq_claim(text, integer, text, interval)'::pg_catalog.regprocedure
		  AND a.privilege_type = 'EXECUTE' AND a.grantee <> 0 AND a.grantee <> p.proowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %s',
			'jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])',
			r.grantee);
	END LOOP;
END
$$;
