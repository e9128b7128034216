--
-- The claim's plan on a table with many rows: an index scan of the partial
-- index jobs_claim_idx (pending jobs only) in claim order, under LockRows and
-- a Limit, whatever the backlog.  jq_explain_claim shows the plan that
-- jq_claim runs.
--
SELECT jobqueue.jq_create_queue('q_explain');
SELECT jobqueue.jq_create_queue('q_explain_other');

-- 50,000 pending jobs in the queue, 50,000 succeeded ones, and 20,000
-- pending jobs of another queue
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_explain',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 50000) i),
	run_at => now() - interval '1 minute');
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_explain_other',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 20000) i));
INSERT INTO jobqueue.jobs (queue_name, payload, status, max_attempts, attempt_count,
	lease_token, started_at, finished_at, available_at)
SELECT 'q_explain', jsonb_build_object('n', i), 'succeeded', 8, 1, 1,
	now() - interval '1 hour', now() - interval '59 minutes', now() - interval '2 hours'
FROM generate_series(1, 50000) i;
ANALYZE jobqueue.jobs;
SELECT queue_name, status, count(*) FROM jobqueue.jobs
WHERE queue_name LIKE 'q_explain%' GROUP BY 1, 2 ORDER BY 1, 2;

-- the plan, with timestamps masked: it reads the jobs table only (the
-- queue's settings come from the backend's cache)
SELECT regexp_replace(p, '''[^'']*''::timestamp with time zone', '''<now>''::timestamp with time zone', 'g') AS plan
FROM jobqueue.jq_explain_claim('q_explain', 10) AS p;

-- the same checks, spelled out: the pending jobs are found through
-- jobs_claim_idx, under LockRows, under a Limit
WITH plan AS (
	SELECT string_agg(p, E'\n') AS t FROM jobqueue.jq_explain_claim('q_explain', 10) AS p
)
SELECT t ~ 'Limit\M.*\n\s+->  LockRows\M(.*\n)+\s+->  Index Scan using jobs_claim_idx on jobs' AS limit_lockrows_index_scan,
       t !~ 'Seq Scan on jobs' AS no_seq_scan_of_jobs,
       t !~ 'Bitmap' AS no_bitmap_scan
FROM plan;

-- and the claim takes the right jobs: the 10 oldest of the queue
SELECT count(*), min((payload->>'n')::int), max((payload->>'n')::int),
       min(attempt), max(attempt)
FROM jobqueue.jq_claim('q_explain', 10, 'w');
-- at a higher priority, a new job comes first
SELECT jobqueue.jq_enqueue('q_explain', '{"n": "urgent"}', priority => 10) IS NOT NULL AS ok;
SELECT payload FROM jobqueue.jq_claim('q_explain', 1, 'w');

-- the plan for a queue that does not exist is an error, as for jq_claim
SELECT * FROM jobqueue.jq_explain_claim('nosuchqueue', 10);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM jobqueue.jq_explain_claim('q_explain', 0);
\echo :LAST_ERROR_SQLSTATE
-- jq_explain_claim claims nothing
SELECT count(*) FROM jobqueue.jq_explain_claim('q_explain', 1000);
SELECT status, count(*) FROM jobqueue.jobs WHERE queue_name = 'q_explain' GROUP BY 1 ORDER BY 1;

SELECT jobqueue.jq_drop_queue('q_explain', force => true);
SELECT jobqueue.jq_drop_queue('q_explain_other', force => true);
