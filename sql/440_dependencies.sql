--
-- Dependencies: jobs that wait for other jobs (depends_on of jq_enqueue and
-- jq_enqueue_many): chains, fan-in, fan-out, failure and its transitive
-- cancellation, replay of a dependent, dependencies across queues, what
-- purging keeps, and the errors.
--
SET client_min_messages = warning;
SELECT jobqueue.jq_create_queue('q_dep', max_attempts => 1);
SELECT jobqueue.jq_create_queue('q_dep_other', max_attempts => 1);

-- claim one job of a queue and complete it; returns its id
CREATE FUNCTION pg_temp.run_one(q text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT c.id FROM jobqueue.jq_claim(q, 1, 'dep-worker') c
	WHERE jobqueue.jq_complete(c.id, c.token, jsonb_build_object('done', c.id))
$$;
CREATE FUNCTION pg_temp.fail_one(q text) RETURNS bigint
LANGUAGE sql AS $$
	SELECT c.id FROM jobqueue.jq_claim(q, 1, 'dep-worker') c
	WHERE jobqueue.jq_fail(c.id, c.token, 'BROKEN', retryable => false) IS NOT NULL
$$;

-- a chain a -> b -> c runs in order
SELECT jobqueue.jq_enqueue('q_dep', '{"step": "a"}') AS a \gset
SELECT jobqueue.jq_enqueue('q_dep', '{"step": "b"}', depends_on => ARRAY[:a]) AS b \gset
SELECT jobqueue.jq_enqueue('q_dep', '{"step": "c"}', depends_on => ARRAY[:b]) AS c \gset
SELECT 'a' AS job, status, waiting_for IS NULL AS waits_for_none FROM jobqueue.jq_job(:a)
UNION ALL SELECT 'b', status, waiting_for = ARRAY[:a]::bigint[] FROM jobqueue.jq_job(:b)
UNION ALL SELECT 'c', status, waiting_for = ARRAY[:b]::bigint[] FROM jobqueue.jq_job(:c);
SELECT pending, ready, waiting FROM jobqueue.queue_stats WHERE queue_name = 'q_dep';
SELECT pg_temp.run_one('q_dep') = :a AS ran_a;
SELECT pg_temp.run_one('q_dep') = :b AS ran_b;
SELECT pg_temp.run_one('q_dep') = :c AS ran_c;
SELECT pg_temp.run_one('q_dep') IS NULL AS nothing_left;
SELECT status, waiting_for FROM jobqueue.jq_job(:c);

-- a dependency that already succeeded is satisfied; duplicates count once
SELECT jobqueue.jq_enqueue('q_dep', '{"after": "a"}', depends_on => ARRAY[:a, :a]) AS d \gset
SELECT status, waiting_for FROM jobqueue.jq_job(:d);
SELECT pg_temp.run_one('q_dep') = :d AS ran_d;

-- fan-in: one job waits for three, across queues; it becomes ready with
-- the last of them, whatever the order
SELECT jobqueue.jq_enqueue('q_dep', '{"in": 1}') AS i1 \gset
SELECT jobqueue.jq_enqueue('q_dep_other', '{"in": 2}') AS i2 \gset
SELECT jobqueue.jq_enqueue('q_dep', '{"in": 3}') AS i3 \gset
SELECT jobqueue.jq_enqueue('q_dep_other', '{"join": true}', depends_on => ARRAY[:i3, :i1, :i2]) AS fin \gset
SELECT status, waiting_for = ARRAY[:i1, :i2, :i3]::bigint[] AS waits_for_all FROM jobqueue.jq_job(:fin);
-- each row names the queues of both its jobs (on Citus it sits on the
-- shard of the job it waits for)
SELECT depends_on = :i2 AS other_queue, queue_name, job_queue
FROM jobqueue.job_dependencies WHERE job_id = :fin ORDER BY depends_on;
SELECT pg_temp.run_one('q_dep') = :i1 AS ran_i1;
SELECT status, waiting_for = ARRAY[:i2, :i3]::bigint[] AS waits_for_rest FROM jobqueue.jq_job(:fin);
SELECT pg_temp.run_one('q_dep_other') = :i2 AS ran_i2;
SELECT pg_temp.run_one('q_dep') = :i3 AS ran_i3;
SELECT status, waiting_for FROM jobqueue.jq_job(:fin);
SELECT pg_temp.run_one('q_dep_other') = :fin AS ran_join;

-- fan-out: 10,000 jobs wait for one; its completion makes them all ready,
-- and the claim's plan does not read them while they wait
SELECT jobqueue.jq_enqueue('q_dep', '{"root": true}') AS root \gset
SELECT count(*) AS enqueued FROM jobqueue.jq_enqueue_many('q_dep_other',
	(SELECT array_agg(jsonb_build_object('leaf', g)) FROM generate_series(1, 10000) g),
	depends_on => ARRAY[:root]);
SELECT pending, waiting FROM jobqueue.queue_stats WHERE queue_name = 'q_dep_other';
SELECT count(*) AS claimable FROM jobqueue.jq_claim('q_dep_other', 10, 'peek');
SELECT pg_temp.run_one('q_dep') = :root AS ran_root;
SELECT pending, ready, waiting FROM jobqueue.queue_stats WHERE queue_name = 'q_dep_other';
SELECT count(*) AS edges_left FROM jobqueue.job_dependencies WHERE depends_on = :root;
DELETE FROM jobqueue.jobs WHERE queue_name = 'q_dep_other';

-- failure: the dependents are cancelled, transitively, with
-- DEPENDENCY_FAILED and a history entry naming the dependency
SELECT jobqueue.jq_enqueue('q_dep', '{"x": "f"}') AS f \gset
SELECT jobqueue.jq_enqueue('q_dep_other', '{"x": "g"}', depends_on => ARRAY[:f]) AS g \gset
SELECT jobqueue.jq_enqueue('q_dep', '{"x": "h"}', depends_on => ARRAY[:g]) AS h \gset
SELECT pg_temp.fail_one('q_dep') = :f AS failed_f;
SELECT status, last_error_code, errors -> -1 ->> 'event' AS event,
	(errors -> -1 ->> 'dependency')::bigint = :f AS names_f,
	errors -> -1 ->> 'dependency_status' AS dep_status, waiting_for = ARRAY[:f]::bigint[] AS lacks_f
FROM jobqueue.jq_job(:g);
SELECT status, last_error_code, (errors -> -1 ->> 'dependency')::bigint = :g AS names_g,
	errors -> -1 ->> 'dependency_status' AS dep_status
FROM jobqueue.jq_job(:h);
SELECT cancelled, waiting FROM jobqueue.queue_stats WHERE queue_name = 'q_dep_other';
-- a new job on a dead dependency is cancelled at once
SELECT jobqueue.jq_enqueue('q_dep', '{"x": "late"}', depends_on => ARRAY[:f]) AS late \gset
SELECT status, last_error_code, (errors -> 0 ->> 'dependency')::bigint = :f AS names_f FROM jobqueue.jq_job(:late);
-- replaying a dependent whose dependency is still dead is refused (55000)
\set VERBOSITY sqlstate
SELECT jobqueue.jq_retry(:g);
\set VERBOSITY default
-- replaying the dependency does not revive its dependents
SELECT jobqueue.jq_retry(:f) AS replayed_f;
SELECT status FROM jobqueue.jq_job(:g);
-- but replaying a dependent now waits for it again
SELECT jobqueue.jq_retry(:g) AS replayed_g;
SELECT status, waiting_for = ARRAY[:f]::bigint[] AS waits_for_f FROM jobqueue.jq_job(:g);
SELECT pg_temp.run_one('q_dep') = :f AS ran_f;
SELECT status, waiting_for FROM jobqueue.jq_job(:g);
SELECT pg_temp.run_one('q_dep_other') = :g AS ran_g;
-- h stayed cancelled (a cancelled dependent is not revived) until replayed
SELECT status FROM jobqueue.jq_job(:h);
SELECT jobqueue.jq_retry(:h) AS replayed_h;
SELECT status, waiting_for FROM jobqueue.jq_job(:h);

-- cancelling a waiting job cancels its dependents
SELECT jobqueue.jq_enqueue('q_dep', '{"x": "m"}', run_at => now() + interval '1 hour') AS m \gset
SELECT jobqueue.jq_enqueue('q_dep', '{"x": "n"}', depends_on => ARRAY[:m]) AS n \gset
SELECT jobqueue.jq_enqueue('q_dep', '{"x": "o"}', depends_on => ARRAY[:n]) AS o \gset
SELECT jobqueue.jq_cancel(:n) AS cancelled_n;
SELECT status, last_error_code, errors -> -1 ->> 'dependency_status' AS dep_status FROM jobqueue.jq_job(:o);

-- purging keeps a job that a cancelled dependent still names, and takes
-- the dependent's rows with it
SELECT jobqueue.jq_cancel(:m) AS cancelled_m;
-- (o names n, n names m: each purge takes one level)
SELECT jobqueue.jq_purge('q_dep', older_than => '0 seconds') >= 1 AS purged;
SELECT count(*) FILTER (WHERE id = :m) AS m_exists, count(*) FILTER (WHERE id = :n) AS n_exists,
	count(*) FILTER (WHERE id = :o) AS o_exists FROM jobqueue.jobs;
SELECT jobqueue.jq_purge('q_dep', older_than => '0 seconds') >= 1 AS purged;
SELECT count(*) FILTER (WHERE id = :m) AS m_exists, count(*) FILTER (WHERE id = :n) AS n_exists
FROM jobqueue.jobs;
SELECT jobqueue.jq_purge('q_dep', older_than => '0 seconds') >= 1 AS purged;
SELECT count(*) FILTER (WHERE id = :m) AS m_exists FROM jobqueue.jobs;
SELECT count(*) AS rows_left FROM jobqueue.job_dependencies WHERE depends_on IN (:m, :n) OR job_id IN (:n, :o);

-- dropping a queue whose jobs others wait for is refused
SELECT jobqueue.jq_enqueue('q_dep', '{"x": "p"}') AS p \gset
SELECT jobqueue.jq_enqueue('q_dep_other', '{"x": "q"}', depends_on => ARRAY[:p]) AS q \gset
\set VERBOSITY terse
SELECT jobqueue.jq_drop_queue('q_dep', force => true);
\set VERBOSITY default

-- errors: unknown dependency (23503), NULL elements, shape
SELECT jobqueue.jq_enqueue('q_dep', '{}', depends_on => ARRAY[-5]);
SELECT jobqueue.jq_enqueue('q_dep', '{}', depends_on => ARRAY[:p, NULL]);
SELECT * FROM jobqueue.jq_enqueue_many('q_dep', ARRAY['{}']::jsonb[], depends_on => ARRAY[[1]]::bigint[]);
-- an empty list is no dependency
SELECT jobqueue.jq_enqueue('q_dep', '{}', depends_on => '{}') AS e \gset
SELECT status FROM jobqueue.jq_job(:e);

-- the claim still reads the claim index (waiting jobs are not in it): with
-- sequential scans off, so that the plan does not depend on whether
-- autovacuum has analyzed this small table yet
SET enable_seqscan = off;
SELECT count(*) AS claim_index_scans FROM jobqueue.jq_explain_claim('q_dep_other') AS l
WHERE l LIKE '%Index Scan using jobs_claim_idx%';
RESET enable_seqscan;

SELECT jobqueue.jq_drop_queue('q_dep_other', force => true);
SELECT jobqueue.jq_drop_queue('q_dep', force => true);
SELECT count(*) AS dependency_rows_left FROM jobqueue.job_dependencies;

-- a job with dependencies may belong to a group too (one key per payload in
-- enqueue_many; a job without a key in a queue with a group policy joins
-- the group of the jobs without a group, '')
SELECT jobqueue.jq_create_queue('dep_grouped', group_concurrency => 1);
SELECT jobqueue.jq_enqueue('dep_grouped', '{"n": 1}', group_key => 'g') AS grouped_parent \gset
SELECT jobqueue.jq_enqueue('dep_grouped', '{"n": 2}', depends_on => ARRAY[:grouped_parent],
	group_key => 'g') > 0 AS enqueued;
SELECT count(*) AS enqueued FROM jobqueue.jq_enqueue_many('dep_grouped',
	ARRAY['{"n": 3}'::jsonb, '{"n": 4}'], depends_on => ARRAY[:grouped_parent],
	group_keys => ARRAY['h', NULL]);
SELECT payload->>'n' AS n, status, group_key FROM jobqueue.jobs
WHERE queue_name = 'dep_grouped' ORDER BY id;
SELECT group_key, ready, running, scheduled, dead FROM jobqueue.jq_group_stats('dep_grouped')
ORDER BY group_key;
SELECT jobqueue.jq_drop_queue('dep_grouped', force => true);

-- dependencies are settled when the enqueue's transaction commits
-- (jq_dependencies_settle, a deferred trigger): inside the transaction a
-- running dependency is not marked yet; after the commit it is
SELECT jobqueue.jq_create_queue('dep_commit', max_attempts => 1);
SELECT jobqueue.jq_create_queue('dep_commit_gone', max_attempts => 1, retention => '0');
SELECT jobqueue.jq_enqueue('dep_commit', '{"n": "x"}') AS x \gset
BEGIN;
SELECT jobqueue.jq_enqueue('dep_commit', '{"n": "y"}', depends_on => ARRAY[:x]) AS y \gset
SELECT has_dependents AS marked_before_commit FROM jobqueue.jobs WHERE id = :x;
COMMIT;
SELECT has_dependents AS marked_after_commit FROM jobqueue.jobs WHERE id = :x;
-- the producer's own transaction runs and completes the dependency (in a
-- queue that keeps no history: it is deleted) before committing: the
-- dependent is released at once, and the check at commit finds nothing
-- more to do
SELECT jobqueue.jq_enqueue('dep_commit_gone', '{"n": "a"}') AS a \gset
BEGIN;
SELECT jobqueue.jq_enqueue('dep_commit', '{"n": "b"}', depends_on => ARRAY[:a]) AS b \gset
SELECT pg_temp.run_one('dep_commit_gone') = :a AS ran_a;
SELECT status, dependencies_left FROM jobqueue.jobs WHERE id = :b;
COMMIT;
SELECT count(*) AS a_exists FROM jobqueue.jobs WHERE id = :a;
SELECT status, waiting_for FROM jobqueue.jq_job(:b);
-- ... and fails it: the dependent is cancelled once
SELECT jobqueue.jq_enqueue('dep_commit_gone', '{"n": "c"}') AS c \gset
BEGIN;
SELECT jobqueue.jq_enqueue('dep_commit', '{"n": "d"}', depends_on => ARRAY[:c]) AS d \gset
SELECT pg_temp.fail_one('dep_commit_gone') = :c AS failed_c;
COMMIT;
SELECT status, last_error_code, jsonb_array_length(errors) AS entries FROM jobqueue.jq_job(:d);
-- SET CONSTRAINTS ... IMMEDIATE settles at once; a savepoint rolled back
-- after that undoes the settling, and the commit settles again
SELECT jobqueue.jq_enqueue('dep_commit_gone', '{"n": "e"}') AS e \gset
BEGIN;
SET CONSTRAINTS jobqueue.job_dependencies_settle IMMEDIATE;
SELECT jobqueue.jq_enqueue('dep_commit', '{"n": "f"}', depends_on => ARRAY[:e]) AS f \gset
SELECT has_dependents AS marked_at_once FROM jobqueue.jobs WHERE id = :e;
SET CONSTRAINTS jobqueue.job_dependencies_settle DEFERRED;
SAVEPOINT s;
SELECT jobqueue.jq_enqueue('dep_commit', '{"n": "g"}', depends_on => ARRAY[:e]) AS g \gset
SET CONSTRAINTS jobqueue.job_dependencies_settle IMMEDIATE;
ROLLBACK TO SAVEPOINT s;
SELECT jobqueue.jq_enqueue('dep_commit', '{"n": "h"}', depends_on => ARRAY[:e]) AS h \gset
COMMIT;
SELECT count(*) FILTER (WHERE id = :g) AS g_exists,
	count(*) FILTER (WHERE id IN (:f, :h) AND status = 'waiting') AS waiting
FROM jobqueue.jobs;
SELECT pg_temp.run_one('dep_commit') = :x AS ran_x;
SELECT pg_temp.run_one('dep_commit_gone') = :e AS ran_e;
SELECT count(*) FILTER (WHERE status = 'pending') AS released,
	count(*) FILTER (WHERE status = 'waiting') AS still_waiting
FROM jobqueue.jobs WHERE id IN (:y, :f, :h);
-- a row naming a job that does not exist (written by hand, or restored
-- before its jobs) is left alone at commit, as before
INSERT INTO jobqueue.job_dependencies (job_id, depends_on, queue_name, job_queue)
VALUES (:y, -1, 'dep_commit', 'dep_commit');
SELECT count(*) AS rows_naming_nothing FROM jobqueue.job_dependencies WHERE depends_on = -1;
DELETE FROM jobqueue.job_dependencies WHERE depends_on = -1;
SELECT jobqueue.jq_drop_queue('dep_commit', force => true);
SELECT jobqueue.jq_drop_queue('dep_commit_gone', force => true);
