--
-- 420_rate_limit: queue rate limits (token buckets in shared memory): a
-- claim gets at most as many jobs as there are tokens, never waits, and
-- gives back the tokens of jobs it did not get; the policy arguments and
-- their errors.
--
SELECT jobqueue.jq_create_queue('rl', rate_limit => 0.001, rate_burst => 3);
SELECT jobqueue.jq_create_queue('rl_default', rate_limit => 2.5);
SELECT queue_name, rate_limit, rate_burst FROM jobqueue.queues WHERE queue_name LIKE 'rl%' ORDER BY 1;
SELECT count(*) FROM jobqueue.jq_enqueue_many('rl', array_fill('{}'::jsonb, ARRAY[10]));

-- the bucket starts full: 3 of the 10 asked for, then none
SELECT count(*) AS first_claim FROM jobqueue.jq_claim('rl', 10, 'w');
SELECT count(*) AS second_claim FROM jobqueue.jq_claim('rl', 10, 'w');
SELECT queue_name, rate_limit, rate_burst, tokens < 0.1 AS empty, claims_limited, jobs_claimed
FROM jobqueue.jq_rate_limits() ORDER BY 1;

-- tokens of jobs not claimed go back: 2 reserved, 1 ready job, 1 returned
SELECT jobqueue.jq_create_queue('rl_back', rate_limit => 0.001, rate_burst => 3);
SELECT jobqueue.jq_enqueue('rl_back', '{}') > 0;
SELECT count(*) AS claimed FROM jobqueue.jq_claim('rl_back', 2, 'w');
SELECT round(tokens) AS tokens_left, claims_limited, jobs_claimed
FROM jobqueue.jq_rate_limits() WHERE queue_name = 'rl_back';

-- the default bucket size is the rate rounded up
SELECT count(*) FROM jobqueue.jq_enqueue_many('rl_default', array_fill('{}'::jsonb, ARRAY[10]));
SELECT count(*) AS claimed FROM jobqueue.jq_claim('rl_default', 10, 'w');

-- removing the limit takes effect at once in this session
SELECT jobqueue.jq_alter_queue('rl', rate_limit => 0);
SELECT rate_limit, rate_burst FROM jobqueue.queues WHERE queue_name = 'rl';
SELECT count(*) AS unlimited_claim FROM jobqueue.jq_claim('rl', 10, 'w');
-- and setting one again
SELECT jobqueue.jq_alter_queue('rl_back', rate_limit => 0.001, rate_burst => 5);
SELECT jobqueue.jq_alter_queue('rl_back', rate_burst => 0);
SELECT rate_limit, rate_burst FROM jobqueue.queues WHERE queue_name = 'rl_back';

-- errors
SELECT test_helpers.try(s) AS result FROM unnest(ARRAY[
	$$SELECT jobqueue.jq_create_queue('rl_bad', rate_limit => 0)$$,
	$$SELECT jobqueue.jq_create_queue('rl_bad', rate_limit => -1)$$,
	$$SELECT jobqueue.jq_create_queue('rl_bad', rate_limit => 'NaN')$$,
	$$SELECT jobqueue.jq_create_queue('rl_bad', rate_limit => 'Infinity')$$,
	$$SELECT jobqueue.jq_create_queue('rl_bad', rate_limit => 1000001)$$,
	$$SELECT jobqueue.jq_create_queue('rl_bad', rate_limit => 1, rate_burst => 0)$$,
	$$SELECT jobqueue.jq_create_queue('rl_bad', rate_limit => 1, rate_burst => -5)$$,
	$$SELECT jobqueue.jq_alter_queue('rl', rate_limit => -1)$$,
	$$SELECT jobqueue.jq_alter_queue('rl', rate_burst => 1000001)$$,
	$$SELECT jobqueue.jq_alter_queue('no_such_queue', rate_limit => 1)$$]) WITH ORDINALITY AS t(s, ord) ORDER BY ord;
SELECT count(*) AS no_rl_bad FROM jobqueue.queues WHERE queue_name = 'rl_bad';

SELECT jobqueue.jq_drop_queue(q, force => true) FROM unnest(ARRAY['rl', 'rl_default', 'rl_back']) q;
