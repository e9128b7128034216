--
-- 405_ordered_claim: the claim of a strictly ordered queue (group_ordered),
-- which leases group heads by their own row lock, without locking
-- jobqueue.groups; and the group counter trigger's paths (a pending job
-- into an existing group writes nothing, a job inserted as running into a
-- new group creates its row with the count).  Uses the helpers of
-- 400_ordering.  Jobs are shown by the number in their payload.
--

-- heads in priority order: one job per group, the group of the jobs
-- without a group gives several
SELECT jobqueue.jq_create_queue('ord_heads', group_ordered => true, lease_duration => '1 hour');
SELECT jobqueue.jq_enqueue('ord_heads', '{"n": 1}', priority => 0, group_key => 'a') > 0;
SELECT jobqueue.jq_enqueue('ord_heads', '{"n": 2}', priority => 9, group_key => 'a') > 0;
SELECT jobqueue.jq_enqueue('ord_heads', '{"n": 3}', priority => 5, group_key => 'b') > 0;
SELECT jobqueue.jq_enqueue('ord_heads', '{"n": 4}', priority => 1) > 0;
SELECT jobqueue.jq_enqueue('ord_heads', '{"n": 5}', priority => 2) > 0;
-- by priority: b's head (job 3, priority 5), the jobs without a group (5
-- and 4, priorities 2 and 1), a's head (job 1, priority 0); job 2
-- (priority 9) waits behind job 1 until it succeeded
SELECT * FROM test_helpers.claim('ord_heads', 10);
SELECT * FROM test_helpers.claim('ord_heads', 10);
SELECT jobqueue.jq_complete(test_helpers.job_id('ord_heads', 1), test_helpers.token('ord_heads', 1));
SELECT * FROM test_helpers.claim('ord_heads', 10);
SELECT * FROM test_helpers.group_drift('ord_heads');
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'ord_heads' ORDER BY 1;
-- the claim is the ordered one: heads are read by their row address
SELECT count(*) FILTER (WHERE line ~ 'Tid Scan on jobs') > 0 AS heads_by_ctid,
       count(*) FILTER (WHERE line ~ 'jobs_group_head_idx') > 0 AS head_index
FROM jobqueue.jq_explain_claim('ord_heads', 10) AS line;
SELECT jobqueue.jq_drop_queue('ord_heads', force => true);

-- round_robin with strict order: ceil(n / groups) from the group of the
-- jobs without a group, one from each other group, in turns
SELECT jobqueue.jq_create_queue('ord_rr_strict', group_ordered => true, fairness => 'round_robin');
SELECT test_helpers.fill('ord_rr_strict', ARRAY['a', 'a', 'b', NULL, NULL, NULL, NULL]);
SELECT * FROM test_helpers.claim('ord_rr_strict', 4);
SELECT * FROM test_helpers.claim('ord_rr_strict', 4);
SELECT * FROM test_helpers.group_drift('ord_rr_strict');
SELECT jobqueue.jq_drop_queue('ord_rr_strict', force => true);

-- the counter trigger: a pending job into an existing group leaves the
-- group's row as it is (same row version); a job inserted as running into
-- a new group creates the row with its count; deleting it counts it out
SELECT jobqueue.jq_create_queue('ord_count', group_concurrency => 1);
SELECT jobqueue.jq_enqueue('ord_count', '{"n": 1}', group_key => 'a') > 0;
SELECT xmin AS row_version FROM jobqueue.groups
WHERE queue_name = 'ord_count' AND group_key = 'a' \gset
SELECT jobqueue.jq_enqueue('ord_count', '{"n": 2}', group_key => 'a') > 0;
SELECT xmin = :'row_version' AS unchanged FROM jobqueue.groups
WHERE queue_name = 'ord_count' AND group_key = 'a';
INSERT INTO jobqueue.jobs (queue_name, payload, status, group_key, max_attempts, attempt_count,
	lease_expires_at, lease_owner)
VALUES ('ord_count', '{"n": 3}', 'running', 'new', 3, 1, now() + interval '1 hour', 'by hand');
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'ord_count' ORDER BY 1;
SELECT * FROM test_helpers.claim('ord_count', 10);
DELETE FROM jobqueue.jobs WHERE queue_name = 'ord_count' AND group_key = 'new';
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'ord_count' ORDER BY 1;
SELECT * FROM test_helpers.group_drift('ord_count');
SELECT jobqueue.jq_drop_queue('ord_count', force => true);
