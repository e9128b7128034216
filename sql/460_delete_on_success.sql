--
-- Queues that keep no history (retention zero): a job that succeeds is
-- deleted by the statement that completes it.  Fencing, counters, results,
-- dependencies, idempotency keys, dead and cancelled jobs (kept), and
-- jq_alter_queue to and from zero.  The notifications of notify_finished
-- are checked by test/t/050_finished_notify.pl (their sender's PID is in
-- psql's output).  Counter events are published when a transaction ends,
-- so each step is its own transaction.
--
SET client_min_messages = warning;
SELECT jobqueue.jq_create_queue('q_dos', max_attempts => 2, lease_duration => '1 hour',
	retention => '0');
SELECT jobqueue.jq_create_queue('q_keep', max_attempts => 2, lease_duration => '1 hour');
SELECT queue_name, retention FROM jobqueue.queues
WHERE queue_name IN ('q_dos', 'q_keep') ORDER BY 1;
SELECT jobqueue.jq_counters_reset();

CREATE FUNCTION pg_temp.counters(queue text) RETURNS TABLE(counter text, value bigint)
LANGUAGE sql AS $$
	SELECT key, value::bigint
	FROM jobqueue.jq_counters() c, jsonb_each_text(to_jsonb(c) - 'dbid' - 'queue_name'
	                                                - 'claim_time' - 'complete_time' - 'since')
	WHERE c.queue_name IS NOT DISTINCT FROM queue AND value::bigint <> 0
	ORDER BY key
$$;
-- the rows of jobqueue.jobs of a queue, by status
CREATE FUNCTION pg_temp.rows(queue text) RETURNS TABLE(status jobqueue.job_status, n bigint)
LANGUAGE sql AS $$
	SELECT j.status, count(*) FROM jobqueue.jobs j WHERE j.queue_name = queue
	GROUP BY j.status ORDER BY j.status
$$;

--------------------------------------------------------------------------
-- jq_complete: fenced exactly
--------------------------------------------------------------------------
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 1}') AS j1 \gset
SELECT token FROM jobqueue.jq_claim('q_dos', 1, 'w1') \gset
-- a stale token deletes nothing and says so
SELECT jobqueue.jq_complete(:j1, :token - 1) AS stale;
SELECT jobqueue.jq_complete(:j1, :token + 1) AS future;
SELECT status, lease_token = :token AS same_token FROM jobqueue.jobs WHERE id = :j1;
-- a rolled-back completion leaves the job running
BEGIN;
SELECT jobqueue.jq_complete(:j1, :token) AS completed_then_rolled_back;
SELECT count(*) AS rows_inside FROM jobqueue.jobs WHERE id = :j1;
ROLLBACK;
SELECT status FROM jobqueue.jobs WHERE id = :j1;
-- the holder's completion deletes the job: no row, jq_job returns none
SELECT jobqueue.jq_complete(:j1, :token) AS completed;
SELECT count(*) AS rows_left FROM jobqueue.jobs WHERE id = :j1;
SELECT count(*) AS job_rows FROM jobqueue.jq_job(:j1);
-- a second completion finds nothing
SELECT jobqueue.jq_complete(:j1, :token) AS again;
-- an expired lease is not completed (nor deleted)
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 2}') AS j2 \gset
SELECT token FROM jobqueue.jq_claim('q_dos', 1, 'w1', lease => '1 millisecond') \gset
SELECT pg_sleep(0.01);
SELECT jobqueue.jq_complete(:j2, :token) AS expired;
SELECT status FROM jobqueue.jobs WHERE id = :j2;
SELECT jobqueue.jq_cancel(:j2) AS cancelled;
-- completed, complete_fenced (the stale, future, second and expired calls),
-- complete_calls; nothing counted for the rolled-back completion
SELECT * FROM pg_temp.counters('q_dos');

--------------------------------------------------------------------------
-- jq_complete_many: both kinds of queue in one call
--------------------------------------------------------------------------
SELECT jobqueue.jq_counters_reset();
SELECT array_agg(id ORDER BY id) AS dos_ids FROM jobqueue.jq_enqueue_many('q_dos',
	ARRAY['{"n": 3}', '{"n": 4}', '{"n": 5}']::jsonb[]) AS id \gset
SELECT array_agg(id ORDER BY id) AS keep_ids FROM jobqueue.jq_enqueue_many('q_keep',
	ARRAY['{"n": 6}', '{"n": 7}']::jsonb[]) AS id \gset
CREATE TEMP TABLE held AS
	SELECT id, token FROM jobqueue.jq_claim('q_dos', 3, 'w2')
	UNION ALL SELECT id, token FROM jobqueue.jq_claim('q_keep', 2, 'w2');
-- the last job of each queue with a stale token; a result for each
SELECT c - (:'dos_ids'::bigint[])[1] AS nth_completed
FROM jobqueue.jq_complete_many(
	(SELECT array_agg(id ORDER BY id) FROM held),
	(SELECT array_agg(CASE WHEN id IN ((:'dos_ids'::bigint[])[3], (:'keep_ids'::bigint[])[2])
						   THEN token + 1 ELSE token END ORDER BY id) FROM held),
	(SELECT array_agg(jsonb_build_object('r', id - (:'dos_ids'::bigint[])[1]) ORDER BY id) FROM held)) AS c
ORDER BY 1;
-- q_dos: two deleted, the fenced one still running; q_keep: one succeeded
-- with its result, the fenced one running
SELECT * FROM pg_temp.rows('q_dos');
SELECT id - (:'dos_ids'::bigint[])[1] AS nth, status, result
FROM jobqueue.jobs WHERE queue_name = 'q_keep' ORDER BY id;
SELECT * FROM pg_temp.counters('q_dos');
SELECT * FROM pg_temp.counters('q_keep');
-- duplicates in the input complete (delete) a job once
SELECT count(*) AS completed_once FROM jobqueue.jq_complete_many(
	ARRAY[(:'dos_ids'::bigint[])[3], (:'dos_ids'::bigint[])[3]],
	(SELECT ARRAY[token, token] FROM held WHERE id = (:'dos_ids'::bigint[])[3]));
-- the rest: the fenced ones with their tokens
SELECT count(*) AS completed FROM jobqueue.jq_complete_many(
	(SELECT array_agg(id ORDER BY id) FROM jobqueue.jobs WHERE queue_name IN ('q_dos', 'q_keep') AND status = 'running'),
	(SELECT array_agg(lease_token ORDER BY id) FROM jobqueue.jobs WHERE queue_name IN ('q_dos', 'q_keep') AND status = 'running'));
SELECT * FROM pg_temp.rows('q_dos');
SELECT * FROM pg_temp.rows('q_keep');
-- A completion tries first the statement (keep or delete) that completed
-- the session's last one: alternate the kinds, one job and many at a time.
-- Each job is kept or deleted by its own queue's rule whatever came before.
SELECT count(jobqueue.jq_enqueue(q, jsonb_build_object('alt', q))) AS enqueued
FROM unnest(ARRAY['q_dos', 'q_keep', 'q_dos', 'q_keep']) q;
CREATE TEMP TABLE alt AS
	SELECT 1 AS ord, id, token FROM jobqueue.jq_claim('q_dos', 2, 'w3')
	UNION ALL SELECT 2, id, token FROM jobqueue.jq_claim('q_keep', 2, 'w3');
SELECT a.ord, jobqueue.jq_complete(a.id, a.token) AS completed
FROM (SELECT DISTINCT ON (ord) * FROM alt ORDER BY ord, id) a ORDER BY a.ord;
-- the four again, the kept ones first: the two done above are refused
SELECT count(*) AS completed FROM jobqueue.jq_complete_many(
	ARRAY(SELECT id FROM alt ORDER BY ord DESC, id), ARRAY(SELECT token FROM alt ORDER BY ord DESC, id));
SELECT j.queue_name, j.status, count(*) FROM alt a LEFT JOIN jobqueue.jobs j USING (id)
GROUP BY 1, 2 ORDER BY 1, 2;

--------------------------------------------------------------------------
-- Results: a job deleted on success keeps none (it is accepted, and the
-- size limit still applies)
--------------------------------------------------------------------------
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 8}') AS j8 \gset
SELECT token FROM jobqueue.jq_claim('q_dos', 1, 'w1') \gset
SET jobqueue.max_result_size = 100;
SELECT jobqueue.jq_complete(:j8, :token, jsonb_build_object('x', repeat('x', 200)));
RESET jobqueue.max_result_size;
SELECT status FROM jobqueue.jobs WHERE id = :j8;
SELECT jobqueue.jq_complete(:j8, :token, '{"answer": 42}') AS completed_with_result;
SELECT count(*) AS job_rows FROM jobqueue.jq_job(:j8);

--------------------------------------------------------------------------
-- Dead and cancelled jobs are kept, and replayed under the same id
--------------------------------------------------------------------------
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 9}') AS j9 \gset
SELECT token FROM jobqueue.jq_claim('q_dos', 1, 'w1') \gset
SELECT jobqueue.jq_fail(:j9, :token, 'BROKEN', 'no', retryable => false) AS failed;
SELECT status, last_error_code FROM jobqueue.jq_job(:j9);
SELECT jobqueue.jq_retry(:j9) AS replayed;
SELECT id = :j9 AS same_id, token FROM jobqueue.jq_claim('q_dos', 1, 'w1') \gset
SELECT :'same_id' AS same_id, jobqueue.jq_complete(:j9, :token) AS completed;
SELECT count(*) AS job_rows FROM jobqueue.jq_job(:j9);
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 10}') AS j10 \gset
SELECT jobqueue.jq_cancel(:j10) AS cancelled;
SELECT status FROM jobqueue.jq_job(:j10);

--------------------------------------------------------------------------
-- Dependencies: dependents are released as the job disappears; a later
-- enqueue that names the deleted job fails as for a purged job
--------------------------------------------------------------------------
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 11}') AS a \gset
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 12}', depends_on => ARRAY[:a]) AS b \gset
SELECT jobqueue.jq_enqueue('q_keep', '{"n": 13}', depends_on => ARRAY[:a]) AS c \gset
SELECT status FROM jobqueue.jq_job(:b);
SELECT token FROM jobqueue.jq_claim('q_dos', 1, 'w1') \gset
-- a stale completion releases nothing
SELECT jobqueue.jq_complete(:a, :token + 1) AS stale;
SELECT status, waiting_for = ARRAY[:a]::bigint[] AS waits FROM jobqueue.jq_job(:b);
SELECT jobqueue.jq_complete(:a, :token) AS completed;
SELECT count(*) AS a_rows FROM jobqueue.jobs WHERE id = :a;
SELECT id = :b AS is_b, status, waiting_for FROM jobqueue.jq_job(:b)
UNION ALL SELECT id = :b, status, waiting_for FROM jobqueue.jq_job(:c);
SELECT count(*) AS dependency_rows FROM jobqueue.job_dependencies
WHERE depends_on = :a OR job_id IN (:b, :c);
-- (the id is passed through a setting, and only the SQLSTATE is shown, so
-- that the output does not depend on the ids)
SELECT set_config('jq.a', :'a', false) IS NOT NULL AS set;
SET client_min_messages = warning;
DO $$
BEGIN
	PERFORM jobqueue.jq_enqueue('q_dos', '{"n": 14}', depends_on => ARRAY[pg_catalog.current_setting('jq.a')::bigint]);
EXCEPTION WHEN OTHERS THEN
	RAISE WARNING 'enqueue depending on a deleted job: %', SQLSTATE;
END
$$ LANGUAGE plpgsql;
-- a dependent of a job deleted in a batch is released too
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 15}') AS d \gset
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 16}', depends_on => ARRAY[:d]) AS e \gset
SELECT array_agg(id) AS ids, array_agg(token) AS toks FROM jobqueue.jq_claim('q_dos', 10, 'w1') \gset
SELECT count(*) AS completed FROM jobqueue.jq_complete_many(:'ids', :'toks');
SELECT status FROM jobqueue.jq_job(:e);

--------------------------------------------------------------------------
-- Idempotency keys of deleted jobs are free again
--------------------------------------------------------------------------
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 17}', idempotency_key => 'k1') AS k1 \gset
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 18}', idempotency_key => 'k1') = :k1 AS same_while_kept;
SELECT array_agg(id) AS ids, array_agg(token) AS toks FROM jobqueue.jq_claim('q_dos', 10, 'w1') \gset
SELECT count(*) AS completed FROM jobqueue.jq_complete_many(:'ids', :'toks');
SELECT jobqueue.jq_enqueue('q_dos', '{"n": 19}', idempotency_key => 'k1') > :k1 AS new_job;

--------------------------------------------------------------------------
-- jq_alter_queue to and from zero (this session sees its change at once;
-- other sessions: test/t/050_finished_notify.pl)
--------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('q_alter', lease_duration => '1 hour');
SELECT count(*) AS enqueued FROM jobqueue.jq_enqueue_many('q_alter',
	ARRAY['{"n": 20}', '{"n": 21}', '{"n": 22}', '{"n": 23}', '{"n": 24}']::jsonb[]);
SELECT id AS k20, token AS t20 FROM jobqueue.jq_claim('q_alter', 1, 'w1') \gset
SELECT jobqueue.jq_complete(:k20, :t20) AS kept;
SELECT jobqueue.jq_alter_queue('q_alter', retention => '0');
SELECT id AS k21, token AS t21 FROM jobqueue.jq_claim('q_alter', 1, 'w1') \gset
SELECT jobqueue.jq_complete(:k21, :t21) AS deleted;
SELECT jobqueue.jq_alter_queue('q_alter', retention => '1 day');
SELECT id AS k22, token AS t22 FROM jobqueue.jq_claim('q_alter', 1, 'w1') \gset
SELECT jobqueue.jq_complete(:k22, :t22) AS kept_again;
-- a rolled-back change does not stay in the cache
BEGIN;
SELECT jobqueue.jq_alter_queue('q_alter', retention => '0');
ROLLBACK;
SELECT id AS k23, token AS t23 FROM jobqueue.jq_claim('q_alter', 1, 'w1') \gset
SELECT jobqueue.jq_complete(:k23, :t23) AS kept_after_rollback;
SELECT id - :k20 AS nth, status FROM jobqueue.jobs WHERE queue_name = 'q_alter' ORDER BY id;

-- With retention zero, the succeeded jobs from before the change and the
-- cancelled jobs are purged at the next purge; dead jobs never are.
SELECT id AS k24, token AS t24 FROM jobqueue.jq_claim('q_alter', 1, 'w1') \gset
SELECT jobqueue.jq_fail(:k24, :t24, 'BROKEN', 'no', retryable => false) AS failed;
SELECT jobqueue.jq_alter_queue('q_alter', retention => '0');
SELECT * FROM pg_temp.rows('q_alter');
SELECT jobqueue.jq_purge('q_alter') AS purged_alter;
SELECT jobqueue.jq_purge('q_dos') AS purged_dos;
SELECT * FROM pg_temp.rows('q_alter');
SELECT * FROM pg_temp.rows('q_dos');
SELECT queue_name, pending, running, succeeded, dead, cancelled
FROM jobqueue.queue_stats WHERE queue_name IN ('q_alter', 'q_dos', 'q_keep') ORDER BY 1;

SELECT jobqueue.jq_drop_queue('q_alter', force => true);
SELECT jobqueue.jq_drop_queue('q_dos', force => true);
SELECT jobqueue.jq_drop_queue('q_keep', force => true);
