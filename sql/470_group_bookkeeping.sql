--
-- 470_group_bookkeeping: the group counters against whatever happens to
-- the jobs table -- jobs that only later become claimable in a queue that
-- was given a group policy, TRUNCATE, a restore without triggers, a
-- hand-written move to another queue -- and the round_robin rotation
-- across fresh sessions.  Every job queue_stats counts as ready must be
-- claimable; no claim may break a limit.  Jobs are shown by the number in
-- their payload.
--
CREATE FUNCTION test_helpers.gb_drift() RETURNS TABLE(queue_name text, group_key text, counted int, actual bigint)
LANGUAGE sql AS $$
	SELECT x.queue_name, x.group_key, gr.running, x.actual
	FROM (SELECT j.queue_name, j.group_key, count(*) FILTER (WHERE j.status = 'running') AS actual
		  FROM jobqueue.jobs j WHERE j.group_key IS NOT NULL GROUP BY 1, 2) x
	LEFT JOIN jobqueue.groups gr USING (queue_name, group_key)
	WHERE gr.running IS DISTINCT FROM x.actual AND (x.actual > 0 OR gr.running > 0)
	UNION ALL
	SELECT gr.queue_name, gr.group_key, gr.running, 0 FROM jobqueue.groups gr
	WHERE gr.running <> 0 AND NOT EXISTS (SELECT FROM jobqueue.jobs j
		WHERE j.queue_name = gr.queue_name AND j.group_key = gr.group_key)
	ORDER BY 1, 2
$$;
CREATE FUNCTION test_helpers.gb_claim(q text, n int) RETURNS TABLE(job int, grp text)
LANGUAGE sql AS $$
	SELECT (c.payload->>'n')::int, j.group_key
	FROM jobqueue.jq_claim(q, n, 'w') WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, ord)
	JOIN jobqueue.jobs j ON j.id = c.id ORDER BY c.ord
$$;
CREATE FUNCTION test_helpers.gb_fill(q text, groups text[], first int DEFAULT 1) RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(*) FROM jobqueue.jq_enqueue_many(q,
		ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(first, first + cardinality(groups) - 1) i),
		group_keys => groups)
$$;
-- ready in queue_stats, and what claims of the queue actually return
CREATE FUNCTION test_helpers.gb_ready_vs_claimable(q text) RETURNS TABLE(ready bigint, claimed bigint)
LANGUAGE sql AS $$
	SELECT (SELECT s.ready FROM jobqueue.queue_stats s WHERE s.queue_name = q),
		   (SELECT count(*) FROM jobqueue.jq_claim(q, 1000, 'probe'))
$$;

------------------------------------------------------------------------
-- Jobs without a group that become claimable after jq_alter_queue gave
-- their queue a group policy: a waiting job released later, a cancelled
-- job replayed later.  (A job enqueued by a transaction open during the
-- ALTER: test/isolation/specs/group-policy-change.spec.)
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('gb_later');
SELECT jobqueue.jq_enqueue('gb_later', '{"n": 1}') AS dep \gset
SELECT jobqueue.jq_enqueue('gb_later', '{"n": 2}', depends_on => ARRAY[:dep]) > 0 AS waiting;
SELECT jobqueue.jq_enqueue('gb_later', '{"n": 3}') AS cancelled \gset
SELECT jobqueue.jq_cancel(:cancelled);
SELECT jobqueue.jq_alter_queue('gb_later', group_concurrency => 2);
SELECT payload->>'n' AS job, status, group_key FROM jobqueue.jobs
WHERE queue_name = 'gb_later' ORDER BY id;
-- 1 runs and succeeds: 2 is released; 3 is replayed
SELECT job FROM test_helpers.gb_claim('gb_later', 10);
SELECT jobqueue.jq_complete(j.id, j.lease_token) FROM jobqueue.jobs j
WHERE j.queue_name = 'gb_later' AND j.status = 'running';
SELECT jobqueue.jq_retry(:cancelled);
SELECT * FROM test_helpers.gb_ready_vs_claimable('gb_later');
SELECT * FROM test_helpers.gb_drift();
SELECT jobqueue.jq_drop_queue('gb_later', force => true);

------------------------------------------------------------------------
-- TRUNCATE with jobs running: the groups go with the jobs, and the next
-- jobs of a group with a limit of 1 run, one at a time
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('gb_trunc', group_concurrency => 1);
SELECT test_helpers.gb_fill('gb_trunc', ARRAY['a', 'a', 'b']);
SELECT * FROM test_helpers.gb_claim('gb_trunc', 10);
TRUNCATE jobqueue.jobs CASCADE;
SELECT count(*) AS group_rows FROM jobqueue.groups WHERE queue_name = 'gb_trunc';
SELECT test_helpers.gb_fill('gb_trunc', ARRAY['a', 'a', 'b'], 4);
SELECT * FROM test_helpers.gb_claim('gb_trunc', 10);
SELECT * FROM test_helpers.gb_claim('gb_trunc', 10);
SELECT * FROM test_helpers.gb_drift();
SELECT jobqueue.jq_drop_queue('gb_trunc', force => true);

------------------------------------------------------------------------
-- A data-only restore without triggers (as pg_restore --disable-triggers
-- or session_replication_role = replica load it): the group rows are
-- missing or wrong.  Claims never break a limit meanwhile, the strictly
-- ordered queue runs its heads at once (its claim needs no group row),
-- and a recount (what the worker does at each pass) puts the counters
-- right.
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('gb_restored', group_concurrency => 1);
SELECT jobqueue.jq_create_queue('gb_restored_strict', group_ordered => true);
SET session_replication_role = replica;
INSERT INTO jobqueue.jobs (queue_name, payload, status, group_key, max_attempts, attempt_count,
	lease_expires_at, lease_owner, started_at)
VALUES ('gb_restored', '{"n": 1}', 'running', 'a', 3, 1, now() + interval '1 hour', 'before', now());
INSERT INTO jobqueue.jobs (queue_name, payload, group_key, max_attempts)
VALUES ('gb_restored', '{"n": 2}', 'a', 3), ('gb_restored', '{"n": 3}', 'b', 3),
	('gb_restored_strict', '{"n": 4}', 'x', 3), ('gb_restored_strict', '{"n": 5}', 'x', 3);
RESET session_replication_role;
SELECT count(*) AS group_rows FROM jobqueue.groups WHERE queue_name LIKE 'gb_restored%';
-- a: 1 is running, so 2 must wait; b has no row yet and waits for the recount
SELECT * FROM test_helpers.gb_claim('gb_restored', 10);
SELECT * FROM test_helpers.gb_claim('gb_restored_strict', 10);
SELECT jobqueue.jq_recount_groups('gb_restored');
SELECT * FROM test_helpers.gb_drift();
SELECT * FROM test_helpers.gb_claim('gb_restored', 10);
SELECT jobqueue.jq_recount_groups() AS nothing_left;
SELECT jobqueue.jq_drop_queue('gb_restored', force => true);
SELECT jobqueue.jq_drop_queue('gb_restored_strict', force => true);

------------------------------------------------------------------------
-- A hand-written UPDATE that moves a running job to another queue moves
-- its count: the old queue's group is free, the new one's is full
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('gb_from', group_concurrency => 1);
SELECT jobqueue.jq_create_queue('gb_to', group_concurrency => 1);
SELECT test_helpers.gb_fill('gb_from', ARRAY['a', 'a']);
SELECT test_helpers.gb_fill('gb_to', ARRAY['a'], 3);
SELECT * FROM test_helpers.gb_claim('gb_from', 10);
UPDATE jobqueue.jobs SET queue_name = 'gb_to'
WHERE queue_name = 'gb_from' AND status = 'running';
SELECT queue_name, group_key, running FROM jobqueue.groups
WHERE queue_name IN ('gb_from', 'gb_to') ORDER BY 1, 2;
SELECT * FROM test_helpers.gb_claim('gb_to', 10);
SELECT * FROM test_helpers.gb_claim('gb_from', 10);
SELECT * FROM test_helpers.gb_drift();
SELECT jobqueue.jq_drop_queue('gb_from', force => true);
SELECT jobqueue.jq_drop_queue('gb_to', force => true);

------------------------------------------------------------------------
-- round_robin across fresh sessions: 12 claims of one job, each from a
-- new connection, over a big group and two small ones, rotate over the
-- three groups as one session would
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('gb_rr', fairness => 'round_robin');
SELECT test_helpers.gb_fill('gb_rr', ARRAY(SELECT 'big' FROM generate_series(1, 20))
	|| ARRAY['t1', 't1', 't1', 't1', 't1', 't2', 't2', 't2', 't2', 't2']);
CREATE TABLE test_helpers.gb_rr_claims (ord serial, grp text);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
\c
INSERT INTO test_helpers.gb_rr_claims (grp) SELECT grp FROM test_helpers.gb_claim('gb_rr', 1);
SELECT string_agg(grp, ' ' ORDER BY ord) AS rotation FROM test_helpers.gb_rr_claims;
SELECT grp, count(*) FROM test_helpers.gb_rr_claims GROUP BY grp ORDER BY grp;
DROP TABLE test_helpers.gb_rr_claims;
SELECT jobqueue.jq_drop_queue('gb_rr', force => true);

------------------------------------------------------------------------
-- priority_aging: the aged claim visits each distinct pending priority,
-- so a queue with aging takes priorities from -1000 to 1000 only (tens of
-- thousands of distinct priorities, a deadline or a score as priority,
-- made each claim take up to a second)
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('gb_aged', priority_aging => '1 minute');
SELECT jobqueue.jq_enqueue('gb_aged', '{"n": 1}', priority => 1000) > 0 AS at_the_limit;
SELECT jobqueue.jq_enqueue('gb_aged', '{"n": 2}', priority => -1000) > 0 AS at_the_limit;
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('gb_aged', '{"n": 3}', priority => 1001)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('gb_aged', '{"n": 3}', priority => 20260101, idempotency_key => 'k')$$);
SELECT test_helpers.try($$SELECT count(*) FROM jobqueue.jq_enqueue_many('gb_aged', ARRAY['{"n": 4}']::jsonb[], priority => -50000)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('gb_aged', '{"n": 5}', priority => 5000, depends_on => ARRAY[]::bigint[])$$);
-- a queue with such jobs cannot get aging; without aging any priority goes
SELECT jobqueue.jq_create_queue('gb_scored');
SELECT jobqueue.jq_enqueue('gb_scored', '{"n": 6}', priority => 50000) > 0 AS enqueued;
SELECT test_helpers.try($$SELECT jobqueue.jq_alter_queue('gb_scored', priority_aging => '1 minute')$$);
SELECT priority_aging FROM jobqueue.queues WHERE queue_name = 'gb_scored';
SELECT jobqueue.jq_drop_queue('gb_aged', force => true);
SELECT jobqueue.jq_drop_queue('gb_scored', force => true);
