--
-- 400_ordering: job groups and the ordering policies of a queue
-- (group_concurrency, group_ordered, fairness, priority_aging), their
-- errors, the bookkeeping of running jobs per group through every
-- transition, and the statistics.  Jobs are shown by the number in their
-- payload ("n"), never by id.
--

-- the running counters of a queue's groups against the jobs themselves:
-- no row means they agree
CREATE FUNCTION test_helpers.group_drift(q text) RETURNS TABLE(group_key text, counted int, actual bigint)
LANGUAGE sql AS $$
	SELECT gr.group_key, gr.running, (SELECT count(*) FROM jobqueue.jobs j
		WHERE j.queue_name = q AND j.group_key = gr.group_key AND j.status = 'running')
	FROM jobqueue.groups gr WHERE gr.queue_name = q
	EXCEPT
	SELECT gr.group_key, gr.running, gr.running FROM jobqueue.groups gr WHERE gr.queue_name = q
$$;
-- claim and show the jobs by number and group
CREATE FUNCTION test_helpers.claim(q text, n int) RETURNS TABLE(job int, grp text)
LANGUAGE sql AS $$
	SELECT (c.payload->>'n')::int, j.group_key
	FROM jobqueue.jq_claim(q, n, 'w') WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, traceparent, tracestate, trace_origin, ord)
	JOIN jobqueue.jobs j ON j.id = c.id ORDER BY c.ord
$$;
-- n jobs numbered from 1, with groups
CREATE FUNCTION test_helpers.fill(q text, groups text[]) RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(*) FROM jobqueue.jq_enqueue_many(q,
		ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, cardinality(groups)) i),
		group_keys => groups)
$$;
CREATE FUNCTION test_helpers.token(q text, num int) RETURNS bigint
LANGUAGE sql AS $$
	SELECT j.lease_token FROM jobqueue.jobs j WHERE j.queue_name = q AND (j.payload->>'n')::int = num
$$;
CREATE FUNCTION test_helpers.job_id(q text, num int) RETURNS bigint
LANGUAGE sql AS $$
	SELECT j.id FROM jobqueue.jobs j WHERE j.queue_name = q AND (j.payload->>'n')::int = num
$$;

------------------------------------------------------------------------
-- Policy arguments and their errors
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('ord_defaults');
SELECT group_concurrency, group_ordered, fairness, priority_aging
FROM jobqueue.queues WHERE queue_name = 'ord_defaults';
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('ord_bad', group_concurrency => 0)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('ord_bad', group_ordered => true, group_concurrency => 2)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('ord_bad', group_ordered => NULL)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('ord_bad', fairness => 'fifo')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('ord_bad', fairness => NULL)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('ord_bad', priority_aging => '0')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('ord_bad', priority_aging => '101 years')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_alter_queue('ord_defaults', group_concurrency => -1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_alter_queue('ord_defaults', fairness => 'random')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_alter_queue('ord_defaults', priority_aging => '-1 second')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_alter_queue('ord_missing', group_ordered => true)$$);
-- strict order with a limit other than 1, also when set in two steps
SELECT jobqueue.jq_alter_queue('ord_defaults', group_concurrency => 3);
SELECT test_helpers.try($$SELECT jobqueue.jq_alter_queue('ord_defaults', group_ordered => true)$$);
SELECT jobqueue.jq_alter_queue('ord_defaults', group_ordered => true, group_concurrency => 1);
SELECT test_helpers.try($$SELECT jobqueue.jq_alter_queue('ord_defaults', group_concurrency => 2)$$);
-- 0 and '0' remove the limit and the aging; NULL leaves everything alone
SELECT jobqueue.jq_alter_queue('ord_defaults', group_ordered => false, group_concurrency => 0,
	fairness => 'round_robin', priority_aging => '1 minute');
SELECT group_concurrency, group_ordered, fairness, priority_aging
FROM jobqueue.queues WHERE queue_name = 'ord_defaults';
SELECT jobqueue.jq_alter_queue('ord_defaults', max_attempts => 3);
SELECT jobqueue.jq_alter_queue('ord_defaults', priority_aging => '0', fairness => 'priority');
SELECT group_concurrency, group_ordered, fairness, priority_aging
FROM jobqueue.queues WHERE queue_name = 'ord_defaults';
SELECT jobqueue.jq_drop_queue('ord_defaults');

-- group keys
SELECT jobqueue.jq_create_queue('ord_keys');
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('ord_keys', '{}', group_key => '')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('ord_keys', '{}', group_key => repeat('k', 257))$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue_many('ord_keys', ARRAY['{}'::jsonb], group_keys => ARRAY['a', 'b'])$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue_many('ord_keys', ARRAY['{}'::jsonb], group_keys => ARRAY[repeat('k', 257)])$$);
SELECT jobqueue.jq_enqueue('ord_keys', '{"n": 1}', group_key => repeat('k', 256)) > 0 AS longest_key_ok;
-- a hand-written row is checked by the group trigger, on the key's length
-- before compression (20,000 bytes are stored compressed in under 256)
SELECT test_helpers.try($$INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, group_key)
	VALUES ('ord_keys', '{}', 3, repeat('k', 20000))$$);
-- a plain queue stores the group and keeps no limit, but counts
SELECT test_helpers.fill('ord_keys', ARRAY['a', NULL, 'a']);
SELECT * FROM test_helpers.claim('ord_keys', 10);
SELECT group_key = repeat('k', 256) AS long, running FROM jobqueue.groups
WHERE queue_name = 'ord_keys' ORDER BY group_key;
SELECT * FROM test_helpers.group_drift('ord_keys');
SELECT jobqueue.jq_drop_queue('ord_keys', force => true);
SELECT count(*) AS groups_left FROM jobqueue.groups WHERE queue_name = 'ord_keys';

------------------------------------------------------------------------
-- group_concurrency: never more than the limit running per group,
-- whatever moves the jobs
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('ord_limit', group_concurrency => 2, backoff_base => '1 hour',
	lease_duration => '1 hour');
SELECT test_helpers.fill('ord_limit', ARRAY['a', 'a', 'a', 'a', 'b', 'b', 'b', NULL, NULL, NULL]);
-- a: 2, b: 2, without a group: all of them
SELECT * FROM test_helpers.claim('ord_limit', 100);
SELECT * FROM test_helpers.claim('ord_limit', 100);
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'ord_limit' ORDER BY 1;
-- complete frees a slot
SELECT jobqueue.jq_complete(test_helpers.job_id('ord_limit', 1), test_helpers.token('ord_limit', 1));
SELECT * FROM test_helpers.claim('ord_limit', 100);
-- fail (retry later) frees a slot; the retry waits
SELECT jobqueue.jq_fail(test_helpers.job_id('ord_limit', 2), test_helpers.token('ord_limit', 2), 'E');
SELECT * FROM test_helpers.claim('ord_limit', 100);
-- release and cancel free a slot
SELECT jobqueue.jq_release(test_helpers.job_id('ord_limit', 5), test_helpers.token('ord_limit', 5), '1 hour');
SELECT jobqueue.jq_cancel(test_helpers.job_id('ord_limit', 6));
SELECT * FROM test_helpers.claim('ord_limit', 100);
-- the reaper frees a slot: an expired lease
UPDATE jobqueue.jobs SET lease_expires_at = now() - interval '1 second'
WHERE queue_name = 'ord_limit' AND (payload->>'n')::int = 7;
SELECT jobqueue.jq_reap() AS reaped;
SELECT * FROM test_helpers.claim('ord_limit', 100);
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'ord_limit' ORDER BY 1;
SELECT * FROM test_helpers.group_drift('ord_limit');
-- complete_many
SELECT count(*) AS completed FROM jobqueue.jq_complete_many(
	ARRAY(SELECT id FROM jobqueue.jobs WHERE queue_name = 'ord_limit' AND status = 'running' ORDER BY id),
	ARRAY(SELECT lease_token FROM jobqueue.jobs WHERE queue_name = 'ord_limit' AND status = 'running' ORDER BY id));
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'ord_limit' ORDER BY 1;
-- replay and purge
SELECT jobqueue.jq_retry(test_helpers.job_id('ord_limit', 6));
SELECT * FROM test_helpers.claim('ord_limit', 100);
SELECT jobqueue.jq_purge('ord_limit', older_than => '0 seconds') AS purged;
SELECT * FROM test_helpers.group_drift('ord_limit');
-- a paused queue gives nothing
SELECT jobqueue.jq_pause_queue('ord_limit');
SELECT jobqueue.jq_enqueue('ord_limit', '{"n": 11}', group_key => 'c') > 0 AS enqueued;
SELECT * FROM test_helpers.claim('ord_limit', 100);
SELECT jobqueue.jq_resume_queue('ord_limit');
SELECT * FROM test_helpers.claim('ord_limit', 100);
SELECT jobqueue.jq_drop_queue('ord_limit', force => true);

------------------------------------------------------------------------
-- group_ordered: one at a time, in enqueue order; a dead head blocks, a
-- cancelled job is skipped, a delayed head makes its group wait
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('ord_strict', group_ordered => true, max_attempts => 1,
	lease_duration => '1 hour');
SELECT test_helpers.fill('ord_strict', ARRAY['a', 'b', 'a', 'b', 'a', NULL, NULL]);
SELECT * FROM test_helpers.claim('ord_strict', 100);
SELECT * FROM test_helpers.claim('ord_strict', 100);
-- a: 1 succeeds, 3 may start; b: 2 fails for good, 4 waits: blocked
SELECT jobqueue.jq_complete(test_helpers.job_id('ord_strict', 1), test_helpers.token('ord_strict', 1));
SELECT jobqueue.jq_fail(test_helpers.job_id('ord_strict', 2), test_helpers.token('ord_strict', 2), 'POISON',
	retryable => false);
SELECT * FROM test_helpers.claim('ord_strict', 100);
SELECT group_key, ready, running, scheduled, dead, blocked, oldest_ready_age >= '0' AS waiting
FROM jobqueue.jq_group_stats('ord_strict') ORDER BY group_key;
SELECT groups_ready, groups_running, groups_blocked FROM jobqueue.queue_stats
WHERE queue_name = 'ord_strict';
-- cancel 5 (waiting behind 3): 3 completes, a is done
SELECT jobqueue.jq_cancel(test_helpers.job_id('ord_strict', 5));
SELECT jobqueue.jq_complete(test_helpers.job_id('ord_strict', 3), test_helpers.token('ord_strict', 3));
SELECT * FROM test_helpers.claim('ord_strict', 100);
-- replaying the dead head unblocks b, in order
SELECT jobqueue.jq_retry(test_helpers.job_id('ord_strict', 2));
SELECT * FROM test_helpers.claim('ord_strict', 100);
SELECT jobqueue.jq_complete(test_helpers.job_id('ord_strict', 2), test_helpers.token('ord_strict', 2));
SELECT * FROM test_helpers.claim('ord_strict', 100);
-- a delayed head: the group waits for it, the job behind it too
SELECT jobqueue.jq_enqueue('ord_strict', '{"n": 8}', run_at => now() + interval '1 hour', group_key => 'c') > 0;
SELECT jobqueue.jq_enqueue('ord_strict', '{"n": 9}', group_key => 'c') > 0;
SELECT * FROM test_helpers.claim('ord_strict', 100);
SELECT group_key, ready, running, scheduled, dead, blocked FROM jobqueue.jq_group_stats('ord_strict')
ORDER BY group_key;
UPDATE jobqueue.jobs SET available_at = now() WHERE queue_name = 'ord_strict' AND (payload->>'n')::int = 8;
SELECT * FROM test_helpers.claim('ord_strict', 100);
SELECT * FROM test_helpers.group_drift('ord_strict');
SELECT jobqueue.jq_drop_queue('ord_strict', force => true);

------------------------------------------------------------------------
-- round_robin: claims rotate over the groups with ready jobs, at most
-- ceil(n / groups) from one group, and the next claim continues the turn
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('ord_rr', fairness => 'round_robin');
SELECT test_helpers.fill('ord_rr', ARRAY['big', 'big', 'big', 'big', 'big', 'big', 'big', 'big',
	'x', 'x', 'y', 'y', NULL, NULL]);
-- 4 groups ('' for the jobs without a group), n = 6: at most 2 from each
SELECT * FROM test_helpers.claim('ord_rr', 6);
-- the turn continues after the last group served
SELECT * FROM test_helpers.claim('ord_rr', 1);
SELECT * FROM test_helpers.claim('ord_rr', 1);
SELECT * FROM test_helpers.claim('ord_rr', 3);
-- only big is left: all of n from it
SELECT * FROM test_helpers.claim('ord_rr', 3);
-- within a group, priority order
SELECT jobqueue.jq_enqueue('ord_rr', '{"n": 20}', priority => 1, group_key => 'p') > 0;
SELECT jobqueue.jq_enqueue('ord_rr', '{"n": 21}', priority => 5, group_key => 'p') > 0;
SELECT * FROM test_helpers.claim('ord_rr', 2);
SELECT jobqueue.jq_drop_queue('ord_rr', force => true);

------------------------------------------------------------------------
-- priority_aging: a waiting job's effective priority grows
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('ord_aged', priority_aging => '1 second');
SELECT jobqueue.jq_enqueue('ord_aged', '{"n": 1}', priority => 0, run_at => now() - interval '15 seconds') > 0;
SELECT jobqueue.jq_enqueue('ord_aged', '{"n": 2}', priority => 10) > 0;
SELECT jobqueue.jq_enqueue('ord_aged', '{"n": 3}', priority => 0, run_at => now() - interval '5 seconds') > 0;
SELECT jobqueue.jq_enqueue('ord_aged', '{"n": 4}', priority => 10, run_at => now() + interval '1 hour') > 0;
-- 1: 0 + 15, 2: 10 + 0, 3: 0 + 5; 4 is not due
SELECT * FROM test_helpers.claim('ord_aged', 10);
-- without aging, priority only
SELECT jobqueue.jq_alter_queue('ord_aged', priority_aging => '0');
SELECT test_helpers.fill('ord_aged', ARRAY[NULL::text]);
SELECT jobqueue.jq_enqueue('ord_aged', '{"n": 5}', priority => 3, run_at => now() - interval '1 hour') > 0;
SELECT jobqueue.jq_enqueue('ord_aged', '{"n": 6}', priority => 4) > 0;
SELECT * FROM test_helpers.claim('ord_aged', 10);
SELECT jobqueue.jq_drop_queue('ord_aged', force => true);

------------------------------------------------------------------------
-- a policy set on a queue with jobs: the jobs without a group form the
-- group '' and the counters are recounted
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('ord_late', lease_duration => '1 hour');
SELECT test_helpers.fill('ord_late', ARRAY['a', 'a', 'a', NULL, NULL]);
SELECT * FROM test_helpers.claim('ord_late', 3);
SELECT jobqueue.jq_alter_queue('ord_late', group_concurrency => 2);
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'ord_late' ORDER BY 1;
SELECT * FROM test_helpers.claim('ord_late', 10);
SELECT * FROM test_helpers.group_drift('ord_late');
SELECT group_key, ready, running FROM jobqueue.jq_group_stats('ord_late') ORDER BY group_key;
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_group_stats('ord_missing')$$);
SELECT jobqueue.jq_drop_queue('ord_late', force => true);

-- the plain claim statement is still the one of a queue without a policy:
-- it reads jobs only (no groups, no queues); the scans of this small table
-- are the planner's choice
SELECT jobqueue.jq_create_queue('ord_plain');
SELECT bool_and(p !~ 'groups|queues') AS jobs_only,
       bool_or(p ~ '^Update on jobs') AS one_update,
       bool_or(p ~ 'LockRows') AS locks_rows
FROM jobqueue.jq_explain_claim('ord_plain', 10) AS p;
SELECT jobqueue.jq_drop_queue('ord_plain');

------------------------------------------------------------------------
-- jq_explain_claim shows the claim statement of the queue's policy: the
-- group claim (reads jobqueue.groups), the aged claim (a recursive walk
-- over the priorities), or the plain one
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('ord_explain_plain');
SELECT jobqueue.jq_create_queue('ord_explain_groups', group_concurrency => 2);
SELECT jobqueue.jq_create_queue('ord_explain_rr', fairness => 'round_robin');
SELECT jobqueue.jq_create_queue('ord_explain_aged', priority_aging => '1 minute');
SELECT q, bool_or(p ~ 'on groups gr') AS reads_groups,
	bool_or(p ~ 'Recursive Union') AS recursive
FROM unnest(ARRAY['ord_explain_plain', 'ord_explain_groups', 'ord_explain_rr',
				  'ord_explain_aged']) q,
	LATERAL jobqueue.jq_explain_claim(q, 10) p
GROUP BY q ORDER BY q;
-- nothing was claimed, and the explained statements run
SELECT jobqueue.jq_enqueue('ord_explain_groups', '{}', group_key => 'a') > 0;
SELECT count(*) > 0 FROM jobqueue.jq_explain_claim('ord_explain_groups', 1);
SELECT count(*) FROM jobqueue.jq_claim('ord_explain_groups', 10, 'w');
SELECT jobqueue.jq_drop_queue(q, force => true) FROM unnest(ARRAY['ord_explain_plain',
	'ord_explain_groups', 'ord_explain_rr', 'ord_explain_aged']) q;
