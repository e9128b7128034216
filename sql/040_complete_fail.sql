--
-- The state machine: pending -> running -> succeeded (jq_complete,
-- jq_complete_many); running -> pending with backoff or -> dead (jq_fail);
-- error messages and history.
--

SELECT jobqueue.jq_create_queue('q_sm', max_attempts => 5, lease_duration => '1 hour',
	backoff_base => '10 seconds', backoff_max => '1 minute');

--
-- pending -> running -> succeeded
--
SELECT jobqueue.jq_enqueue('q_sm', '{"l": "ok"}') AS jid \gset
SELECT status FROM jobqueue.jobs WHERE id = :jid;
SELECT token AS tok FROM jobqueue.jq_claim('q_sm', 1, 'w1') \gset
SELECT status, attempt_count, lease_owner FROM jobqueue.jobs WHERE id = :jid;
SELECT jobqueue.jq_complete(:jid, :tok);
SELECT status, attempt_count, lease_owner, lease_token = :tok AS same_token,
       lease_expires_at, finished_at BETWEEN started_at AND clock_timestamp() AS finished_now,
       errors
FROM jobqueue.jobs WHERE id = :jid;
-- a second complete is refused: the job is no longer running
SELECT jobqueue.jq_complete(:jid, :tok);
-- so is completing a pending job, or one that does not exist
SELECT jobqueue.jq_enqueue('q_sm', '{"l": "pending"}') AS jpending \gset
SELECT jobqueue.jq_complete(:jpending, 0);
SELECT jobqueue.jq_complete(:jpending, 1);
SELECT jobqueue.jq_complete(-1, 1);
SELECT status FROM jobqueue.jobs WHERE id = :jpending;
SELECT jobqueue.jq_cancel(:jpending);

SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('complete: null id',    $$SELECT jobqueue.jq_complete(NULL, 1)$$),
	('complete: null token', $$SELECT jobqueue.jq_complete(1, NULL)$$)
) v(what, stmt);

--
-- jq_complete_many
--
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_sm',
	ARRAY['{"l": "m1"}', '{"l": "m2"}', '{"l": "m3"}', '{"l": "m4"}']::jsonb[]);
CREATE TEMP TABLE cmc AS SELECT * FROM jobqueue.jq_claim('q_sm', 4, 'w1');
SELECT count(*) FROM cmc;
-- m1 and m3 with their tokens, m2 with a wrong token, a job that does not
-- exist, and m4 twice
SELECT (SELECT payload->>'l' FROM jobqueue.jobs j WHERE j.id = r.id) AS completed
FROM jobqueue.jq_complete_many(
	ARRAY[(SELECT id FROM cmc WHERE payload->>'l' = 'm1'),
		  (SELECT id FROM cmc WHERE payload->>'l' = 'm2'),
		  -1,
		  (SELECT id FROM cmc WHERE payload->>'l' = 'm3'),
		  (SELECT id FROM cmc WHERE payload->>'l' = 'm4'),
		  (SELECT id FROM cmc WHERE payload->>'l' = 'm4')],
	ARRAY[(SELECT token FROM cmc WHERE payload->>'l' = 'm1'),
		  (SELECT token FROM cmc WHERE payload->>'l' = 'm2') + 1,
		  1,
		  (SELECT token FROM cmc WHERE payload->>'l' = 'm3'),
		  (SELECT token FROM cmc WHERE payload->>'l' = 'm4'),
		  (SELECT token FROM cmc WHERE payload->>'l' = 'm4')]) AS r(id)
ORDER BY 1;
SELECT payload->>'l' AS label, status, finished_at IS NOT NULL AS finished
FROM jobqueue.jobs WHERE id IN (SELECT id FROM cmc) ORDER BY 1;
-- m2 with its right token
SELECT count(*) FROM jobqueue.jq_complete_many(
	ARRAY(SELECT id FROM cmc WHERE payload->>'l' = 'm2'),
	ARRAY(SELECT token FROM cmc WHERE payload->>'l' = 'm2'));
-- all four again: they are completed already, nothing comes back
SELECT count(*) FROM jobqueue.jq_complete_many(
	ARRAY(SELECT id FROM cmc ORDER BY id), ARRAY(SELECT token FROM cmc ORDER BY id));
SELECT status, count(*) FROM jobqueue.jobs WHERE id IN (SELECT id FROM cmc) GROUP BY 1;
-- empty arrays: no rows
SELECT count(*) FROM jobqueue.jq_complete_many('{}', '{}');

-- bad arrays: an error, and nothing completed (cur holds the job and token
-- for the statements run by try())
SELECT jobqueue.jq_enqueue('q_sm', '{"l": "cm-err"}') AS jcm \gset
CREATE TEMP TABLE cur AS SELECT id, token FROM jobqueue.jq_claim('q_sm', 1, 'w1');
SELECT token AS tcm FROM cur \gset
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('more ids than tokens',  $$SELECT jobqueue.jq_complete_many(ARRAY[(SELECT id FROM cur), 1], ARRAY[(SELECT token FROM cur)])$$),
	('more tokens than ids',  $$SELECT jobqueue.jq_complete_many(ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur), 1])$$),
	('ids empty',             $$SELECT jobqueue.jq_complete_many('{}', ARRAY[(SELECT token FROM cur)])$$),
	('null ids',              $$SELECT jobqueue.jq_complete_many(NULL, ARRAY[(SELECT token FROM cur)])$$),
	('null tokens',           $$SELECT jobqueue.jq_complete_many(ARRAY[(SELECT id FROM cur)], NULL)$$),
	('null id element',       $$SELECT jobqueue.jq_complete_many(ARRAY[(SELECT id FROM cur), NULL], ARRAY[(SELECT token FROM cur), 1])$$),
	('null token element',    $$SELECT jobqueue.jq_complete_many(ARRAY[(SELECT id FROM cur), 1], ARRAY[(SELECT token FROM cur), NULL])$$),
	('two dimensions',        $$SELECT jobqueue.jq_complete_many(ARRAY[[(SELECT id FROM cur), 1]], ARRAY[[(SELECT token FROM cur), 1]])$$)
) v(what, stmt);
SELECT status FROM jobqueue.jobs WHERE id = :jcm;
SELECT jobqueue.jq_complete_many(ARRAY[:jcm, 1]::bigint[], ARRAY[:tcm]::bigint[]);
\echo :LAST_ERROR_SQLSTATE
SELECT jobqueue.jq_complete_many(ARRAY[:jcm]::bigint[], ARRAY[:tcm]::bigint[]) = :jcm AS completed;
SELECT status FROM jobqueue.jobs WHERE id = :jcm;

--
-- running -> pending with backoff: the delay of attempt a is
-- min(backoff_max, backoff_base * 2^(a-1)), times a random factor in
-- [0.5, 1] ("equal jitter").  Here base 10 s and max 1 min: 5-10 s,
-- 10-20 s, 20-40 s, then 30-60 s.  20 jobs fail each attempt; each one's
-- delay is measured from the time of its failure in the error history.
--
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_sm',
	ARRAY(SELECT jsonb_build_object('l', 'backoff', 'n', i) FROM generate_series(1, 20) i));
CREATE TEMP TABLE backoff (attempt int, status jobqueue.job_status, delay interval);
CREATE FUNCTION pg_temp.fail_round() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	UPDATE jobqueue.jobs SET available_at = now() - interval '1 second'
	WHERE queue_name = 'q_sm' AND status = 'pending' AND payload->>'l' = 'backoff';
	FOR r IN SELECT * FROM jobqueue.jq_claim('q_sm', 100, 'w-backoff') LOOP
		PERFORM jobqueue.jq_fail(r.id, r.token, 'TIMEOUT', 'attempt ' || r.attempt);
	END LOOP;
	INSERT INTO backoff
	SELECT j.attempt_count, j.status,
		   CASE WHEN j.status = 'pending'
		   THEN j.available_at - (j.errors->-1->>'at')::timestamptz END
	FROM jobqueue.jobs j WHERE queue_name = 'q_sm' AND payload->>'l' = 'backoff';
END
$$;
SELECT pg_temp.fail_round();
SELECT pg_temp.fail_round();
SELECT pg_temp.fail_round();
SELECT pg_temp.fail_round();
SELECT attempt, status, count(*),
       bool_and(delay >= v.lo AND delay <= v.hi) AS within_bounds,
       count(DISTINCT delay) > 1 AS jittered
FROM backoff JOIN (VALUES (1, '5 s'::interval, '10 s'::interval), (2, '10 s', '20 s'),
	(3, '20 s', '40 s'), (4, '30 s', '60 s')) v(a, lo, hi) ON v.a = backoff.attempt
GROUP BY 1, 2 ORDER BY 1;
-- the state of a job waiting for its retry
SELECT status, attempt_count, lease_owner, lease_expires_at, finished_at,
       last_error_code, jsonb_array_length(errors) AS errors,
       (errors->-1) - 'at' AS last_error,
       (errors->-1->>'at')::timestamptz <= clock_timestamp() AS at_is_past
FROM jobqueue.jobs WHERE queue_name = 'q_sm' AND payload = '{"l": "backoff", "n": 1}';
-- the fifth failure exhausts max_attempts (5): dead
SELECT pg_temp.fail_round();
SELECT status, attempt_count, count(*),
       bool_and(finished_at IS NOT NULL) AS finished,
       bool_and(lease_owner IS NULL AND lease_expires_at IS NULL) AS no_lease,
       bool_and(jsonb_array_length(errors) = 5) AS five_errors,
       bool_and(errors->-1->>'message' = 'attempt 5') AS last_message
FROM jobqueue.jobs WHERE queue_name = 'q_sm' AND payload->>'l' = 'backoff'
GROUP BY 1, 2;
-- and a dead job is not claimed again
SELECT count(*) FROM jobqueue.jq_claim('q_sm', 100, 'w');

-- retry_in overrides the backoff (exactly), zero included
SELECT jobqueue.jq_enqueue('q_sm', '{"l": "retry_in"}') AS jid \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_sm', 1, 'w1') \gset
SELECT jobqueue.jq_fail(:jid, :tok, 'RATE_LIMITED', retry_in => '3 hours');
SELECT status, available_at - (errors->-1->>'at')::timestamptz AS delay
FROM jobqueue.jobs WHERE id = :jid;
UPDATE jobqueue.jobs SET available_at = now() WHERE id = :jid;
SELECT token AS tok FROM jobqueue.jq_claim('q_sm', 1, 'w1') \gset
SELECT jobqueue.jq_fail(:jid, :tok, 'RATE_LIMITED', retry_in => '0');
SELECT status, available_at - (errors->-1->>'at')::timestamptz AS delay
FROM jobqueue.jobs WHERE id = :jid;

-- retryable => false: dead at once, with attempts left, retry_in or not
SELECT token AS tok FROM jobqueue.jq_claim('q_sm', 1, 'w1') \gset
SELECT jobqueue.jq_fail(:jid, :tok, 'BAD_INPUT', 'cannot parse', retryable => false,
	retry_in => '1 second');
SELECT status, attempt_count, max_attempts, last_error_code,
       finished_at = (errors->-1->>'at')::timestamptz AS finished_at_failure,
       jsonb_path_query_array(errors, '$[*].code') AS codes,
       jsonb_path_query_array(errors, '$[*].retryable') AS retryable,
       jsonb_path_query_array(errors, '$[*].attempt') AS attempts,
       jsonb_path_query_array(errors, '$[*].owner') AS owners
FROM jobqueue.jobs WHERE id = :jid;

-- max_attempts of 1: the first failure is the last
SELECT jobqueue.jq_enqueue('q_sm', '{"l": "once"}', max_attempts => 1) AS jid \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_sm', 1, 'w1') \gset
SELECT jobqueue.jq_fail(:jid, :tok, 'E');
-- a failure without a message records a null message
SELECT errors->-1->'message' AS message, errors->-1->>'code' AS code
FROM jobqueue.jobs WHERE id = :jid;

-- bad input to jq_fail: an error, and the job stays running
SELECT jobqueue.jq_enqueue('q_sm', '{"l": "fail-args"}') AS jid \gset
TRUNCATE cur;
INSERT INTO cur SELECT id, token FROM jobqueue.jq_claim('q_sm', 1, 'w1');
SELECT token AS tok FROM cur \gset
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('null id',            $$SELECT jobqueue.jq_fail(NULL, (SELECT token FROM cur), 'E')$$),
	('null token',         $$SELECT jobqueue.jq_fail((SELECT id FROM cur), NULL, 'E')$$),
	('null code',          $$SELECT jobqueue.jq_fail((SELECT id FROM cur), (SELECT token FROM cur), NULL)$$),
	('empty code',         $$SELECT jobqueue.jq_fail((SELECT id FROM cur), (SELECT token FROM cur), '')$$),
	('code of 129 bytes',  $$SELECT jobqueue.jq_fail((SELECT id FROM cur), (SELECT token FROM cur), repeat('E', 129))$$),
	('null retryable',     $$SELECT jobqueue.jq_fail((SELECT id FROM cur), (SELECT token FROM cur), 'E', 'm', NULL)$$),
	('negative retry_in',  $$SELECT jobqueue.jq_fail((SELECT id FROM cur), (SELECT token FROM cur), 'E', 'm', true, '-1 second')$$),
	('retry_in 200 years', $$SELECT jobqueue.jq_fail((SELECT id FROM cur), (SELECT token FROM cur), 'E', 'm', true, '200 years')$$)
) v(what, stmt);
SELECT status, attempt_count, jsonb_array_length(errors) AS errors
FROM jobqueue.jobs WHERE id = :jid;
-- a code of 128 bytes is fine
SELECT jobqueue.jq_fail(:jid, :tok, repeat('E', 128), retry_in => '0');

--
-- error messages are cut to jobqueue.max_error_length bytes, on a UTF-8
-- character boundary
--
SHOW jobqueue.max_error_length;
SET jobqueue.max_error_length = 16;
CREATE FUNCTION pg_temp.fail_with(msg text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	r record;
	kept text;
BEGIN
	SELECT * INTO r FROM jobqueue.jq_claim('q_sm', 1, 'w-msg');
	PERFORM jobqueue.jq_fail(r.id, r.token, 'E', msg, retry_in => '0');
	SELECT errors->-1->>'message' INTO kept FROM jobqueue.jobs WHERE id = r.id;
	RETURN kept;
END
$$;
SELECT jobqueue.jq_enqueue('q_sm', '{"l": "messages"}', max_attempts => 100) AS jid \gset
SELECT m.what, octet_length(m.msg) AS bytes_in, k AS kept, octet_length(k) AS bytes_kept,
       length(k) AS chars_kept
FROM (VALUES
	('16 ASCII bytes',          repeat('a', 16)),
	('17 ASCII bytes',          repeat('a', 17)),
	('15 + 2-byte character',   repeat('a', 15) || 'é'),
	('14 + 2-byte character',   repeat('a', 14) || 'éz'),
	('3-byte characters',       repeat('€', 10)),
	('4-byte characters',       repeat('😀', 5)),
	('1 + 4-byte characters',   'a' || repeat('😀', 5)),
	('empty',                   '')
) m(what, msg), LATERAL pg_temp.fail_with(m.msg) k;
RESET jobqueue.max_error_length;
-- the default keeps 2048 bytes
SELECT octet_length(pg_temp.fail_with(repeat('ж', 2000))) AS bytes_kept;
SET jobqueue.max_error_length = 15;
\echo :LAST_ERROR_SQLSTATE

--
-- jobqueue.error_history: only the newest N failures are kept
--
SHOW jobqueue.error_history;
SET jobqueue.error_history = 3;
SELECT pg_temp.fail_with('failure ' || i) FROM generate_series(1, 5) i;
SELECT jsonb_array_length(errors) AS entries,
       jsonb_path_query_array(errors, '$[*].message') AS messages,
       jsonb_path_query_array(errors, '$[*].attempt') AS attempts
FROM jobqueue.jobs WHERE id = :jid;
SET jobqueue.error_history = 1;
SELECT pg_temp.fail_with('the last one');
SELECT errors - 0 AS rest, errors->0->>'message' AS message FROM jobqueue.jobs WHERE id = :jid;
RESET jobqueue.error_history;
SET jobqueue.error_history = 0;
\echo :LAST_ERROR_SQLSTATE
SELECT attempt_count FROM jobqueue.jobs WHERE id = :jid;

SELECT jobqueue.jq_drop_queue('q_sm', force => true);
