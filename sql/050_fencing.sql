--
-- Fencing: a stale token or an expired lease is refused by every write and
-- changes nothing.  jq_heartbeat and jq_release.
--

SELECT jobqueue.jq_create_queue('q_fence', lease_duration => '10 minutes',
	max_runtime => '1 hour', max_attempts => 5);

--
-- worker A's lease expires, the job is reaped and claimed by worker B:
-- A's token is stale
--
SELECT jobqueue.jq_enqueue('q_fence', '{"l": "a"}') AS jid \gset
SELECT token AS tok_a FROM jobqueue.jq_claim('q_fence', 1, 'worker-a', '10 milliseconds') \gset
SELECT pg_sleep(0.05);
SELECT jobqueue.jq_reap() >= 1 AS reaped;
UPDATE jobqueue.jobs SET available_at = now() WHERE id = :jid;
SELECT token AS tok_b, attempt FROM jobqueue.jq_claim('q_fence', 1, 'worker-b') \gset
SELECT :tok_b > :tok_a AS new_token, :attempt AS attempt;
SELECT test_helpers.job_row(:jid) AS before \gset
SELECT jobqueue.jq_complete(:jid, :tok_a) AS complete_a;
SELECT count(*) AS complete_many_a
FROM jobqueue.jq_complete_many(ARRAY[:jid]::bigint[], ARRAY[:tok_a]::bigint[]);
SELECT jobqueue.jq_fail(:jid, :tok_a, 'E', 'from a') AS fail_a;
SELECT jobqueue.jq_fail(:jid, :tok_a, 'E', 'from a', retryable => false) AS fail_a;
SELECT jobqueue.jq_heartbeat(:jid, :tok_a) AS heartbeat_a;
SELECT jobqueue.jq_heartbeat(:jid, :tok_a, '1 hour') AS heartbeat_a;
SELECT jobqueue.jq_release(:jid, :tok_a) AS release_a;
-- a token from the future is no better
SELECT jobqueue.jq_complete(:jid, :tok_b + 1) AS complete_future;
SELECT test_helpers.job_row(:jid) = :'before' AS unchanged;
SELECT status, lease_owner, lease_token = :tok_b AS token_b FROM jobqueue.jobs WHERE id = :jid;
-- B, the current holder, is accepted
SELECT jobqueue.jq_heartbeat(:jid, :tok_b) > clock_timestamp() AS heartbeat_b;
SELECT jobqueue.jq_complete(:jid, :tok_b) AS complete_b;
SELECT status, lease_owner FROM jobqueue.jobs WHERE id = :jid;
-- and once the job is done, B's token is refused too
SELECT test_helpers.job_row(:jid) AS before \gset
SELECT jobqueue.jq_complete(:jid, :tok_b) AS complete_b_again,
       jobqueue.jq_fail(:jid, :tok_b, 'E') AS fail_b,
       jobqueue.jq_heartbeat(:jid, :tok_b) AS heartbeat_b,
       jobqueue.jq_release(:jid, :tok_b) AS release_b;
SELECT test_helpers.job_row(:jid) = :'before' AS unchanged;

--
-- an expired lease is refused even with the right token, before any reaper
-- has seen it
--
SELECT jobqueue.jq_enqueue('q_fence', '{"l": "expired"}') AS jid \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_fence', 1, 'worker-c', '10 milliseconds') \gset
SELECT pg_sleep(0.05);
SELECT test_helpers.job_row(:jid) AS before \gset
SELECT status, lease_expires_at < clock_timestamp() AS expired FROM jobqueue.jobs WHERE id = :jid;
SELECT jobqueue.jq_complete(:jid, :tok) AS complete;
SELECT count(*) AS complete_many
FROM jobqueue.jq_complete_many(ARRAY[:jid]::bigint[], ARRAY[:tok]::bigint[]);
SELECT jobqueue.jq_fail(:jid, :tok, 'E') AS fail;
SELECT jobqueue.jq_heartbeat(:jid, :tok) AS heartbeat;
SELECT jobqueue.jq_release(:jid, :tok) AS release;
SELECT test_helpers.job_row(:jid) = :'before' AS unchanged;
-- the same with an expiry set in the past by hand
SELECT jobqueue.jq_enqueue('q_fence', '{"l": "expired-2"}') AS jid \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_fence', 1, 'worker-c') \gset
UPDATE jobqueue.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = :jid;
SELECT jobqueue.jq_complete(:jid, :tok) AS complete;
SELECT status FROM jobqueue.jobs WHERE id = :jid;
-- the reaper takes both back
SELECT jobqueue.jq_reap() AS reaped;
SELECT payload->>'l' AS label, status, last_error_code FROM jobqueue.jobs
WHERE queue_name = 'q_fence' AND payload->>'l' LIKE 'expired%' ORDER BY 1;

--
-- jq_heartbeat
--
SELECT jobqueue.jq_enqueue('q_fence', '{"l": "hb"}') AS jid \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_fence', 1, 'worker-d', '1 minute') \gset
-- without extend: now + the queue's lease_duration (10 minutes)
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_heartbeat(:jid, :tok) AS hb \gset
SELECT :'hb'::timestamptz BETWEEN :'t0'::timestamptz + interval '10 minutes'
                              AND clock_timestamp() + interval '10 minutes' AS lease_duration_from_now,
       lease_expires_at = :'hb' AS stored
FROM jobqueue.jobs WHERE id = :jid;
-- with extend: now + extend, shorter than before is allowed
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_heartbeat(:jid, :tok, '5 minutes') AS hb \gset
SELECT :'hb'::timestamptz BETWEEN :'t0'::timestamptz + interval '5 minutes'
                              AND clock_timestamp() + interval '5 minutes' AS extend_from_now,
       lease_expires_at = :'hb' AS stored
FROM jobqueue.jobs WHERE id = :jid;
-- never past started_at + max_runtime (1 hour)
SELECT jobqueue.jq_heartbeat(:jid, :tok, '5 hours') AS hb \gset
SELECT :'hb'::timestamptz = started_at + interval '1 hour' AS capped,
       lease_expires_at = :'hb' AS stored
FROM jobqueue.jobs WHERE id = :jid;
-- a heartbeat neither counts an attempt nor changes the token
SELECT status, attempt_count, lease_token = :tok AS same_token, lease_owner
FROM jobqueue.jobs WHERE id = :jid;
-- once max_runtime is used up, no more heartbeats: NULL, and the lease is
-- left as it was (to expire)
SELECT jobqueue.jq_alter_queue('q_fence', max_runtime => '10 milliseconds');
SELECT pg_sleep(0.05);
SELECT test_helpers.job_row(:jid) AS before \gset
SELECT jobqueue.jq_heartbeat(:jid, :tok) AS heartbeat;
SELECT jobqueue.jq_heartbeat(:jid, :tok, '1 second') AS heartbeat;
SELECT test_helpers.job_row(:jid) = :'before' AS unchanged;
-- the lease itself is still valid: the work may still complete
SELECT jobqueue.jq_complete(:jid, :tok) AS complete;
SELECT jobqueue.jq_alter_queue('q_fence', max_runtime => '1 hour');
-- a heartbeat on a job that is not running
SELECT jobqueue.jq_enqueue('q_fence', '{"l": "hb-pending"}') AS jid \gset
SELECT jobqueue.jq_heartbeat(:jid, 0) AS heartbeat_pending;
SELECT jobqueue.jq_heartbeat(-1, 1) AS heartbeat_no_job;

SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('heartbeat: null id',       $$SELECT jobqueue.jq_heartbeat(NULL, 1)$$),
	('heartbeat: null token',    $$SELECT jobqueue.jq_heartbeat(1, NULL)$$),
	('heartbeat: extend 0',      $$SELECT jobqueue.jq_heartbeat(1, 1, '0')$$),
	('heartbeat: extend < 0',    $$SELECT jobqueue.jq_heartbeat(1, 1, '-5 seconds')$$),
	('heartbeat: 101 years',     $$SELECT jobqueue.jq_heartbeat(1, 1, '101 years')$$),
	('release: null id',         $$SELECT jobqueue.jq_release(NULL, 1)$$),
	('release: null token',      $$SELECT jobqueue.jq_release(1, NULL)$$),
	('release: null delay',      $$SELECT jobqueue.jq_release(1, 1, NULL)$$),
	('release: delay < 0',       $$SELECT jobqueue.jq_release(1, 1, '-1 second')$$)
) v(what, stmt);

--
-- jq_release gives the attempt back
--
SELECT jobqueue.jq_drop_queue('q_fence', force => true);
SELECT jobqueue.jq_create_queue('q_fence', max_attempts => 1);
SELECT jobqueue.jq_enqueue('q_fence', '{"l": "rel"}') AS jid \gset
SELECT token AS tok, attempt FROM jobqueue.jq_claim('q_fence', 1, 'worker-e') \gset
SELECT :attempt AS attempt, :tok AS token;
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_release(:jid, :tok) AS released;
SELECT status, attempt_count, lease_owner, lease_expires_at, started_at,
       lease_token = :tok AS token_kept, errors,
       available_at BETWEEN :'t0' AND clock_timestamp() AS ready_now
FROM jobqueue.jobs WHERE id = :jid;
-- the released token is stale now
SELECT jobqueue.jq_complete(:jid, :tok) AS complete_released;
SELECT jobqueue.jq_release(:jid, :tok) AS release_again;
-- the next claim is attempt 1 again (max_attempts is 1), with a new token
SELECT token AS tok2, attempt FROM jobqueue.jq_claim('q_fence', 1, 'worker-f') \gset
SELECT :attempt AS attempt, :tok2 > :tok AS new_token;
-- a release with a delay: not claimable until then
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_release(:jid, :tok2, '1 hour') AS released;
SELECT count(*) FROM jobqueue.jq_claim('q_fence', 1, 'worker-g');
SELECT status, attempt_count,
       available_at - interval '1 hour' BETWEEN :'t0' AND clock_timestamp() AS in_one_hour
FROM jobqueue.jobs WHERE id = :jid;
-- released jobs never used an attempt: a failure after them is the first
UPDATE jobqueue.jobs SET available_at = now() WHERE id = :jid;
SELECT token AS tok3, attempt FROM jobqueue.jq_claim('q_fence', 1, 'worker-h') \gset
SELECT :attempt AS attempt;
SELECT jobqueue.jq_fail(:jid, :tok3, 'E') AS status;
SELECT attempt_count, jsonb_array_length(errors) AS errors FROM jobqueue.jobs WHERE id = :jid;

SELECT jobqueue.jq_drop_queue('q_fence', force => true);
