--
-- Helpers shared by the regression tests that follow (they run in this
-- order, in one database).  They live in a schema of their own, so that
-- they are no part of the extension and every call names them.
--
CREATE SCHEMA test_helpers;
-- 200_privileges calls try() as roles that have no other rights
GRANT USAGE ON SCHEMA test_helpers TO PUBLIC;

-- try(stmt) runs a statement and reports its SQLSTATE and message (or
-- 'ok'), so that the error paths show their codes; it rolls back whatever
-- the statement did.
CREATE FUNCTION test_helpers.try(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;

-- job_row(job) is a job's row as text, to show that a refused call
-- changed nothing
CREATE FUNCTION test_helpers.job_row(job bigint) RETURNS text
LANGUAGE sql AS $$ SELECT row_to_json(j)::text FROM jobqueue.jobs j WHERE j.id = job $$;

-- both are there, and callable by anyone
SELECT p.oid::regprocedure AS helper,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
FROM pg_proc p WHERE p.pronamespace = 'test_helpers'::regnamespace ORDER BY p.proname;
SELECT test_helpers.try('SELECT 1') AS ok, test_helpers.try('SELECT 1/0') AS error;
