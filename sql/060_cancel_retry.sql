--
-- jq_cancel, and replay of dead or cancelled jobs: jq_retry, jq_retry_dead.
--

SELECT jobqueue.jq_create_queue('q_cr', max_attempts => 2);
SELECT jobqueue.jq_create_queue('q_cr_other', max_attempts => 1);

--
-- jq_cancel
--
-- a pending job
SELECT jobqueue.jq_enqueue('q_cr', '{"l": "c-pending"}') AS jid \gset
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_cancel(:jid) AS cancelled;
SELECT status, finished_at BETWEEN :'t0' AND clock_timestamp() AS finished_now,
       lease_expires_at FROM jobqueue.jobs WHERE id = :jid;
SELECT count(*) AS claimed FROM jobqueue.jq_claim('q_cr', 10, 'w');
-- a running job: the worker's later calls are fenced
SELECT jobqueue.jq_enqueue('q_cr', '{"l": "c-running"}') AS jid \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_cr', 1, 'w') \gset
SELECT jobqueue.jq_cancel(:jid) AS cancelled;
SELECT test_helpers.job_row(:jid) AS before \gset
SELECT jobqueue.jq_complete(:jid, :tok) AS complete,
       jobqueue.jq_heartbeat(:jid, :tok) AS heartbeat,
       jobqueue.jq_fail(:jid, :tok, 'E') AS fail,
       jobqueue.jq_release(:jid, :tok) AS release;
SELECT count(*) AS complete_many
FROM jobqueue.jq_complete_many(ARRAY[:jid]::bigint[], ARRAY[:tok]::bigint[]);
SELECT test_helpers.job_row(:jid) = :'before' AS unchanged;
SELECT status, attempt_count, lease_expires_at FROM jobqueue.jobs WHERE id = :jid;
-- the reaper leaves a cancelled job alone
SELECT jobqueue.jq_reap() AS reaped;
-- only pending and running jobs can be cancelled
SELECT jobqueue.jq_cancel(:jid) AS cancel_cancelled;
SELECT jobqueue.jq_enqueue('q_cr', '{"l": "c-done"}') AS jdone \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_cr', 1, 'w') \gset
SELECT jobqueue.jq_complete(:jdone, :tok);
SELECT jobqueue.jq_cancel(:jdone) AS cancel_succeeded;
SELECT status FROM jobqueue.jobs WHERE id = :jdone;
SELECT jobqueue.jq_cancel(-1) AS cancel_missing;
SELECT jobqueue.jq_cancel(NULL);
\echo :LAST_ERROR_SQLSTATE

--
-- jq_retry: replay a dead or cancelled job with the same id
--
SELECT jobqueue.jq_enqueue('q_cr', '{"l": "dead"}') AS jdead \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_cr', 1, 'w1') \gset
SELECT jobqueue.jq_fail(:jdead, :tok, 'E1', 'first', retry_in => '0');
SELECT token AS tok FROM jobqueue.jq_claim('q_cr', 1, 'w2') \gset
SELECT jobqueue.jq_fail(:jdead, :tok, 'E2', 'second');
SELECT status, attempt_count, jsonb_array_length(errors) AS errors FROM jobqueue.jobs WHERE id = :jdead;
-- a dead job is not cancelled
SELECT jobqueue.jq_cancel(:jdead) AS cancel_dead;
SELECT clock_timestamp() AS t0 \gset
SELECT jobqueue.jq_retry(:jdead) AS replayed;
SELECT status, attempt_count, max_attempts, finished_at, started_at, lease_owner,
       lease_expires_at, last_error_code,
       available_at BETWEEN :'t0' AND clock_timestamp() AS ready_now,
       jsonb_array_length(errors) AS entries,
       jsonb_path_query_array(errors, '$[*].code') AS codes,
       (errors->-1) - 'at' - 'by' AS replay_entry,
       errors->-1->>'by' = current_user AS by_current_user,
       (errors->-1->>'at')::timestamptz BETWEEN :'t0' AND clock_timestamp() AS at_now
FROM jobqueue.jobs WHERE id = :jdead;
-- replayed: a fresh count of attempts, a new token
SELECT attempt, token > :tok AS new_token FROM jobqueue.jq_claim('q_cr', 1, 'w3');
-- only dead and cancelled jobs are replayed: this one is running now
SELECT jobqueue.jq_retry(:jdead) AS retry_running;
SELECT jobqueue.jq_retry(:jdone) AS retry_succeeded;
SELECT jobqueue.jq_enqueue('q_cr', '{"l": "pending"}') AS jpending \gset
SELECT jobqueue.jq_retry(:jpending) AS retry_pending;
SELECT jobqueue.jq_retry(-1) AS retry_missing;
-- a cancelled job, replayed at a given time
SELECT jobqueue.jq_enqueue('q_cr', '{"l": "cancelled"}') AS jc \gset
SELECT jobqueue.jq_cancel(:jc);
BEGIN;
SELECT jobqueue.jq_retry(:jc, run_at => now() + interval '2 hours') AS replayed;
SELECT status, available_at = now() + interval '2 hours' AS at_run_at, finished_at,
       (errors->-1) - 'at' - 'by' AS replay_entry
FROM jobqueue.jobs WHERE id = :jc;
COMMIT;
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('retry: null id',         $$SELECT jobqueue.jq_retry(NULL)$$),
	('retry: run_at infinity', $$SELECT jobqueue.jq_retry(1, 'infinity')$$)
) v(what, stmt);

--
-- jq_retry_dead: bulk replay, oldest dead first, optionally by error code
--
SELECT jobqueue.jq_drop_queue('q_cr', force => true);
SELECT jobqueue.jq_create_queue('q_cr', max_attempts => 1);
-- claim the next job of a queue and fail it with code
CREATE FUNCTION pg_temp.fail_next(queue text, code text) RETURNS jobqueue.job_status
LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	SELECT * INTO r FROM jobqueue.jq_claim(queue, 1, 'w');
	RETURN jobqueue.jq_fail(r.id, r.token, code);
END
$$;
-- a new job of q_cr that fails at its first attempt (max_attempts 1)
CREATE FUNCTION pg_temp.kill(label text, code text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM jobqueue.jq_enqueue('q_cr', jsonb_build_object('l', label));
	PERFORM pg_temp.fail_next('q_cr', code);
END
$$;
SELECT pg_temp.kill('d1', 'A'), pg_temp.kill('d2', 'B'), pg_temp.kill('d3', 'A'),
       pg_temp.kill('d4', 'B'), pg_temp.kill('d5', 'A');
-- a dead job in another queue is not touched
SELECT jobqueue.jq_enqueue('q_cr_other', '{"l": "other"}') AS jother \gset
SELECT token AS tok FROM jobqueue.jq_claim('q_cr_other', 1, 'w') \gset
SELECT jobqueue.jq_fail(:jother, :tok, 'A');
SELECT payload->>'l' AS label, status, last_error_code FROM jobqueue.jobs
WHERE queue_name = 'q_cr' ORDER BY 1;
SELECT jobqueue.jq_retry_dead('q_cr', 'B') AS replayed;
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name = 'q_cr' AND status = 'pending' ORDER BY 1;
SELECT jobqueue.jq_retry_dead('q_cr', 'NO_SUCH_CODE') AS replayed;
-- at most max_jobs, the oldest dead first
SELECT jobqueue.jq_retry_dead('q_cr', max_jobs => 2) AS replayed;
SELECT payload->>'l' AS label, status FROM jobqueue.jobs
WHERE queue_name = 'q_cr' ORDER BY 1;
SELECT jobqueue.jq_retry_dead('q_cr') AS replayed;
SELECT jobqueue.jq_retry_dead('q_cr') AS replayed;
SELECT payload->>'l' AS label, status, attempt_count,
       jsonb_array_length(errors) AS entries,
       jsonb_path_query_array(errors, '$[*].code') AS codes,
       jsonb_path_query_array(errors, '$[*].event') AS events,
       jsonb_path_query_array(errors, '$[*].previous_status') AS previous
FROM jobqueue.jobs WHERE queue_name IN ('q_cr', 'q_cr_other') ORDER BY 1;
-- the history stays bounded by jobqueue.error_history, replays included
SELECT jobqueue.jq_create_queue('q_cr_hist', max_attempts => 1);
SELECT jobqueue.jq_enqueue('q_cr_hist', '{"l": "h"}') AS jh \gset
SET jobqueue.error_history = 2;
SELECT pg_temp.fail_next('q_cr_hist', 'X');
SELECT jobqueue.jq_retry_dead('q_cr_hist', 'X') AS replayed;
SELECT pg_temp.fail_next('q_cr_hist', 'Y');
SELECT jobqueue.jq_retry(:jh) AS replayed;
SELECT jsonb_array_length(errors) AS entries,
       jsonb_path_query_array(errors, '$[*].code') AS codes,
       jsonb_path_query_array(errors, '$[*].event') AS events
FROM jobqueue.jobs WHERE id = :jh;
RESET jobqueue.error_history;
SELECT jobqueue.jq_drop_queue('q_cr_hist', force => true);

SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('unknown queue',   $$SELECT jobqueue.jq_retry_dead('nosuchqueue')$$),
	('null queue',      $$SELECT jobqueue.jq_retry_dead(NULL)$$),
	('bad queue name',  $$SELECT jobqueue.jq_retry_dead('q/cr')$$),
	('empty code',      $$SELECT jobqueue.jq_retry_dead('q_cr', '')$$),
	('max_jobs 0',      $$SELECT jobqueue.jq_retry_dead('q_cr', NULL, 0)$$),
	('max_jobs null',   $$SELECT jobqueue.jq_retry_dead('q_cr', NULL, NULL)$$)
) v(what, stmt);

SELECT jobqueue.jq_drop_queue('q_cr', force => true);
SELECT jobqueue.jq_drop_queue('q_cr_other', force => true);
