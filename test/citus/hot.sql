--
-- The hot path of the Citus suite (scripts/test_citus.sh), with
-- auto_explain logging every plan: @QA@ and @QB@ are two queues on
-- different workers.  Each call names its queue where the API allows it.
--
\set VERBOSITY terse
SELECT jobqueue.jq_enqueue('@QA@', '{"hot": 1}') AS a \gset
SELECT jobqueue.jq_enqueue('@QA@', '{"hot": 2}', idempotency_key => 'hot-k') AS b \gset
SELECT count(*) FROM jobqueue.jq_enqueue_many('@QA@', ARRAY['{"hot": 3}', '{"hot": 4}', '{"hot": 5}']::jsonb[]);
BEGIN;
SELECT jobqueue.jq_enqueue('@QA@', '{"hot": "in a transaction"}');
COMMIT;
SELECT id, token FROM jobqueue.jq_claim('@QA@', 1, 'hot') \gset c_
SELECT jobqueue.jq_heartbeat('@QA@', :c_id, :c_token);
SELECT jobqueue.jq_progress('@QA@', :c_id, :c_token, '{"pct": 1}');
SELECT jobqueue.jq_complete('@QA@', :c_id, :c_token, '{"r": 1}');
SELECT id, token FROM jobqueue.jq_claim('@QA@', 1, 'hot') \gset c_
SELECT jobqueue.jq_fail('@QA@', :c_id, :c_token, 'E_HOT', 'retry me');
SELECT id, token FROM jobqueue.jq_claim('@QA@', 1, 'hot') \gset c_
SELECT jobqueue.jq_release('@QA@', :c_id, :c_token);
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM jobqueue.jq_claim('@QA@', 2, 'hot') \gset
SELECT count(*) FROM jobqueue.jq_complete_and_claim('@QA@', :'ids', :'tokens', 1, 'hot');
SELECT count(*) FROM jobqueue.jq_complete_many('@QA@', :'ids', :'tokens');
SELECT status FROM jobqueue.jq_job('@QA@', :a);
SELECT jobqueue.jq_cancel('@QA@', :b);
-- a dependency within the queue: its rows, their release and the
-- cancellation of a dependent, all on the queue's shard
SELECT jobqueue.jq_enqueue('@QA@', '{"hot": "parent"}') AS p \gset
SELECT jobqueue.jq_enqueue('@QA@', '{"hot": "child"}', depends_on => ARRAY[:p]::bigint[]) AS ch \gset
SELECT jobqueue.jq_enqueue('@QA@', '{"hot": "grandchild"}', depends_on => ARRAY[:ch]::bigint[]);
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM jobqueue.jq_claim('@QA@', 100, 'hot') \gset
SELECT count(*) FROM jobqueue.jq_complete_many('@QA@', :'ids', :'tokens');
SELECT id, token FROM jobqueue.jq_claim('@QA@', 1, 'hot') \gset c_
SELECT jobqueue.jq_fail('@QA@', :c_id, :c_token, 'E_HOT', 'for good', false);
