--
-- Queue-first calls: jq_complete(queue_name, id, token, ...) and the other
-- functions that act on one job, in the job's queue; the id-only forms,
-- which read the job's queue first, give the same results.  A job of
-- another queue changes nothing and says so, as a fenced write does; an
-- unknown queue is an error.  Times the statements compute without STABLE
-- functions (backoff with jitter, the heartbeat's cap at max_runtime, the
-- history entries) keep their meaning.
--

SELECT jobqueue.jq_create_queue('q_qf', max_attempts => 5, lease_duration => '1 hour',
	backoff_base => '10 seconds', backoff_max => '1 minute', max_runtime => '2 hours');
SELECT jobqueue.jq_create_queue('q_qf_other');
SELECT jobqueue.jq_counters_reset('q_qf');
SELECT jobqueue.jq_counters_reset('q_qf_other');

--
-- complete
--
SELECT jobqueue.jq_enqueue('q_qf', '{"n": 1}') AS j1 \gset
SELECT token AS t1 FROM jobqueue.jq_claim('q_qf', 1, 'w1') \gset
-- in another queue: not found there, refused, nothing changed (counted
-- as the call of that queue, fenced as an unknown job is)
SELECT jobqueue.jq_complete('q_qf_other', :j1, :t1) AS other_queue;
SELECT status FROM jobqueue.jobs WHERE id = :j1;
SELECT complete_calls, complete_fenced FROM jobqueue.jq_counters()
WHERE queue_name = 'q_qf_other';
-- an unknown queue is an error
SELECT jobqueue.jq_complete('no_such_queue', :j1, :t1);
-- a stale token in the right queue: refused
SELECT jobqueue.jq_complete('q_qf', :j1, :t1 + 1) AS stale;
-- the holder, in its queue
SELECT jobqueue.jq_complete('q_qf', :j1, :t1, '{"r": 1}') AS completed;
SELECT status, result FROM jobqueue.jobs WHERE id = :j1;
SELECT completed, complete_fenced, complete_calls FROM jobqueue.jq_counters()
WHERE queue_name = 'q_qf';

--
-- complete_many: queue-first completes the jobs of that queue only; the
-- id-only form finds each job's queue
--
SELECT jobqueue.jq_enqueue('q_qf', '{"n": 2}') AS j2 \gset
SELECT jobqueue.jq_enqueue('q_qf', '{"n": 3}') AS j3 \gset
SELECT jobqueue.jq_enqueue('q_qf_other', '{"n": 4}') AS j4 \gset
CREATE TEMP TABLE c AS
SELECT id, token FROM jobqueue.jq_claim('q_qf', 2, 'w1')
UNION ALL SELECT id, token FROM jobqueue.jq_claim('q_qf_other', 1, 'w1');
SELECT count(*) AS claimed FROM c;
SELECT array_agg(x ORDER BY x) = ARRAY[:j2, :j3]::bigint[] AS completed_in_queue
FROM jobqueue.jq_complete_many('q_qf', ARRAY(SELECT id FROM c ORDER BY id),
	ARRAY(SELECT token FROM c ORDER BY id)) AS x;
SELECT id = :j4 AS other_queue_job, status FROM jobqueue.jobs
WHERE id IN (SELECT id FROM c) ORDER BY id;
-- by ids alone: the job of the other queue is completed in its queue
SELECT x = :j4 AS completed_by_ids
FROM jobqueue.jq_complete_many(ARRAY(SELECT id FROM c ORDER BY id),
	ARRAY(SELECT token FROM c ORDER BY id)) AS x;
SELECT count(*) FILTER (WHERE status = 'succeeded') AS succeeded FROM jobqueue.jobs
WHERE id IN (SELECT id FROM c);
SELECT count(*) FROM jobqueue.jq_complete_many('no_such_queue', '{1}', '{1}');
-- empty arrays: nothing to do, but the queue must exist
SELECT count(*) FROM jobqueue.jq_complete_many('q_qf', '{}', '{}');
SELECT count(*) FROM jobqueue.jq_complete_many('no_such_queue', '{}', '{}');

--
-- fail: the backoff (10 s doubling, equal jitter) from the job's attempt,
-- the history entry with attempt and owner from the row
--
SELECT jobqueue.jq_enqueue('q_qf', '{"n": 5}') AS j5 \gset
SELECT token AS t5 FROM jobqueue.jq_claim('q_qf', 1, 'w5') \gset
SELECT jobqueue.jq_fail('q_qf_other', :j5, :t5, 'E') AS other_queue;
SELECT status, attempt_count FROM jobqueue.jobs WHERE id = :j5;
SELECT clock_timestamp() AS before \gset
SELECT jobqueue.jq_fail('q_qf', :j5, :t5, 'E1', 'first', error_detail => '{"k": [1, 2]}',
	stack => 'at f') AS status;
SELECT status,
       available_at - (errors->-1->>'at')::timestamptz BETWEEN interval '5 seconds'
         AND interval '10 seconds' AS backoff_with_jitter,
       errors->-1->>'attempt' AS attempt, errors->-1->>'owner' AS owner,
       errors->-1->>'code' AS code, errors->-1->>'message' AS message,
       errors->-1->'retryable' AS retryable, errors->-1->'detail' AS detail,
       errors->-1->>'stack' AS stack,
       (errors->-1->>'at')::timestamptz BETWEEN :'before' AND clock_timestamp() AS at_now,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(errors->-1) AS k) AS keys
FROM jobqueue.jobs WHERE id = :j5;
-- the second attempt backs off 20 s (10 to 20 with jitter), from the id-only form
UPDATE jobqueue.jobs SET available_at = now() WHERE id = :j5;
SELECT token AS t5 FROM jobqueue.jq_claim('q_qf', 1, 'w5') \gset
SELECT jobqueue.jq_fail(:j5, :t5, 'E2', NULL, true) AS status;
SELECT available_at - (errors->-1->>'at')::timestamptz BETWEEN interval '10 seconds'
         AND interval '20 seconds' AS backoff_doubled,
       errors->-1->>'attempt' AS attempt, errors->-1->'message' AS message,
       errors->-1 ? 'detail' AS has_detail, errors->-1 ? 'stack' AS has_stack
FROM jobqueue.jobs WHERE id = :j5;
-- retry_in given: exactly that
UPDATE jobqueue.jobs SET available_at = now() WHERE id = :j5;
SELECT token AS t5 FROM jobqueue.jq_claim('q_qf', 1, 'w5') \gset
SELECT jobqueue.jq_fail('q_qf', :j5, :t5, 'E3', retry_in => '3 minutes') AS status;
SELECT status, available_at = (errors->-1->>'at')::timestamptz + interval '3 minutes'
         AS retry_in_exact,
       jsonb_array_length(errors) AS entries
FROM jobqueue.jobs WHERE id = :j5;

--
-- heartbeat: extended from now, never past started_at + max_runtime
--
SELECT jobqueue.jq_enqueue('q_qf', '{"n": 6}') AS j6 \gset
SELECT token AS t6 FROM jobqueue.jq_claim('q_qf', 1, 'w6') \gset
SELECT jobqueue.jq_heartbeat('q_qf_other', :j6, :t6) IS NULL AS other_queue;
SELECT jobqueue.jq_heartbeat('q_qf', :j6, :t6, '30 minutes') - clock_timestamp()
	BETWEEN interval '29 minutes' AND interval '30 minutes' AS extended;
SELECT jobqueue.jq_heartbeat('q_qf', :j6, :t6, '5 hours') = started_at + interval '2 hours'
	AS capped_at_max_runtime
FROM jobqueue.jobs WHERE id = :j6;
SELECT jobqueue.jq_heartbeat(:j6, :t6) - clock_timestamp()
	BETWEEN interval '59 minutes' AND interval '1 hour' AS id_only_default_lease;
-- once the runtime is used up, refused
UPDATE jobqueue.jobs SET started_at = now() - interval '3 hours' WHERE id = :j6;
SELECT jobqueue.jq_heartbeat('q_qf', :j6, :t6) IS NULL AS runtime_used_up;
SELECT heartbeat_refused FROM jobqueue.jq_counters() WHERE queue_name = 'q_qf';

--
-- progress, release
--
SELECT jobqueue.jq_progress('q_qf_other', :j6, :t6, '{"p": 1}') AS other_queue;
SELECT jobqueue.jq_progress('q_qf', :j6, :t6, '{"p": 1}') AS progressed;
SELECT jobqueue.jq_release('q_qf_other', :j6, :t6) AS other_queue;
SELECT jobqueue.jq_release('q_qf', :j6, :t6, '1 minute') AS released;
SELECT status, progress, available_at - now() BETWEEN interval '59 seconds'
	AND interval '1 minute 1 second' AS delayed
FROM jobqueue.jobs WHERE id = :j6;

--
-- cancel, retry, job
--
SELECT jobqueue.jq_cancel('q_qf_other', :j6) AS other_queue;
SELECT jobqueue.jq_cancel('q_qf', :j6) AS cancelled;
SELECT jobqueue.jq_retry('q_qf_other', :j6) AS other_queue;
SET jobqueue.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
SELECT clock_timestamp() AS before \gset
SELECT jobqueue.jq_retry('q_qf', :j6) AS replayed;
RESET jobqueue.traceparent;
SELECT status, traceparent, errors->-1->>'event' AS event,
       errors->-1->>'previous_status' AS previous_status,
       errors->-1->>'by' = current_user AS by_current_user,
       (errors->-1->>'at')::timestamptz BETWEEN :'before' AND clock_timestamp() AS at_now
FROM jobqueue.jobs WHERE id = :j6;
-- a replay without a session trace context keeps the job's
SELECT jobqueue.jq_cancel(:j6) AS cancelled_by_id;
SELECT jobqueue.jq_retry(:j6) AS replayed_by_id;
SELECT traceparent IS NOT NULL AS trace_kept, errors->-1->>'previous_status' AS previous_status
FROM jobqueue.jobs WHERE id = :j6;
SELECT id = :j6 AS same, queue_name, status FROM jobqueue.jq_job('q_qf', :j6);
SELECT count(*) AS other_queue FROM jobqueue.jq_job('q_qf_other', :j6);
SELECT count(*) AS unknown_id FROM jobqueue.jq_job('q_qf', -1);

-- id-only calls on an unknown id change nothing and say so
SELECT jobqueue.jq_complete(-1, 1) AS complete, jobqueue.jq_fail(-1, 1, 'E') AS fail,
       jobqueue.jq_heartbeat(-1, 1) AS heartbeat, jobqueue.jq_release(-1, 1) AS release,
       jobqueue.jq_progress(-1, 1, '{}') AS progress, jobqueue.jq_cancel(-1) AS cancel,
       jobqueue.jq_retry(-1) AS retry;

SELECT jobqueue.jq_drop_queue('q_qf', force => true);
SELECT jobqueue.jq_drop_queue('q_qf_other', force => true);
