--
-- 520_group_limits: per-group overrides of a queue's group defaults
-- (jq_set_group_limit, jq_group_limits): every argument and error, and
-- claims that give each group its own limit.
--
CREATE FUNCTION test_helpers.gl_running(q text) RETURNS TABLE(grp text, running bigint)
LANGUAGE sql AS $$
	SELECT j.group_key, count(*) FROM jobqueue.jobs j
	WHERE j.queue_name = q AND j.status = 'running' GROUP BY 1 ORDER BY 1
$$;

SELECT jobqueue.jq_create_queue('gl', group_concurrency => 4);
SELECT jobqueue.jq_create_queue('gl_plain');

------------------------------------------------------------------------
-- Arguments and errors
------------------------------------------------------------------------
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit(NULL, 'a', 1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', NULL, 1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', '', 1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', repeat('g', 257), 1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', repeat('g', 256), 1)$$);
SELECT jobqueue.jq_set_group_limit('gl', repeat('g', 256));
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('no_such_queue', 'a', 1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('a;b', 'a', 1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', -1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_limit => 'NaN')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_limit => 'Infinity')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_limit => 0)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_limit => -1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_limit => 1000001)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_burst => 0)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_burst => -5)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', rate_burst => 1000001)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', weight => 0)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', weight => 'NaN')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl', 'a', weight => '-Infinity')$$);
-- a queue without a group policy has no groups to override
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl_plain', 'a', 1)$$);
-- ... but removing nothing there is no error
SELECT test_helpers.try($$SELECT jobqueue.jq_set_group_limit('gl_plain', 'a')$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_group_limits(NULL)$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_group_limits('no_such_queue')$$);
-- none of the refused calls stored anything
SELECT count(*) AS overrides FROM jobqueue.group_limits;

------------------------------------------------------------------------
-- Set, replace, list, remove
------------------------------------------------------------------------
SELECT jobqueue.jq_set_group_limit('gl', 'b', 2);
SELECT jobqueue.jq_set_group_limit('gl', 'a', 10, rate_limit => 5.5, rate_burst => 3, weight => 2);
SELECT jobqueue.jq_set_group_limit('gl', 'c', 0);
SELECT jobqueue.jq_set_group_limit('gl', 'unused', weight => 3);
SELECT * FROM jobqueue.jq_group_limits('gl');
-- a second call replaces every override of the group
SELECT jobqueue.jq_set_group_limit('gl', 'unused', 7);
SELECT * FROM jobqueue.jq_group_limits('gl') WHERE group_key = 'unused';
-- all NULL removes the group's overrides; removing twice is no error
SELECT jobqueue.jq_set_group_limit('gl', 'unused');
SELECT jobqueue.jq_set_group_limit('gl', 'unused');
SELECT group_key FROM jobqueue.jq_group_limits('gl');
SELECT * FROM jobqueue.jq_group_limits('gl_plain');

------------------------------------------------------------------------
-- Claims: a=10, b=2, c=0 (held back), every other group the default 4;
-- the jobs without a group ('') have no limit
------------------------------------------------------------------------
-- (a's rate override replaced: a limit of concurrency only)
SELECT jobqueue.jq_set_group_limit('gl', 'a', 10);
SELECT count(*) FROM jobqueue.jq_enqueue_many('gl',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 60) i),
	group_keys => ARRAY(SELECT (ARRAY['a', 'b', 'c', 'd'])[1 + i % 4] FROM generate_series(1, 60) i));
SELECT count(*) FROM jobqueue.jq_enqueue_many('gl',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 6) i));
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl', 100, 'w');
SELECT * FROM test_helpers.gl_running('gl');
SELECT count(*) AS more FROM jobqueue.jq_claim('gl', 100, 'w');
-- a job of b ends: b gets exactly one more
SELECT jobqueue.jq_complete(j.id, j.lease_token) FROM jobqueue.jobs j
WHERE j.queue_name = 'gl' AND j.group_key = 'b' AND j.status = 'running'
ORDER BY j.id LIMIT 1;
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl', 100, 'w');
SELECT * FROM test_helpers.gl_running('gl') WHERE grp = 'b';
-- an override takes effect at the next claim: c opens, a shrinks (its
-- running jobs stay, no new one starts until it is under 3)
SELECT jobqueue.jq_set_group_limit('gl', 'c', 1);
SELECT jobqueue.jq_set_group_limit('gl', 'a', 3);
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl', 100, 'w');
SELECT * FROM test_helpers.gl_running('gl');
-- removed: a falls back to the queue's default; the queue's default moves
SELECT jobqueue.jq_set_group_limit('gl', 'a');
SELECT jobqueue.jq_alter_queue('gl', group_concurrency => 5);
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl', 100, 'w');
SELECT * FROM test_helpers.gl_running('gl');
-- the queue without a default limit: only the overridden groups are bounded
SELECT jobqueue.jq_alter_queue('gl', group_concurrency => 0, fairness => 'round_robin');
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl', 100, 'w');
SELECT * FROM test_helpers.gl_running('gl');
-- explain shows the probe of the override table
SELECT count(*) > 0 AS probes_overrides FROM jobqueue.jq_explain_claim('gl', 1) e
WHERE e::text LIKE '%group_limits%';

------------------------------------------------------------------------
-- Per-group rate limits: every group may start group_rate_burst jobs at
-- once (2), a its override's burst (5), then group_rate_limit per second
-- (so slow here that nothing flows in during the test); the bucket is
-- refilled by time: moving a group's last debit 1000 s back gives it
-- 1000 s * 0.001 = 1 job more
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('gl_rate', group_concurrency => 10,
	group_rate_limit => 0.001, group_rate_burst => 2);
SELECT jobqueue.jq_set_group_limit('gl_rate', 'a', rate_limit => 0.001, rate_burst => 5);
SELECT count(*) FROM jobqueue.jq_enqueue_many('gl_rate',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 30) i),
	group_keys => ARRAY(SELECT (ARRAY['a', 'b', 'c'])[1 + i % 3] FROM generate_series(1, 30) i));
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl_rate', 100, 'w');
SELECT * FROM test_helpers.gl_running('gl_rate');
-- ending the jobs frees their slots, not tokens
SELECT count(jobqueue.jq_complete(j.id, j.lease_token)) FROM jobqueue.jobs j
WHERE j.queue_name = 'gl_rate' AND j.status = 'running';
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl_rate', 100, 'w');
SELECT group_key, round(rate_tokens::numeric, 2) AS tokens FROM jobqueue.groups
WHERE queue_name = 'gl_rate' ORDER BY group_key;
UPDATE jobqueue.groups SET rate_epoch = rate_epoch - 1000 WHERE queue_name = 'gl_rate';
SELECT string_agg(j.group_key, ' ' ORDER BY j.group_key) AS claimed
FROM jobqueue.jq_claim('gl_rate', 100, 'w') c JOIN jobqueue.jobs j ON j.id = c.id;
-- a rate override without a queue default limits that group only
SELECT jobqueue.jq_alter_queue('gl_rate', group_rate_limit => 0);
SELECT count(*) AS claimed FROM jobqueue.jq_claim('gl_rate', 100, 'w');
SELECT * FROM test_helpers.gl_running('gl_rate');
SELECT jobqueue.jq_drop_queue('gl_rate', true);

------------------------------------------------------------------------
-- Dropping the queue drops its overrides
------------------------------------------------------------------------
SELECT jobqueue.jq_drop_queue('gl', true);
SELECT count(*) AS overrides FROM jobqueue.group_limits;
