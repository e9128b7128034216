--
-- jq_claim: claim order, batch size, leases, paused queues, bad input.
--

SELECT jobqueue.jq_create_queue('q_claim', lease_duration => '2 minutes',
	max_runtime => '90 seconds');
SELECT jobqueue.jq_create_queue('q_claim_other');

-- an empty queue gives no rows (and no made-up row)
SELECT * FROM jobqueue.jq_claim('q_claim', 5, 'w1');

-- jobs with a label in the payload, in one transaction so that the run_at
-- values share one now(); a job given no run_at is available from the clock
-- time of its enqueue, so these are in the order they were enqueued
BEGIN;
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "p0-a"}') IS NOT NULL AS ok;
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "p0-b"}') IS NOT NULL AS ok;
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "p5"}', priority => 5) IS NOT NULL AS ok;
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "p0-old"}', run_at => now() - interval '1 hour') IS NOT NULL AS ok;
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "p-3"}', priority => -3) IS NOT NULL AS ok;
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "p9-later"}', priority => 9, run_at => now() + interval '1 hour') IS NOT NULL AS ok;
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "p5-old"}', priority => 5, run_at => now() - interval '1 minute') IS NOT NULL AS ok;
-- same priority and available_at: the lower id first
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_claim',
	ARRAY['{"l": "same-1"}', '{"l": "same-2"}']::jsonb[],
	priority => 1, run_at => now() - interval '1 second');
COMMIT;
SELECT jobqueue.jq_enqueue('q_claim_other', '{"l": "other"}') IS NOT NULL AS ok;

-- claim order: highest priority, then oldest available_at, then id; the job
-- scheduled for later is not ready, the other queue's job is not seen
-- (the claimed rows are kept in a table: a statement does not see the
-- changes of the functions it calls)
CREATE TEMP TABLE c1 AS
SELECT * FROM jobqueue.jq_claim('q_claim', 3, 'worker-1')
	WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, traceparent,
		tracestate, trace_origin, ord);
SELECT c.ord, c.payload->>'l' AS label, c.attempt, c.token,
       c.lease_expires_at = j.lease_expires_at AS expiry_as_stored,
       c.lease_expires_at = j.started_at + interval '90 seconds' AS capped_by_max_runtime
FROM c1 c JOIN jobqueue.jobs j USING (id) ORDER BY c.ord;
SELECT payload->>'l' AS label, status, attempt_count, lease_owner, lease_token,
       started_at IS NOT NULL AS started,
       lease_expires_at - started_at AS lease
FROM jobqueue.jobs WHERE queue_name = 'q_claim' AND status = 'running'
ORDER BY priority DESC, available_at, id;
-- the rest, in order, with a lease shorter than the queue's
SELECT c.payload->>'l' AS label, c.attempt, c.token,
       c.lease_expires_at > clock_timestamp() AS lease_in_future,
       c.lease_expires_at <= clock_timestamp() + interval '30 seconds' AS lease_30s
FROM jobqueue.jq_claim('q_claim', 100, 'worker-2', interval '30 seconds') c;
SELECT lease_owner, count(*), min(lease_expires_at - started_at), max(lease_expires_at - started_at)
FROM jobqueue.jobs WHERE queue_name = 'q_claim' AND status = 'running'
GROUP BY 1 ORDER BY 1;
-- nothing left that is ready
SELECT count(*) FROM jobqueue.jq_claim('q_claim', 100, 'worker-3');
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name = 'q_claim' AND status = 'pending';
-- the lease returned is the lease stored, and the started_at is the claim's
-- database time (not the transaction's start)
BEGIN;
SELECT pg_sleep(0.01);
SELECT lease_expires_at AS expiry FROM jobqueue.jq_claim('q_claim_other', 1, 'w') \gset
SELECT lease_expires_at = :'expiry' AS same_expiry,
       started_at > now() AS started_after_transaction_start,
       started_at <= clock_timestamp() AS started_before_now
FROM jobqueue.jobs j WHERE payload->>'l' = 'other';
COMMIT;

-- the lease is the queue's lease_duration when it is below max_runtime
SELECT jobqueue.jq_alter_queue('q_claim', max_runtime => '1 hour');
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "default-lease"}') IS NOT NULL AS ok;
SELECT count(*) FROM jobqueue.jq_claim('q_claim', 1, 'w');
SELECT lease_expires_at - started_at AS lease FROM jobqueue.jobs
WHERE payload->>'l' = 'default-lease';
-- and a longer lease asked for is capped at max_runtime
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "long-lease"}') IS NOT NULL AS ok;
SELECT count(*) FROM jobqueue.jq_claim('q_claim', 1, 'w', interval '5 hours');
SELECT lease_expires_at - started_at AS lease FROM jobqueue.jobs
WHERE payload->>'l' = 'long-lease';

-- a paused queue hands out nothing, and is back on resume
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "paused-1"}') IS NOT NULL AS ok;
SELECT jobqueue.jq_pause_queue('q_claim');
SELECT * FROM jobqueue.jq_claim('q_claim', 10, 'w');
SELECT status FROM jobqueue.jobs WHERE payload->>'l' = 'paused-1';
SELECT jobqueue.jq_resume_queue('q_claim');
SELECT payload->>'l' AS label, attempt, token FROM jobqueue.jq_claim('q_claim', 10, 'w');

-- a job is claimed again after a retry: attempt and token go up
SELECT jobqueue.jq_enqueue('q_claim', '{"l": "again"}') AS jid \gset
SELECT attempt, token FROM jobqueue.jq_claim('q_claim', 1, 'w');
SELECT jobqueue.jq_fail(:jid, 1, 'E', retry_in => '0');
SELECT attempt, token FROM jobqueue.jq_claim('q_claim', 1, 'w');
SELECT jobqueue.jq_fail(:jid, 2, 'E', retry_in => '0');
SELECT attempt, token FROM jobqueue.jq_claim('q_claim', 1, 'w');

-- jobqueue.max_claim_batch
SHOW jobqueue.max_claim_batch;
SET jobqueue.max_claim_batch = 2;
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_claim', ARRAY['{"l": "b1"}', '{"l": "b2"}', '{"l": "b3"}']::jsonb[]);
SELECT count(*) FROM jobqueue.jq_claim('q_claim', 2, 'w');
SELECT * FROM jobqueue.jq_claim('q_claim', 3, 'w');
\echo :LAST_ERROR_SQLSTATE
RESET jobqueue.max_claim_batch;
SELECT * FROM jobqueue.jq_claim('q_claim', 1001, 'w');
\echo :LAST_ERROR_SQLSTATE
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name = 'q_claim' AND status = 'pending';

-- bad input: an error with its SQLSTATE, and nothing claimed
SELECT count(*) AS running_before FROM jobqueue.jobs WHERE status = 'running' \gset
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('unknown queue',   $$SELECT jobqueue.jq_claim('nosuchqueue', 1, 'w')$$),
	('null queue',      $$SELECT jobqueue.jq_claim(NULL, 1, 'w')$$),
	('bad queue name',  $$SELECT jobqueue.jq_claim('q claim', 1, 'w')$$),
	('n 0',             $$SELECT jobqueue.jq_claim('q_claim', 0, 'w')$$),
	('n negative',      $$SELECT jobqueue.jq_claim('q_claim', -1, 'w')$$),
	('n null',          $$SELECT jobqueue.jq_claim('q_claim', NULL, 'w')$$),
	('owner null',      $$SELECT jobqueue.jq_claim('q_claim', 1, NULL)$$),
	('owner empty',     $$SELECT jobqueue.jq_claim('q_claim', 1, '')$$),
	('owner too long',  $$SELECT jobqueue.jq_claim('q_claim', 1, repeat('o', 257))$$),
	('lease 0',         $$SELECT jobqueue.jq_claim('q_claim', 1, 'w', '0')$$),
	('lease negative',  $$SELECT jobqueue.jq_claim('q_claim', 1, 'w', '-1 minute')$$),
	('lease too long',  $$SELECT jobqueue.jq_claim('q_claim', 1, 'w', '200 years')$$)
) v(what, stmt);
SELECT count(*) - :running_before AS claimed FROM jobqueue.jobs WHERE status = 'running';
SELECT * FROM jobqueue.jq_claim('q_claim', 1, 'w', '0');
\echo :LAST_ERROR_SQLSTATE
-- an owner of 256 bytes is fine
SELECT count(*) FROM jobqueue.jq_claim('q_claim', 1, repeat('o', 256));

SELECT jobqueue.jq_drop_queue('q_claim', force => true);
SELECT jobqueue.jq_drop_queue('q_claim_other', force => true);
