--
-- Failed attempts by error code and attempt number (jq_error_counts), and
-- jobs given back by their worker (jq_counters.released) as distinct from
-- leases the reaper found expired (leases_expired).  Published when a
-- transaction ends.
--
SELECT jobqueue.jq_create_queue('q_err', max_attempts => 2, lease_duration => '1 hour',
	backoff_base => '1 millisecond', backoff_max => '1 millisecond');
SELECT jobqueue.jq_counters_reset();

-- fail each of 4 jobs twice with its own code: attempt 1 retried,
-- attempt 2 dead (max_attempts 2)
SELECT count(jobqueue.jq_enqueue('q_err', jsonb_build_object('i', i))) FROM generate_series(1, 4) AS i;
CREATE FUNCTION pg_temp.fail_all(code_of_payload boolean) RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(jobqueue.jq_fail(c.id, c.token,
		CASE WHEN code_of_payload THEN 'E_' || COALESCE(c.payload->>'i', 'none') ELSE 'E_SAME' END,
		'boom', true, '0'))
	FROM jobqueue.jq_claim('q_err', 100, 'w') c
$$;
SELECT pg_temp.fail_all(true) AS failed_first;
SELECT pg_temp.fail_all(true) AS failed_second;
SELECT error_code, attempt, retries, dead_lettered
FROM jobqueue.jq_error_counts('q_err') ORDER BY error_code, attempt;

-- a rolled-back failure counts nothing, nor does one in a rolled-back savepoint
SELECT jobqueue.jq_enqueue('q_err', '{}') IS NOT NULL AS enqueued;
BEGIN;
SELECT pg_temp.fail_all(false) AS failed_then_rolled_back;
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT pg_temp.fail_all(false) AS failed_then_rolled_back;
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT count(*) AS e_same FROM jobqueue.jq_error_counts('q_err') WHERE error_code = 'E_SAME';

-- the reaper's failures have the code LEASE_EXPIRED
CREATE TEMP TABLE c AS SELECT * FROM jobqueue.jq_claim('q_err', 1, 'w');
UPDATE jobqueue.jobs SET lease_expires_at = now() - interval '1 second'
WHERE id = (SELECT id FROM c);
SELECT jobqueue.jq_reap() AS reaped;
SELECT error_code, attempt, retries, dead_lettered
FROM jobqueue.jq_error_counts('q_err') WHERE error_code = 'LEASE_EXPIRED';

-- released by the worker vs expired by the reaper
SELECT jobqueue.jq_release(c.id, c.token) FROM jobqueue.jq_claim('q_err', 1, 'w') c;
SELECT released, leases_expired, retries_scheduled, dead_lettered
FROM jobqueue.jq_counters() WHERE queue_name = 'q_err';

-- bounded: 32 (code, attempt) pairs per queue, the others in one row '*'
SELECT count(jobqueue.jq_enqueue('q_err', jsonb_build_object('i', i))) FROM generate_series(100, 139) AS i;
SELECT pg_temp.fail_all(true) > 0 AS failed;
SELECT count(*) AS rows, count(*) FILTER (WHERE error_code = '*') AS overflow_rows,
	sum(retries + dead_lettered) AS failures
FROM jobqueue.jq_error_counts('q_err');
SELECT error_code, attempt IS NULL AS no_attempt, retries + dead_lettered > 0 AS counted
FROM jobqueue.jq_error_counts('q_err') WHERE error_code = '*';
-- every failure is counted once: the queue's failed attempts in jq_counters
SELECT (SELECT sum(retries + dead_lettered) FROM jobqueue.jq_error_counts('q_err')) =
	(SELECT failed_retryable + failed_permanent + leases_expired
	 FROM jobqueue.jq_counters() WHERE queue_name = 'q_err') AS all_counted;

-- NULL: every queue; reset with the counters
SELECT DISTINCT queue_name FROM jobqueue.jq_error_counts();
SELECT count(*) FROM jobqueue.jq_error_counts('no_such_queue');
SELECT jobqueue.jq_counters_reset('q_err');
SELECT count(*) AS rows_after_reset FROM jobqueue.jq_error_counts('q_err');

SELECT jobqueue.jq_drop_queue('q_err', force => true);
