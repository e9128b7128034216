--
-- Results, progress and jq_job: storing a result with the completion, the
-- fencing of results and progress, the size limit, the job in each state,
-- structured failure detail, and who may read a job.
--
SET client_min_messages = warning;
SELECT jobqueue.jq_create_queue('q_results', max_attempts => 2);

-- jq_job of a pending job; no row for an unknown id
SELECT jobqueue.jq_enqueue('q_results', '{"n": 1}') AS j1 \gset
SELECT queue_name, status, attempt, max_attempts, priority, result, progress,
	last_error_code, errors, started_at IS NULL AS not_started,
	finished_at IS NULL AS not_finished, waiting_for
FROM jobqueue.jq_job(:j1);
SELECT count(*) AS unknown_rows FROM jobqueue.jq_job(-1);

-- running: progress by the holder replaces the last one; the lease stays
SELECT id, token, lease_expires_at AS exp FROM jobqueue.jq_claim('q_results', 1, 'w1') \gset
SELECT jobqueue.jq_progress(:j1, :token, '{"pct": 10}') AS progress_10;
SELECT jobqueue.jq_progress(:j1, :token, '{"pct": 50, "step": "upload"}') AS progress_50;
SELECT status, attempt, progress, started_at IS NOT NULL AS started FROM jobqueue.jq_job(:j1);
SELECT lease_expires_at = :'exp'::timestamptz AS lease_unchanged
FROM jobqueue.jobs WHERE id = :j1;
-- a stale token changes nothing and says so
SELECT jobqueue.jq_progress(:j1, :token + 1, '{"pct": 99}') AS stale_progress;
SELECT progress FROM jobqueue.jq_job(:j1);
-- too large: 54000, nothing stored
SET jobqueue.max_result_size = 100;
SELECT jobqueue.jq_progress(:j1, :token, jsonb_build_object('x', repeat('x', 200)));
SELECT jobqueue.jq_complete(:j1, :token, jsonb_build_object('x', repeat('x', 200)));
RESET jobqueue.max_result_size;
SELECT status, result FROM jobqueue.jq_job(:j1);
-- a stale completion with a result stores nothing
SELECT jobqueue.jq_complete(:j1, :token + 1, '{"stale": true}') AS stale_complete;
SELECT status, result FROM jobqueue.jq_job(:j1);
-- the holder's completion stores its result
SELECT jobqueue.jq_complete(:j1, :token, '{"answer": 42}') AS completed;
SELECT status, result, progress, finished_at IS NOT NULL AS finished FROM jobqueue.jq_job(:j1);
-- and a second completion changes nothing
SELECT jobqueue.jq_complete(:j1, :token, '{"answer": 43}') AS again;
SELECT result FROM jobqueue.jq_job(:j1);

-- jq_complete without a result, positionally as before
SELECT jobqueue.jq_enqueue('q_results', '{"n": 2}') AS j2 \gset
SELECT token FROM jobqueue.jq_claim('q_results', 1, 'w1') \gset
SELECT jobqueue.jq_complete(:j2, :token) AS completed;
SELECT status, result FROM jobqueue.jq_job(:j2);

-- jq_complete_many with results (NULL elements allowed), and fenced pairs
SELECT array_agg(id ORDER BY id) AS ids FROM (
	SELECT jobqueue.jq_enqueue_many('q_results', ARRAY['{"n": 3}', '{"n": 4}', '{"n": 5}']::jsonb[]) AS id) s \gset
SELECT array_agg(id ORDER BY id) AS cids, array_agg(token ORDER BY id) AS toks
FROM jobqueue.jq_claim('q_results', 3, 'w2') \gset
SELECT c - (:'ids'::bigint[])[1] AS nth_completed FROM jobqueue.jq_complete_many(:'cids'::bigint[],
	ARRAY[(:'toks'::bigint[])[1], (:'toks'::bigint[])[2], (:'toks'::bigint[])[3] + 1],
	ARRAY['{"r": 3}', NULL, '{"r": 5}']::jsonb[]) AS c ORDER BY 1;
SELECT j.id - (:'ids'::bigint[])[1] AS nth, j.status, j.result
FROM unnest(:'ids'::bigint[]) AS i(id), jobqueue.jq_job(i.id) j ORDER BY 1;
-- length mismatch: 2202E
SELECT * FROM jobqueue.jq_complete_many('{1,2}', '{1,2}', ARRAY['{}']::jsonb[]);

-- failing with structured detail: kept in the history entry
SELECT jobqueue.jq_enqueue('q_results', '{"n": 6}') AS j6 \gset
SELECT token FROM jobqueue.jq_claim('q_results', 1, 'w3') \gset
SELECT jobqueue.jq_fail(:j6, :token, 'HTTP_500', 'server error',
	error_detail => '{"status": 500, "body": "oops"}') AS failed;
SELECT status, attempt, last_error_code, errors -> 0 -> 'detail' AS detail,
	errors -> 0 ? 'detail' AS has_detail FROM jobqueue.jq_job(:j6);
UPDATE jobqueue.jobs SET available_at = now() WHERE id = :j6;
SELECT token FROM jobqueue.jq_claim('q_results', 1, 'w3') \gset
SELECT jobqueue.jq_fail(:j6, :token, 'HTTP_500') AS dead;
SELECT status, attempt, last_error_code, jsonb_array_length(errors) AS history,
	errors -> 1 ? 'detail' AS second_has_detail FROM jobqueue.jq_job(:j6);

-- cancelled
SELECT jobqueue.jq_enqueue('q_results', '{"n": 7}') AS j7 \gset
SELECT jobqueue.jq_cancel(:j7);
SELECT status, finished_at IS NOT NULL AS finished FROM jobqueue.jq_job(:j7);

-- errors
SELECT * FROM jobqueue.jq_job(NULL);
SELECT jobqueue.jq_progress(:j7, 1, NULL);
SELECT jobqueue.jq_progress(NULL, 1, '{}');

-- who may read a job: producers and workers, not monitors or others
CREATE ROLE regress_jq_res_producer;
CREATE ROLE regress_jq_res_monitor;
SELECT jobqueue.jq_grant_producer('regress_jq_res_producer');
SELECT jobqueue.jq_grant_monitor('regress_jq_res_monitor');
SET ROLE regress_jq_res_producer;
SELECT status, result FROM jobqueue.jq_job(:j1);
SELECT jobqueue.jq_progress(:j1, 1, '{}');
SET ROLE regress_jq_res_monitor;
SELECT status FROM jobqueue.jq_job(:j1);
RESET ROLE;
SELECT jobqueue.jq_revoke_producer('regress_jq_res_producer');
SELECT jobqueue.jq_revoke_monitor('regress_jq_res_monitor');
DROP ROLE regress_jq_res_producer, regress_jq_res_monitor;

SELECT jobqueue.jq_drop_queue('q_results', force => true);
