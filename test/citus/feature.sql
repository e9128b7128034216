--
-- The feature pass of the Citus suite (scripts/test_citus.sh): run on one
-- plain server and on a Citus coordinator after jq_distribute(); the two
-- outputs must be the same.  Ids differ between the two (every node hands
-- out its own range), so nothing here prints an id, only comparisons.
-- Every call names its queue where the API allows it.
--
\set ON_ERROR_STOP 0
\set VERBOSITY terse
SET client_min_messages = warning;

SELECT jobqueue.jq_create_queue('f_plain', max_attempts => 2, backoff_base => '1 hour', backoff_max => '2 hours');
SELECT jobqueue.jq_create_queue('f_other', max_attempts => 1);
SELECT jobqueue.jq_create_queue('f_aged', priority_aging => '1 second');
SELECT jobqueue.jq_create_queue('f_groups', group_concurrency => 1);
SELECT jobqueue.jq_create_queue('f_ordered', group_ordered => true);
SELECT jobqueue.jq_create_queue('f_rr', fairness => 'round_robin');
SELECT jobqueue.jq_create_queue('f_gone', retention => '0 seconds');

-- enqueue, idempotency, claim, complete with a result
SELECT jobqueue.jq_enqueue('f_plain', '{"n": 1}', idempotency_key => 'k1') AS a \gset
SELECT jobqueue.jq_enqueue('f_plain', '{"n": 1}', idempotency_key => 'k1') = :a AS same_key_same_job;
SELECT jobqueue.jq_enqueue('f_plain', '{"n": 2}', priority => 5) AS b \gset
SELECT id = :b AS priority_first, payload, attempt, token FROM jobqueue.jq_claim('f_plain', 1, 'w') \gset c_
SELECT :'c_priority_first' AS priority_first, :'c_payload' AS payload, :'c_attempt' AS attempt;
SELECT jobqueue.jq_complete(:b, :c_token, '{"ok": true}') AS completed;
SELECT jobqueue.jq_complete(:b, :c_token) AS completed_twice;
SELECT status, result FROM jobqueue.jq_job(:b);

-- fail with backoff, then dead after max_attempts
SELECT id = :a AS is_a, token FROM jobqueue.jq_claim('f_plain', 1, 'w') \gset c_
SELECT :'c_is_a' AS claimed_a;
SELECT jobqueue.jq_fail(:a, :c_token, 'E_TEMP', 'try again') AS fail_1;
SELECT status, available_at > now() + interval '20 minutes' AS backed_off, attempt FROM jobqueue.jq_job(:a);
SELECT count(*) AS claimable_while_backed_off FROM jobqueue.jq_claim('f_plain', 1, 'w');
UPDATE jobqueue.jobs SET available_at = now() WHERE queue_name = 'f_plain' AND id = :a;
SELECT token FROM jobqueue.jq_claim('f_plain', 1, 'w') \gset c_
SELECT jobqueue.jq_fail(:a, :c_token, 'E_TEMP', 'again') AS fail_2;
SELECT status, attempt, jsonb_array_length(errors) AS errors FROM jobqueue.jq_job(:a);
SELECT count(*) AS replayed FROM jobqueue.jq_retry_dead('f_plain');
SELECT status, attempt FROM jobqueue.jq_job(:a);

-- heartbeat, progress, release, stale token
SELECT token FROM jobqueue.jq_claim('f_plain', 1, 'w') \gset c_
SELECT jobqueue.jq_heartbeat(:a, :c_token, '5 minutes') > now() + interval '4 minutes' AS extended;
SELECT jobqueue.jq_heartbeat(:a, :c_token - 1) IS NULL AS stale_refused;
SELECT jobqueue.jq_progress(:a, :c_token, '{"pct": 50}') AS progressed;
SELECT jobqueue.jq_release(:a, :c_token) AS released;
SELECT status, attempt, progress FROM jobqueue.jq_job(:a);

-- cancel and retry
SELECT jobqueue.jq_cancel(:a) AS cancelled;
SELECT status FROM jobqueue.jq_job(:a);
SELECT jobqueue.jq_retry(:a) AS retried;
SELECT status FROM jobqueue.jq_job(:a);

-- complete_many and complete_and_claim
SELECT count(*) AS enqueued FROM jobqueue.jq_enqueue_many('f_other', ARRAY['{"m": 1}', '{"m": 2}', '{"m": 3}']::jsonb[]);
SELECT array_agg(id ORDER BY id) AS ids, array_agg(token ORDER BY id) AS tokens FROM jobqueue.jq_claim('f_other', 2, 'w') \gset m_
SELECT count(*) AS next_claimed FROM jobqueue.jq_complete_and_claim('f_other', :'m_ids', :'m_tokens', 5, 'w');
SELECT status, count(*) FROM jobqueue.jobs WHERE queue_name = 'f_other' GROUP BY status ORDER BY status;

-- priority aging
SELECT count(*) FROM jobqueue.jq_enqueue_many('f_aged', ARRAY['{}', '{}']::jsonb[]);
SELECT count(*) AS aged_claimed FROM jobqueue.jq_claim('f_aged', 5, 'w');

-- groups: one running per group
SELECT count(*) FROM jobqueue.jq_enqueue_many('f_groups', ARRAY['{"g": "x1"}', '{"g": "x2"}', '{"g": "y1"}']::jsonb[],
	group_keys => ARRAY['x', 'x', 'y']);
SELECT payload FROM jobqueue.jq_claim('f_groups', 5, 'w') ORDER BY payload::text;
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'f_groups' ORDER BY 1;

-- strict order per group
SELECT count(*) FROM jobqueue.jq_enqueue_many('f_ordered', ARRAY['{"o": 1}', '{"o": 2}']::jsonb[],
	group_keys => ARRAY['g', 'g']);
SELECT payload, token FROM jobqueue.jq_claim('f_ordered', 5, 'w') \gset o_
SELECT :'o_payload' AS first_of_group;
SELECT count(*) AS second_waits FROM jobqueue.jq_claim('f_ordered', 5, 'w');

-- round robin over groups
SELECT count(*) FROM jobqueue.jq_enqueue_many('f_rr', ARRAY['{"r": "a1"}', '{"r": "a2"}', '{"r": "b1"}']::jsonb[],
	group_keys => ARRAY['a', 'a', 'b']);
SELECT payload FROM jobqueue.jq_claim('f_rr', 1, 'w');
SELECT payload FROM jobqueue.jq_claim('f_rr', 1, 'w');
SELECT payload FROM jobqueue.jq_claim('f_rr', 1, 'w');

-- retention 0: a succeeded job is deleted
SELECT jobqueue.jq_enqueue('f_gone', '{}') AS g \gset
SELECT token FROM jobqueue.jq_claim('f_gone', 1, 'w') \gset c_
SELECT jobqueue.jq_complete(:g, :c_token) AS completed;
SELECT count(*) AS left_in_table FROM jobqueue.jobs WHERE queue_name = 'f_gone';

-- dependencies within a queue and across queues
SELECT jobqueue.jq_enqueue('f_other', '{"dep": "root"}') AS r \gset
SELECT jobqueue.jq_enqueue('f_other', '{"dep": "same queue"}', depends_on => ARRAY[:r]) AS d1 \gset
SELECT jobqueue.jq_enqueue('f_plain', '{"dep": "other queue"}', depends_on => ARRAY[:r]) AS d2 \gset
SELECT (SELECT status FROM jobqueue.jq_job(:d1)) AS same_queue, (SELECT status FROM jobqueue.jq_job(:d2)) AS other_queue;
SELECT id = :r AS root_first, token FROM jobqueue.jq_claim('f_other', 5, 'w') WHERE id = :r \gset c_
SELECT jobqueue.jq_complete(:r, :c_token) AS root_done;
SELECT (SELECT status FROM jobqueue.jq_job(:d1)) AS same_queue, (SELECT status FROM jobqueue.jq_job(:d2)) AS other_queue;

-- schedules
SELECT jobqueue.jq_schedule('f_every_minute', 'f_other', '* * * * *', '{"s": 1}') IS NOT NULL AS scheduled;
UPDATE jobqueue.schedules SET next_run_at = now() - interval '1 second' WHERE schedule_name = 'f_every_minute';
SELECT jobqueue.jq_run_schedules() AS fired;
SELECT count(*) AS scheduled_jobs FROM jobqueue.jobs WHERE queue_name = 'f_other' AND payload @> '{"s": 1}';
SELECT jobqueue.jq_unschedule('f_every_minute') AS unscheduled;

-- statistics across queues
SELECT queue_name, pending, ready, running, succeeded, dead, cancelled, waiting
FROM jobqueue.queue_stats WHERE queue_name LIKE 'f\_%' ORDER BY 1;
SELECT count(*) AS listed FROM jobqueue.jq_jobs('f_plain');
SELECT group_key, ready, running FROM jobqueue.jq_group_stats('f_groups') ORDER BY 1;

-- purge, drop
SELECT jobqueue.jq_purge('f_other', '0 seconds') >= 0 AS purged;
SELECT jobqueue.jq_drop_queue(q, force => true) FROM unnest(ARRAY['f_plain', 'f_other', 'f_aged', 'f_groups', 'f_ordered', 'f_rr', 'f_gone']) q;
SELECT count(*) AS jobs_left FROM jobqueue.jobs WHERE queue_name LIKE 'f\_%';
