--
-- jq_reap (expired leases back to pending, or dead) and jq_purge (finished
-- jobs past their retention).
--

SELECT jobqueue.jq_create_queue('q_reap', max_attempts => 2,
	backoff_base => '20 seconds', backoff_max => '1 hour');

--
-- jq_reap
--
-- nothing to reap
SELECT jobqueue.jq_reap() AS reaped;
-- three jobs: two leases expire, one is still valid
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_reap',
	ARRAY['{"l": "r1"}', '{"l": "r2"}', '{"l": "r3"}']::jsonb[]);
SELECT count(*) FROM jobqueue.jq_claim('q_reap', 2, 'crashed-worker', '10 milliseconds');
SELECT count(*) FROM jobqueue.jq_claim('q_reap', 1, 'live-worker', '1 hour');
SELECT pg_sleep(0.05);
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_reap() AS reaped;
-- back to pending with backoff (attempt 1: 10 to 20 seconds after the reap),
-- LEASE_EXPIRED at the end of the history
SELECT payload->>'l' AS label, status, attempt_count, lease_owner,
       lease_expires_at IS NULL AS no_lease, finished_at, last_error_code,
       available_at - (errors->-1->>'at')::timestamptz BETWEEN '10 s' AND '20 s' AS backoff,
       (errors->-1->>'at')::timestamptz BETWEEN :'t0' AND clock_timestamp() AS reaped_now,
       (errors->-1) - 'at' - 'message' AS entry,
       errors->-1->>'message' LIKE 'lease expired at %' AS message
FROM jobqueue.jobs WHERE queue_name = 'q_reap' ORDER BY 1;
-- a second pass finds nothing
SELECT jobqueue.jq_reap() AS reaped;
-- the reaped attempt counted: the second expiry exhausts max_attempts (2)
UPDATE jobqueue.jobs SET available_at = now()
WHERE queue_name = 'q_reap' AND status = 'pending';
SELECT attempt, payload->>'l' AS label
FROM jobqueue.jq_claim('q_reap', 10, 'crashed-again', '10 milliseconds') ORDER BY 2;
SELECT pg_sleep(0.05);
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_reap() AS reaped;
SELECT payload->>'l' AS label, status, attempt_count, last_error_code,
       finished_at BETWEEN :'t0' AND clock_timestamp() AS finished_now,
       jsonb_path_query_array(errors, '$[*].code') AS codes,
       jsonb_path_query_array(errors, '$[*].owner') AS owners
FROM jobqueue.jobs WHERE queue_name = 'q_reap' ORDER BY 1;
-- max_jobs bounds a batch; the oldest expiries go first
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_reap',
	ARRAY['{"l": "b1"}', '{"l": "b2"}', '{"l": "b3"}']::jsonb[]);
SELECT count(*) FROM jobqueue.jq_claim('q_reap', 3, 'w', '1 hour');
UPDATE jobqueue.jobs SET lease_expires_at = now() - (payload->>'l' = 'b2')::int * interval '1 minute' - interval '1 second'
WHERE queue_name = 'q_reap' AND payload->>'l' LIKE 'b%';
SELECT jobqueue.jq_reap(1) AS reaped;
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name = 'q_reap' AND payload->>'l' LIKE 'b%' ORDER BY 1;
SELECT jobqueue.jq_reap(10) AS reaped;
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('reap: max_jobs 0',    $$SELECT jobqueue.jq_reap(0)$$),
	('reap: max_jobs null', $$SELECT jobqueue.jq_reap(NULL)$$)
) v(what, stmt);
-- a paused queue's expired leases are reaped too (the jobs wait in pending)
SELECT jobqueue.jq_enqueue('q_reap', '{"l": "p1"}') IS NOT NULL AS ok;
SELECT count(*) FROM jobqueue.jq_claim('q_reap', 1, 'w', '10 milliseconds');
SELECT jobqueue.jq_pause_queue('q_reap');
SELECT pg_sleep(0.05);
SELECT jobqueue.jq_reap() AS reaped;
SELECT status FROM jobqueue.jobs WHERE payload->>'l' = 'p1';
SELECT jobqueue.jq_drop_queue('q_reap', force => true);

--
-- jq_purge: succeeded and cancelled jobs finished longer ago than
-- older_than (default: the queue's retention), at most max_jobs
--
SELECT jobqueue.jq_create_queue('q_purge', retention => '1 day', max_attempts => 1);
SELECT jobqueue.jq_create_queue('q_purge_other', retention => '1 day');
CREATE FUNCTION pg_temp.make(queue text, label text, final jobqueue.job_status, age interval)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	job bigint := jobqueue.jq_enqueue(queue, jsonb_build_object('l', label));
	r record;
BEGIN
	IF final = 'pending' THEN
		-- not ready: later calls claim the job they make
		UPDATE jobqueue.jobs SET available_at = now() + interval '1 day' WHERE id = job;
	ELSE
		SELECT * INTO r FROM jobqueue.jq_claim(queue, 1, 'w');
		IF r.id <> job THEN
			RAISE 'claimed % instead of %', r.id, job;
		END IF;
		IF final = 'succeeded' THEN
			PERFORM jobqueue.jq_complete(r.id, r.token);
		ELSIF final = 'dead' THEN
			PERFORM jobqueue.jq_fail(r.id, r.token, 'E');
		ELSIF final = 'cancelled' THEN
			PERFORM jobqueue.jq_cancel(r.id);
		END IF;
	END IF;
	UPDATE jobqueue.jobs SET finished_at = finished_at - age WHERE id = job;
END
$$;
SELECT pg_temp.make('q_purge', 's-2d', 'succeeded', '2 days'),
       pg_temp.make('q_purge', 's-3d', 'succeeded', '3 days'),
       pg_temp.make('q_purge', 's-1h', 'succeeded', '1 hour'),
       pg_temp.make('q_purge', 'c-2d', 'cancelled', '2 days'),
       pg_temp.make('q_purge', 'd-9d', 'dead', '9 days'),
       pg_temp.make('q_purge', 'r-9d', 'running', '9 days'),
       pg_temp.make('q_purge', 'p', 'pending', '0'),
       pg_temp.make('q_purge_other', 'o-9d', 'succeeded', '9 days');
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name LIKE 'q_purge%' ORDER BY 1;
-- at most max_jobs, the oldest first
SELECT jobqueue.jq_purge('q_purge', max_jobs => 1) AS purged;
SELECT payload->>'l' AS label FROM jobqueue.jobs WHERE queue_name = 'q_purge' ORDER BY 1;
-- the queue's retention (1 day): succeeded and cancelled only, this queue only
SELECT jobqueue.jq_purge('q_purge') AS purged;
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name LIKE 'q_purge%' ORDER BY 1;
SELECT jobqueue.jq_purge('q_purge') AS purged;
-- an explicit older_than
SELECT jobqueue.jq_purge('q_purge', interval '2 hours') AS purged;
SELECT jobqueue.jq_purge('q_purge', interval '30 minutes') AS purged;
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name LIKE 'q_purge%' ORDER BY 1;
-- older_than zero: everything finished so far
SELECT pg_temp.make('q_purge', 's-now', 'succeeded', '0');
SELECT jobqueue.jq_purge('q_purge', interval '0') AS purged;
-- a shorter retention on the queue applies at once
SELECT jobqueue.jq_alter_queue('q_purge_other', retention => '1 hour');
SELECT jobqueue.jq_purge('q_purge_other') AS purged;
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name LIKE 'q_purge%' ORDER BY 1;

SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('unknown queue',       $$SELECT jobqueue.jq_purge('nosuchqueue')$$),
	('null queue',          $$SELECT jobqueue.jq_purge(NULL)$$),
	('negative older_than', $$SELECT jobqueue.jq_purge('q_purge', '-1 day')$$),
	('max_jobs 0',          $$SELECT jobqueue.jq_purge('q_purge', NULL, 0)$$),
	('max_jobs null',       $$SELECT jobqueue.jq_purge('q_purge', NULL, NULL)$$)
) v(what, stmt);

SELECT jobqueue.jq_drop_queue('q_purge', force => true);
SELECT jobqueue.jq_drop_queue('q_purge_other', force => true);
