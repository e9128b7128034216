--
-- Event counters (jq_counters, jq_counters_reset).  The test instance
-- preloads jobqueue; the error without it is checked by a TAP test.
-- Events are published when a transaction ends, so each step below is
-- its own transaction.
--
SELECT jobqueue.jq_create_queue('q_ctr', max_attempts => 5, lease_duration => '1 hour');
SELECT jobqueue.jq_counters_reset();

CREATE FUNCTION pg_temp.counters(queue text) RETURNS TABLE(counter text, value bigint)
LANGUAGE sql AS $$
	SELECT key, value::bigint
	FROM jobqueue.jq_counters() c, jsonb_each_text(to_jsonb(c) - 'dbid' - 'queue_name'
	                                                - 'claim_time' - 'complete_time' - 'since')
	WHERE c.queue_name IS NOT DISTINCT FROM queue AND value::bigint <> 0
	ORDER BY key
$$;

-- enqueued: each new job once; not an idempotent repeat, not a rollback
SELECT count(jobqueue.jq_enqueue('q_ctr', '{}')) FROM generate_series(1, 3);
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_ctr', ARRAY['{}', '{}']::jsonb[]);
SELECT jobqueue.jq_enqueue('q_ctr', '{}', idempotency_key => 'k1') = jobqueue.jq_enqueue('q_ctr', '{}', idempotency_key => 'k1') AS same_job;
BEGIN;
SELECT count(jobqueue.jq_enqueue('q_ctr', '{}')) FROM generate_series(1, 10);
ROLLBACK;
SELECT * FROM pg_temp.counters('q_ctr');

-- claimed, completed, fenced completions, refused heartbeats
CREATE TEMP TABLE c1 AS SELECT * FROM jobqueue.jq_claim('q_ctr', 4, 'w1');
SELECT count(*) FROM jobqueue.jq_claim('q_ctr', 1, 'w1', lease => '1 millisecond') \gset
SELECT jobqueue.jq_complete(id, token) FROM c1 ORDER BY id LIMIT 1;
SELECT jobqueue.jq_complete(id, token + 100) FROM c1 ORDER BY id DESC LIMIT 1;
SELECT count(*) FROM jobqueue.jq_complete_many(
	ARRAY(SELECT id FROM c1 ORDER BY id LIMIT 2),
	ARRAY(SELECT token FROM c1 ORDER BY id LIMIT 2));
SELECT jobqueue.jq_heartbeat(id, token + 100) FROM c1 ORDER BY id DESC LIMIT 1;
SELECT jobqueue.jq_complete(-42, 1) AS unknown_job;
SELECT * FROM pg_temp.counters('q_ctr');
-- the unknown job's refusal has no queue
SELECT * FROM pg_temp.counters(NULL);
SELECT claim_calls, claim_time > 0 AS claim_timed, complete_calls, complete_time > 0 AS complete_timed
FROM jobqueue.jq_counters() WHERE queue_name = 'q_ctr';

-- failures: retryable with a retry scheduled, permanent to dead, replayed
SELECT jobqueue.jq_counters_reset('q_ctr');
SELECT jobqueue.jq_fail(id, token, 'E_RETRY') FROM c1 ORDER BY id DESC LIMIT 1;
SELECT jobqueue.jq_fail(id, token, 'E_PERM', retryable => false) FROM c1 ORDER BY id DESC OFFSET 1 LIMIT 1;
SELECT jobqueue.jq_retry_dead('q_ctr');
SELECT * FROM pg_temp.counters('q_ctr');

-- expired leases reaped (the 1 ms lease claimed above), and purged jobs
SELECT jobqueue.jq_counters_reset('q_ctr');
SELECT pg_sleep(0.01);
SELECT jobqueue.jq_reap() AS reaped;
SELECT jobqueue.jq_purge('q_ctr', older_than => '1 microsecond') AS purged;
SELECT * FROM pg_temp.counters('q_ctr');

-- a rolled-back transaction counts its calls but not its events
SELECT jobqueue.jq_counters_reset('q_ctr');
UPDATE jobqueue.jobs SET available_at = now() WHERE queue_name = 'q_ctr' AND status = 'pending';
BEGIN;
SELECT count(*) FROM jobqueue.jq_claim('q_ctr', 2, 'w2');
ROLLBACK;
SELECT * FROM pg_temp.counters('q_ctr');

-- a rolled-back savepoint takes its events back, a released one keeps them
SELECT jobqueue.jq_counters_reset('q_ctr');
BEGIN;
SELECT jobqueue.jq_enqueue('q_ctr', '{"kept": 1}') > 0 AS enqueued;
SAVEPOINT a;
SELECT count(jobqueue.jq_enqueue('q_ctr', '{"undone": 1}')) FROM generate_series(1, 5);
SAVEPOINT b;
SELECT jobqueue.jq_enqueue('q_ctr', '{"undone": 2}') > 0 AS enqueued;
RELEASE SAVEPOINT b;
ROLLBACK TO SAVEPOINT a;
SAVEPOINT c;
SELECT count(jobqueue.jq_enqueue('q_ctr', '{"kept": 2}')) FROM generate_series(1, 2);
SAVEPOINT d;
SELECT jobqueue.jq_enqueue('q_ctr', '{"kept": 3}') > 0 AS enqueued;
RELEASE SAVEPOINT c;
COMMIT;
SELECT * FROM pg_temp.counters('q_ctr');
-- the same in PL/pgSQL: an exception block is a subtransaction
DO $$
BEGIN
	PERFORM jobqueue.jq_enqueue('q_ctr', '{"kept": 4}');
	BEGIN
		PERFORM jobqueue.jq_enqueue('q_ctr', '{"undone": 3}');
		RAISE EXCEPTION 'handler failed';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END
$$;
SELECT * FROM pg_temp.counters('q_ctr');

-- jq_complete_many counts each job under its own queue, fenced ones too
SELECT jobqueue.jq_counters_reset();
SELECT jobqueue.jq_create_queue('q_ctr_a', lease_duration => '1 hour');
SELECT jobqueue.jq_create_queue('q_ctr_b', lease_duration => '1 hour');
SELECT count(jobqueue.jq_enqueue(q, '{}'))
FROM unnest(ARRAY['q_ctr_a', 'q_ctr_b', 'q_ctr_b', 'q_ctr_b']) AS q;
CREATE TEMP TABLE c2 AS
	SELECT 'q_ctr_a' AS q, * FROM jobqueue.jq_claim('q_ctr_a', 1, 'w')
	UNION ALL SELECT 'q_ctr_b', * FROM jobqueue.jq_claim('q_ctr_b', 3, 'w');
-- a's job, then b's jobs, one of them with a stale token
SELECT count(*) FROM jobqueue.jq_complete_many(
	ARRAY(SELECT id FROM c2 ORDER BY q, id),
	ARRAY(SELECT CASE WHEN q = 'q_ctr_b' AND id = (SELECT max(id) FROM c2) THEN token + 1 ELSE token END
		  FROM c2 ORDER BY q, id));
SELECT queue_name, completed, complete_fenced, complete_calls
FROM jobqueue.jq_counters() WHERE queue_name LIKE 'q_ctr_%' ORDER BY queue_name;
SELECT jobqueue.jq_drop_queue(q, force => true) FROM unnest(ARRAY['q_ctr_a', 'q_ctr_b']) AS q;

-- jobqueue.track_counters = off: nothing is counted
SELECT jobqueue.jq_counters_reset('q_ctr');
SET jobqueue.track_counters = off;
SELECT count(jobqueue.jq_enqueue('q_ctr', '{}')) FROM generate_series(1, 3);
RESET jobqueue.track_counters;
SELECT count(*) AS rows FROM jobqueue.jq_counters() WHERE queue_name = 'q_ctr';

-- all databases: this one is among them, with its oid
SELECT count(*) > 0 AS this_database
FROM jobqueue.jq_counters(all_databases => true) c
JOIN pg_database d ON d.oid = c.dbid AND d.datname = current_database();

-- reset of every queue of this database
SELECT jobqueue.jq_enqueue('q_ctr', '{}') > 0 AS enqueued;
SELECT jobqueue.jq_counters_reset();
SELECT count(*) AS rows FROM jobqueue.jq_counters();

-- a prepared transaction: its events are not counted, whether it is later
-- committed or rolled back (that is decided in another session); its calls are
-- (an enqueue notifies listeners, and a transaction that notified cannot be
-- prepared: only the claim is in it)
SELECT jobqueue.jq_enqueue('q_ctr', '{}') > 0 AS enqueued;
SELECT jobqueue.jq_counters_reset('q_ctr');
BEGIN;
SELECT count(*) AS claimed FROM jobqueue.jq_claim('q_ctr', 1, 'w');
PREPARE TRANSACTION 'jq_counters_prepared';
ROLLBACK PREPARED 'jq_counters_prepared';
SELECT enqueued, claimed, claim_calls FROM jobqueue.jq_counters() WHERE queue_name = 'q_ctr';

-- max_counter_queues is fixed at server start
SELECT name, setting, context FROM pg_settings
WHERE name IN ('jobqueue.max_counter_queues', 'jobqueue.track_counters') ORDER BY name;

SELECT jobqueue.jq_drop_queue('q_ctr', force => true);
