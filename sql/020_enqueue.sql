--
-- jq_enqueue and jq_enqueue_many: defaults, idempotency keys, payload limits,
-- order of ids, and bad input.
--

SELECT getdatabaseencoding();
SELECT jobqueue.jq_create_queue('q_enq', max_attempts => 4);
SELECT jobqueue.jq_create_queue('q_enq2');

-- defaults: priority 0, ready now, the queue's max_attempts, pending.
-- (In one transaction, so that now() is the time of the enqueue; a job is
-- ready from the database clock's time of the call.)
BEGIN;
SELECT jobqueue.jq_enqueue('q_enq', '{"task": "a"}') AS j1 \gset
SELECT queue_name, payload, status, priority, attempt_count, max_attempts,
       lease_owner, lease_token, lease_expires_at, started_at, finished_at,
       idempotency_key, last_error_code, errors,
       available_at BETWEEN now() AND clock_timestamp() AS available_now,
       created_at = now() AS created_now
FROM jobqueue.jobs WHERE id = :j1;
COMMIT;

-- every option given
BEGIN;
SELECT jobqueue.jq_enqueue('q_enq', '[1, 2, 3]', priority => -5,
	run_at => now() + interval '1 hour', max_attempts => 1,
	idempotency_key => 'key-1') AS j2 \gset
SELECT payload, status, priority, max_attempts, idempotency_key,
       available_at = now() + interval '1 hour' AS at_run_at
FROM jobqueue.jobs WHERE id = :j2;
-- a run_at in the past is fine (ready at once)
SELECT jobqueue.jq_enqueue('q_enq', '"scalar"', run_at => now() - interval '1 day') AS j3 \gset
SELECT payload, available_at = now() - interval '1 day' AS at_run_at
FROM jobqueue.jobs WHERE id = :j3;
COMMIT;
SELECT :j2 > :j1 AND :j3 > :j2 AS ids_increase;

-- idempotency keys: the same key in the same queue returns the same job and
-- inserts nothing, whatever the job's status
SELECT count(*) AS jobs_before FROM jobqueue.jobs WHERE queue_name = 'q_enq' \gset
SELECT jobqueue.jq_enqueue('q_enq', '{"other": true}', idempotency_key => 'key-1') = :j2 AS same_job;
SELECT jobqueue.jq_enqueue('q_enq', '{}', priority => 100, idempotency_key => 'key-1') = :j2 AS same_job;
SELECT payload, priority FROM jobqueue.jobs WHERE id = :j2;
-- running
UPDATE jobqueue.jobs SET available_at = now() - interval '1 hour' WHERE id = :j2;
SELECT count(*) AS claimed FROM jobqueue.jq_claim('q_enq', 3, 'w');
SELECT status FROM jobqueue.jobs WHERE id = :j2;
SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => 'key-1') = :j2 AS same_job;
-- dead (not retryable)
SELECT jobqueue.jq_fail(:j2, lease_token, 'E', NULL, false) FROM jobqueue.jobs WHERE id = :j2;
SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => 'key-1') = :j2 AS same_job;
-- cancelled
SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => 'key-2') AS j4 \gset
SELECT jobqueue.jq_cancel(:j4);
SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => 'key-2') = :j4 AS same_job;
SELECT count(*) - :jobs_before AS jobs_added FROM jobqueue.jobs WHERE queue_name = 'q_enq';
-- keys are per queue
SELECT jobqueue.jq_enqueue('q_enq2', '{}', idempotency_key => 'key-1') AS j5 \gset
SELECT :j5 <> :j2 AS other_queue_other_job;
SELECT queue_name, count(*) FROM jobqueue.jobs WHERE idempotency_key = 'key-1'
GROUP BY 1 ORDER BY 1;
-- a key is usable again once its job is purged
UPDATE jobqueue.jobs SET finished_at = now() - interval '1 hour' WHERE id = :j4;
SELECT jobqueue.jq_purge('q_enq', interval '1 minute');
SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => 'key-2') <> :j4 AS new_job;

-- payload size: jobqueue.max_payload_size, measured on the stored jsonb
SHOW jobqueue.max_payload_size;
SET jobqueue.max_payload_size = 100;
SELECT count(*) AS jobs_before FROM jobqueue.jobs \gset
SELECT jobqueue.jq_enqueue('q_enq', jsonb_build_object('s', repeat('x', 80))) IS NOT NULL AS small_ok;
SELECT jobqueue.jq_enqueue('q_enq', jsonb_build_object('s', repeat('x', 200)));
\echo :LAST_ERROR_SQLSTATE
SELECT jobqueue.jq_enqueue_many('q_enq', ARRAY['{}', jsonb_build_object('s', repeat('x', 200))]::jsonb[]);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) - :jobs_before AS jobs_added FROM jobqueue.jobs;
RESET jobqueue.max_payload_size;
-- the range is 1 B to 1 GB
SET jobqueue.max_payload_size = '1GB';
SHOW jobqueue.max_payload_size;
SELECT jobqueue.jq_enqueue('q_enq', jsonb_build_object('s', repeat('x', 200))) IS NOT NULL AS enqueued;
SET jobqueue.max_payload_size = 1;
SHOW jobqueue.max_payload_size;
SET jobqueue.max_payload_size = 0;
\echo :LAST_ERROR_SQLSTATE
SET jobqueue.max_payload_size = '1025MB';
\echo :LAST_ERROR_SQLSTATE
RESET jobqueue.max_payload_size;
-- only a superuser may raise it
CREATE ROLE regress_jq_user;
SET ROLE regress_jq_user;
SET jobqueue.max_payload_size = '10MB';
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
DROP ROLE regress_jq_user;
-- a payload read from a table where it is stored out of line (a TOAST
-- pointer) is measured by its size, as any other
CREATE TABLE toasted (p jsonb);
ALTER TABLE toasted ALTER COLUMN p SET STORAGE EXTERNAL;
INSERT INTO toasted SELECT jsonb_build_object('s', repeat('x', 64 * 1024));
SELECT jobqueue.jq_enqueue('q_enq', p) IS NOT NULL AS enqueued FROM toasted;
SELECT count(*) FROM toasted t, jobqueue.jq_enqueue_many('q_enq', ARRAY[t.p]);
SET jobqueue.max_payload_size = '32kB';
SELECT jobqueue.jq_enqueue('q_enq', p) FROM toasted;
\echo :LAST_ERROR_SQLSTATE
RESET jobqueue.max_payload_size;
DROP TABLE toasted;
-- a payload stored compressed is still measured by its full size
SET jobqueue.max_payload_size = '4kB';
SELECT jobqueue.jq_enqueue('q_enq', jsonb_build_object('s', repeat('x', 100000)));
\echo :LAST_ERROR_SQLSTATE
RESET jobqueue.max_payload_size;

-- bad input: an error with its SQLSTATE, and nothing inserted
SELECT count(*) AS jobs_before FROM jobqueue.jobs \gset
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('unknown queue',       $$SELECT jobqueue.jq_enqueue('nosuchqueue', '{}')$$),
	('null queue',          $$SELECT jobqueue.jq_enqueue(NULL, '{}')$$),
	('null payload',        $$SELECT jobqueue.jq_enqueue('q_enq', NULL)$$),
	('null priority',       $$SELECT jobqueue.jq_enqueue('q_enq', '{}', priority => NULL)$$),
	('max_attempts 0',      $$SELECT jobqueue.jq_enqueue('q_enq', '{}', max_attempts => 0)$$),
	('run_at infinity',     $$SELECT jobqueue.jq_enqueue('q_enq', '{}', run_at => 'infinity')$$),
	('run_at -infinity',    $$SELECT jobqueue.jq_enqueue('q_enq', '{}', run_at => '-infinity')$$),
	('empty key',           $$SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => '')$$),
	('key too long',        $$SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => repeat('k', 513))$$),
	('invalid json',        $$SELECT jobqueue.jq_enqueue('q_enq', '{')$$)
) v(what, stmt);
SELECT count(*) - :jobs_before AS jobs_added FROM jobqueue.jobs;
-- the full message of an unknown queue
SELECT jobqueue.jq_enqueue('nosuchqueue', '{}');
\echo :LAST_ERROR_SQLSTATE
-- a key of exactly 512 bytes is accepted
SELECT jobqueue.jq_enqueue('q_enq', '{}', idempotency_key => repeat('k', 512)) IS NOT NULL AS ok;
-- JSON null is a payload like any other (not an SQL NULL)
SELECT jobqueue.jq_enqueue('q_enq', 'null') IS NOT NULL AS ok;

-- a paused queue still accepts jobs
SELECT jobqueue.jq_pause_queue('q_enq2');
SELECT jobqueue.jq_enqueue('q_enq2', '{"while": "paused"}') IS NOT NULL AS ok;
SELECT jobqueue.jq_resume_queue('q_enq2');

--
-- jq_enqueue_many: one id per payload, in payload order
--
BEGIN;
SELECT array_agg(id ORDER BY ord) AS ids
FROM jobqueue.jq_enqueue_many('q_enq2',
	ARRAY['{"n": 1}', '{"n": 2}', '{"n": 3}', '{"n": 4}']::jsonb[], priority => 7)
	WITH ORDINALITY AS t(id, ord) \gset
SELECT t.ord, j.payload, j.priority, j.max_attempts, j.status,
       j.available_at BETWEEN now() AND clock_timestamp() AS available_now
FROM unnest(:'ids'::bigint[]) WITH ORDINALITY AS t(id, ord)
JOIN jobqueue.jobs j ON j.id = t.id ORDER BY t.ord;
COMMIT;
-- the ids increase with the payload order
SELECT bool_and(a.id < b.id) AS ascending
FROM unnest(:'ids'::bigint[]) WITH ORDINALITY a(id, ord)
JOIN unnest(:'ids'::bigint[]) WITH ORDINALITY b(id, ord) ON b.ord = a.ord + 1;
-- run_at
BEGIN;
SELECT array_agg(id) AS ids FROM jobqueue.jq_enqueue_many('q_enq2',
	ARRAY['1', '2']::jsonb[], run_at => now() + interval '10 minutes') AS t(id) \gset
SELECT payload, available_at = now() + interval '10 minutes' AS at_run_at
FROM jobqueue.jobs WHERE id = ANY (:'ids') ORDER BY id;
COMMIT;
-- an empty array inserts nothing and returns no rows
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_enq2', '{}'::jsonb[]);
-- a payload array with another lower bound works too
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_enq2', '[5:6]={"{\"x\": 5}","{\"x\": 6}"}'::jsonb[]);

SELECT count(*) AS jobs_before FROM jobqueue.jobs \gset
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('unknown queue',       $$SELECT jobqueue.jq_enqueue_many('nosuchqueue', ARRAY['{}']::jsonb[])$$),
	('unknown queue, empty array', $$SELECT jobqueue.jq_enqueue_many('nosuchqueue', '{}'::jsonb[])$$),
	('null queue',          $$SELECT jobqueue.jq_enqueue_many(NULL, ARRAY['{}']::jsonb[])$$),
	('bad queue name',      $$SELECT jobqueue.jq_enqueue_many('no way', ARRAY['{}']::jsonb[])$$),
	('null array',          $$SELECT jobqueue.jq_enqueue_many('q_enq2', NULL)$$),
	('null element',        $$SELECT jobqueue.jq_enqueue_many('q_enq2', ARRAY['{}', NULL]::jsonb[])$$),
	('two dimensions',      $$SELECT jobqueue.jq_enqueue_many('q_enq2', ARRAY[['1', '2'], ['3', '4']]::jsonb[])$$),
	('null priority',       $$SELECT jobqueue.jq_enqueue_many('q_enq2', ARRAY['{}']::jsonb[], NULL)$$),
	('run_at infinity',     $$SELECT jobqueue.jq_enqueue_many('q_enq2', ARRAY['{}']::jsonb[], 0, 'infinity')$$)
) v(what, stmt);
SELECT count(*) - :jobs_before AS jobs_added FROM jobqueue.jobs;

SELECT jobqueue.jq_drop_queue('q_enq', force => true);
SELECT jobqueue.jq_drop_queue('q_enq2', force => true);
