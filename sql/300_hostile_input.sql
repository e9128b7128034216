--
-- 300_hostile_input: every SQL function of jobqueue called with hostile and
-- broken arguments: NULL in each argument, empty strings, extreme numbers,
-- 1 MB strings, deeply nested and oversize JSON, negative, zero and enormous
-- intervals, infinite timestamps, arrays of the wrong shape, unknown ids and
-- tokens.  Each call must give a correct result or an ERROR with a precise
-- SQLSTATE; none may crash the server, and a call that fails must leave the
-- queues and jobs exactly as they were.
--
-- try(stmt) runs a query that returns one column and prints either
-- "ok: <values>" or "ERROR <sqlstate>: <message>".  When the call failed it
-- also compares a fingerprint of jobqueue.queues and jobqueue.jobs taken
-- before and after, and says so if they differ.  The fingerprint is the set
-- of visible row versions (their ctids): every insert, update or delete
-- changes it, and it stays cheap with the large tables earlier tests leave.
--
SET client_min_messages = warning;

-- earlier tests may leave many dead rows behind; the fingerprint scans
VACUUM jobqueue.jobs;

CREATE FUNCTION pg_temp.fingerprint() RETURNS text
LANGUAGE sql AS $$
	SELECT (SELECT count(*) || '/' || COALESCE(sum(pg_catalog.hashtext(q.ctid::text)), 0)
			FROM jobqueue.queues q) || ' ' ||
		   (SELECT count(*) || '/' || COALESCE(sum(pg_catalog.hashtext(j.ctid::text)), 0)
			FROM jobqueue.jobs j)
$$;

CREATE FUNCTION pg_temp.try(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	before text := pg_temp.fingerprint();
	result text;
BEGIN
	BEGIN
		EXECUTE 'SELECT pg_catalog.string_agg(COALESCE(r.v::text, ''NULL''), '', '') FROM ('
			|| stmt || ') AS r(v)' INTO result;
		RETURN 'ok: ' || COALESCE(result, '(no rows)');
	EXCEPTION WHEN OTHERS THEN
		result := 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
	END;
	IF pg_temp.fingerprint() IS DISTINCT FROM before THEN
		result := result || ' [TABLES CHANGED]';
	END IF;
	RETURN result;
END
$$;

-- Hostile values, by kind.  Intervals: every one of these but the last
-- must be refused wherever a positive duration is expected (zero is a
-- valid delay).  Fields of both signs are refused even when the total is
-- positive: added to a timestamp they can go backwards on some dates.
CREATE TEMP TABLE bad_intervals (ord int, label text, val text);
INSERT INTO bad_intervals VALUES
	(1, 'negative', '-1 second'),
	(2, 'zero', '0'),
	(3, 'over 100 years', '100 years 1 day'),
	(4, '1000000 years', '1000000 years'),
	(5, 'type maximum', '178000000 years'),
	(6, 'type minimum', '-178000000 years'),
	(7, 'microsecond maximum', '2562047788:00:54.775807'),
	(8, 'mixed signs, 22 days in total',
	 pg_catalog.make_interval(months => 71582789, days => -2147483648)::text),
	(9, 'mixed signs, 1 second in total', '1 mon -30 days 1 second'),
	(10, 'boundary: 100 years', '100 years');

CREATE TEMP TABLE bad_queue_names (ord int, label text, val text);
INSERT INTO bad_queue_names VALUES
	(1, 'NULL', NULL),
	(2, 'empty', ''),
	(3, 'blank', ' '),
	(4, '129 characters', pg_catalog.repeat('q', 129)),
	(5, '1 MB', pg_catalog.repeat('q', 1024 * 1024)),
	(6, 'space', 'a b'),
	(7, 'quote', 'a''b'),
	(8, 'semicolon', 'a;DROP TABLE jobqueue.jobs'),
	(9, 'newline', E'a\nb'),
	(10, 'non-ASCII, 60 characters', pg_catalog.repeat('ü', 60)),
	(11, 'non-ASCII, 129 characters', pg_catalog.repeat('ü', 129)),
	(12, 'unknown', 'no_such_queue'),
	(13, 'non-ASCII, 100 characters', pg_catalog.repeat('ü', 100));

-- The queue the tests work on, with one claimed job.
SELECT jobqueue.jq_create_queue('hostile', max_attempts => 2,
	lease_duration => '1 hour', max_runtime => '2 hours');
SELECT jobqueue.jq_enqueue('hostile', '{"n": 1}') > 0 AS enqueued;
CREATE TEMP TABLE ctx AS
	SELECT c.id AS jid, c.token AS tok FROM jobqueue.jq_claim('hostile', 1, 'w1') c;
SELECT count(*) AS claimed FROM ctx;

--------------------------------------------------------------------------
-- Queue names, for every function that takes one
--------------------------------------------------------------------------
SELECT f.fn, n.label, pg_temp.try(pg_catalog.format(f.stmt, n.val)) AS result
FROM (VALUES
		(1, 'jq_create_queue', 'SELECT jobqueue.jq_create_queue(%L)'),
		(2, 'jq_alter_queue', 'SELECT jobqueue.jq_alter_queue(%L, max_attempts => 3)'),
		(3, 'jq_drop_queue', 'SELECT jobqueue.jq_drop_queue(%L)'),
		(4, 'jq_pause_queue', 'SELECT jobqueue.jq_pause_queue(%L)'),
		(5, 'jq_resume_queue', 'SELECT jobqueue.jq_resume_queue(%L)'),
		(6, 'jq_enqueue', 'SELECT jobqueue.jq_enqueue(%L, ''{}'')'),
		(7, 'jq_enqueue_many', 'SELECT * FROM jobqueue.jq_enqueue_many(%L, ARRAY[''{}''::jsonb])'),
		(8, 'jq_claim', 'SELECT id FROM jobqueue.jq_claim(%L, 1, ''w'')'),
		(9, 'jq_retry_dead', 'SELECT jobqueue.jq_retry_dead(%L)'),
		(10, 'jq_purge', 'SELECT jobqueue.jq_purge(%L)'),
		(11, 'jq_explain_claim', 'SELECT count(*) FROM jobqueue.jq_explain_claim(%L)'))
	AS f(ord, fn, stmt),
	bad_queue_names n
WHERE n.label <> 'unknown' OR f.fn <> 'jq_create_queue'
ORDER BY f.ord, n.ord;

-- a name of exactly 128 characters is fine
SELECT pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_create_queue(%L)', pg_catalog.repeat('Q', 128)));
SELECT pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_drop_queue(%L)', pg_catalog.repeat('Q', 128)));

--------------------------------------------------------------------------
-- jq_create_queue and jq_alter_queue: every policy argument
--------------------------------------------------------------------------
-- NULL in each argument of jq_create_queue (NULL is no default)
SELECT a.arg, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_create_queue(''hostile_new'', %I => NULL)', a.arg)) AS result
FROM pg_catalog.unnest(ARRAY['max_attempts', 'lease_duration', 'max_runtime',
							 'backoff_base', 'backoff_max', 'retention']) AS a(arg);

-- hostile intervals in each interval argument; the valid boundary values
-- are tried on a queue that is dropped again
SELECT a.arg, i.label, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_create_queue(''hostile_new'', %I => %L::interval)', a.arg, i.val)) AS create_result,
	pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_alter_queue(''hostile'', %I => %L::interval)', a.arg, i.val)) AS alter_result
FROM pg_catalog.unnest(ARRAY['lease_duration', 'max_runtime', 'backoff_base',
							 'backoff_max', 'retention']) WITH ORDINALITY AS a(arg, ord),
	bad_intervals i
WHERE i.label NOT LIKE 'boundary%' AND NOT (a.arg = 'retention' AND i.label = 'zero')
ORDER BY a.ord, i.ord;

-- a retention of zero is valid (the queue deletes a job when it
-- succeeds): tried on a queue that is dropped again
SELECT pg_temp.try($$SELECT jobqueue.jq_create_queue('hostile_zero', retention => '0')$$) AS create_result,
	pg_temp.try($$SELECT jobqueue.jq_alter_queue('hostile_zero', retention => '0 days')$$) AS alter_result,
	pg_temp.try($$SELECT retention FROM jobqueue.queues WHERE queue_name = 'hostile_zero'$$) AS retention,
	pg_temp.try($$SELECT jobqueue.jq_drop_queue('hostile_zero')$$) AS drop_result;

-- max_attempts
SELECT v.val, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_create_queue(''hostile_new'', max_attempts => %s)', v.val)) AS create_result,
	pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_alter_queue(''hostile'', max_attempts => %s)', v.val)) AS alter_result
FROM pg_catalog.unnest(ARRAY['0', '-1', '-2147483648']) AS v(val);

-- the largest values that are valid are accepted and stored as given
SELECT pg_temp.try($$SELECT jobqueue.jq_create_queue('hostile_max', 2147483647,
	'100 years', '100 years', '100 years', '100 years', '100 years')$$);
SELECT pg_temp.try($$SELECT jobqueue.jq_create_queue('hostile_min', 1,
	'1 microsecond', '1 microsecond', '1 microsecond', '1 microsecond', '1 microsecond')$$);
SELECT queue_name, max_attempts, lease_duration, max_runtime, backoff_base, backoff_max, retention
FROM jobqueue.queues WHERE queue_name LIKE 'hostile\_%' ORDER BY queue_name;

-- jq_alter_queue: NULL leaves a setting alone, including notify
SELECT pg_temp.try($$SELECT jobqueue.jq_alter_queue('hostile', NULL, NULL, NULL, NULL, NULL, NULL, NULL)$$);
-- jq_drop_queue: force must not be NULL
SELECT pg_temp.try($$SELECT jobqueue.jq_drop_queue('hostile_min', NULL)$$);

--------------------------------------------------------------------------
-- jq_enqueue
--------------------------------------------------------------------------
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile', NULL)$$) AS null_payload;
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile', '{}', NULL)$$) AS null_priority;
-- NULL run_at, max_attempts and idempotency key mean "the default"
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile', '{"null_args": 1}', 0, NULL, NULL, NULL) > 0$$);
SELECT max_attempts, idempotency_key IS NULL AS no_key, available_at <= pg_catalog.now() AS ready
FROM jobqueue.jobs WHERE queue_name = 'hostile' AND payload = '{"null_args": 1}';

-- priorities: any int, including the extremes
SELECT v.val, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_enqueue(''hostile'', ''{"priority": %s}'', %s) > 0', v.val, v.val)) AS result
FROM pg_catalog.unnest(ARRAY['2147483647', '-2147483648']) AS v(val);

-- max_attempts
SELECT v.val, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_enqueue(''hostile'', ''{}'', 0, NULL, %s) > 0', v.val)) AS result
FROM pg_catalog.unnest(ARRAY['0', '-1', '-2147483648', '2147483647']) AS v(val);

-- run_at: must be finite; the ends of the timestamp range are fine
SELECT v.val, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_enqueue(''hostile'', ''{"run_at": %s}'', 0, %L) > 0',
		pg_catalog.to_json(v.val), v.val)) AS result
FROM pg_catalog.unnest(ARRAY['infinity', '-infinity', '294276-12-31 23:59:59+00',
							 '4713-01-01 00:00:00+00 BC']) AS v(val);

-- idempotency keys: not empty, at most 512 bytes; the same key twice gives
-- the same job
SELECT v.label, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_enqueue(''hostile'', ''{}'', 0, NULL, NULL, %s) > 0', v.expr)) AS result
FROM (VALUES ('empty', $$''$$),
			 ('513 bytes', $$pg_catalog.repeat('k', 513)$$),
			 ('1 MB', $$pg_catalog.repeat('k', 1024 * 1024)$$),
			 ('512 bytes', $$pg_catalog.repeat('k', 512)$$)) AS v(label, expr);
SELECT jobqueue.jq_enqueue('hostile', '{"again": 1}', 0, NULL, NULL, pg_catalog.repeat('k', 512)) =
	(SELECT id FROM jobqueue.jobs
	 WHERE queue_name = 'hostile' AND idempotency_key = pg_catalog.repeat('k', 512)) AS same_job;
SELECT count(*) AS jobs_with_key FROM jobqueue.jobs
WHERE queue_name = 'hostile' AND idempotency_key = pg_catalog.repeat('k', 512);

-- payloads: JSON null and empty containers are payloads like any other
SELECT v.val, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_enqueue(''hostile'', %L::jsonb) > 0', v.val)) AS result
FROM pg_catalog.unnest(ARRAY['null', '{}', '[]', '""', '0']) AS v(val);

-- 10,000 levels of nesting are stored and handed out whole; 100,000 levels
-- cannot even be built (the jsonb input function's stack check)
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile_max',
	(pg_catalog.repeat('[', 10000) || '"deep"' || pg_catalog.repeat(']', 10000))::jsonb) > 0$$);
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile_max',
	(pg_catalog.repeat('[', 100000) || pg_catalog.repeat(']', 100000))::jsonb) > 0$$);
SELECT pg_catalog.length(c.payload::text) AS payload_length, c.attempt
FROM jobqueue.jq_claim('hostile_max', 1, 'deep') c;

-- oversize payloads: over jobqueue.max_payload_size is program_limit_exceeded,
-- also when the value is compressed (the limit is on the raw size)
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile',
	pg_catalog.to_jsonb(pg_catalog.repeat('x', 1024 * 1024))) > 0$$) AS over_1mb;
CREATE TEMP TABLE compressed AS
	SELECT pg_catalog.to_jsonb(pg_catalog.repeat('x', 2 * 1024 * 1024)) AS payload;
SELECT pg_catalog.pg_column_size(payload) < 1024 * 1024 AS stored_compressed FROM compressed;
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile', payload) > 0 FROM compressed$$) AS compressed_over_1mb;
-- the boundary: a string payload of n bytes takes n + 8 bytes as jsonb
SET jobqueue.max_payload_size = 100;
SELECT v.n, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_enqueue(''hostile'', pg_catalog.to_jsonb(pg_catalog.repeat(''x'', %s))) > 0', v.n)) AS enqueue,
	pg_temp.try(pg_catalog.format(
		'SELECT count(*) FROM jobqueue.jq_enqueue_many(''hostile'', ARRAY[pg_catalog.to_jsonb(pg_catalog.repeat(''x'', %s))])', v.n)) AS enqueue_many
FROM pg_catalog.unnest(ARRAY[92, 93]) AS v(n);
RESET jobqueue.max_payload_size;

--------------------------------------------------------------------------
-- jq_enqueue_many
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try('SELECT count(*) FROM jobqueue.jq_enqueue_many(''hostile'', ' || v.expr || ')') AS result
FROM (VALUES
		(1, 'NULL array', $$NULL$$),
		(2, 'NULL priority', $$'{"{}"}', NULL$$),
		(3, 'NULL run_at', $$'{"{}"}', 0, NULL$$),
		(4, 'infinite run_at', $$'{"{}"}', 0, 'infinity'$$),
		(5, 'empty array', $$'{}'$$),
		(6, 'NULL element', $$ARRAY[NULL::jsonb]$$),
		(7, 'NULL among elements', $$ARRAY['{}', NULL, '{}']::jsonb[]$$),
		(8, 'two dimensions', $$'{{"{}","{}"},{"{}","{}"}}'$$),
		(9, 'lower bound 5', $$'[5:6]={"{}","{}"}'$$),
		(10, 'one oversize element', $$ARRAY['{}', pg_catalog.to_jsonb(pg_catalog.repeat('x', 1024 * 1024))]$$),
		(11, '10,000 elements', $$(SELECT pg_catalog.array_agg(pg_catalog.jsonb_build_object('bulk', g)) FROM pg_catalog.generate_series(1, 10000) g)$$),
		(12, 'extreme priority', $$'{"{}"}', -2147483648$$))
	AS v(ord, label, expr)
ORDER BY v.ord;
-- the 10,000 ids came back in payload order
SELECT count(*) AS bulk_jobs,
	bool_and(b.payload->'bulk' = pg_catalog.to_jsonb(b.n)) AS in_order
FROM (SELECT j.payload, row_number() OVER (ORDER BY j.id) AS n
	  FROM jobqueue.jobs j
	  WHERE j.queue_name = 'hostile' AND j.payload ? 'bulk') b;
DELETE FROM jobqueue.jobs WHERE queue_name = 'hostile' AND payload ? 'bulk';
VACUUM jobqueue.jobs;

--------------------------------------------------------------------------
-- jq_claim
--------------------------------------------------------------------------
SELECT jobqueue.jq_pause_queue('hostile_min');
SELECT v.label, pg_temp.try('SELECT count(*) FROM jobqueue.jq_claim(' || v.args || ')') AS result
FROM (VALUES
		(1, 'NULL n', $$'hostile_min', NULL, 'w'$$),
		(2, 'NULL owner', $$'hostile_min', 1, NULL$$),
		(3, 'n = 0', $$'hostile_min', 0, 'w'$$),
		(4, 'n = -1', $$'hostile_min', -1, 'w'$$),
		(5, 'n = int min', $$'hostile_min', -2147483648, 'w'$$),
		(6, 'n = int max', $$'hostile_min', 2147483647, 'w'$$),
		(7, 'n = max_claim_batch + 1', $$'hostile_min', 1001, 'w'$$),
		(8, 'n = max_claim_batch', $$'hostile_min', 1000, 'w'$$),
		(9, 'empty owner', $$'hostile_min', 1, ''$$),
		(10, '1 MB owner', $$'hostile_min', 1, pg_catalog.repeat('o', 1024 * 1024)$$),
		(11, '257-byte owner', $$'hostile_min', 1, pg_catalog.repeat('o', 257)$$),
		(12, '256-byte owner', $$'hostile_min', 1, pg_catalog.repeat('o', 256)$$),
		(13, 'NULL lease', $$'hostile_min', 1, 'w', NULL$$))
	AS v(ord, label, args)
ORDER BY v.ord;
SELECT i.label, pg_temp.try(pg_catalog.format(
		'SELECT count(*) FROM jobqueue.jq_claim(''hostile_min'', 1, ''w'', %L::interval)', i.val)) AS result
FROM bad_intervals i ORDER BY i.ord;
-- a huge n is fine once max_claim_batch allows it; the paused queue hands out nothing
SET jobqueue.max_claim_batch = 1000000;
SELECT pg_temp.try($$SELECT count(*) FROM jobqueue.jq_claim('hostile_min', 1000000, 'w')$$);
RESET jobqueue.max_claim_batch;
SELECT count(*) AS pending_in_paused_queue FROM jobqueue.jobs
WHERE queue_name = 'hostile_min' AND status = 'pending';

--------------------------------------------------------------------------
-- Functions on one job: unknown ids and tokens, NULLs, extremes
--------------------------------------------------------------------------
-- ids and tokens that match nothing: false or NULL, and nothing changes
SELECT v.id, v.token,
	pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_complete(%s, %s)', v.id, v.token)) AS complete,
	pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_fail(%s, %s, ''E'')', v.id, v.token)) AS fail,
	pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_heartbeat(%s, %s)', v.id, v.token)) AS heartbeat,
	pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_release(%s, %s)', v.id, v.token)) AS release
FROM (VALUES
		('0', '0'),
		('-1', '1'),
		('9223372036854775807', '9223372036854775807'),
		('-9223372036854775808', '-9223372036854775808'),
		('(SELECT jid FROM ctx)', '0'),
		('(SELECT jid FROM ctx)', '(SELECT tok FROM ctx) + 1'),
		('(SELECT jid FROM ctx)', '(SELECT tok FROM ctx) - 1'),
		('(SELECT jid FROM ctx)', '-9223372036854775808'),
		('(SELECT jid FROM ctx)', '9223372036854775807'),
		('(SELECT jid FROM ctx) + 1000000', '(SELECT tok FROM ctx)')) AS v(id, token);
SELECT v.id,
	pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_cancel(%s)', v.id)) AS cancel,
	pg_temp.try(pg_catalog.format('SELECT jobqueue.jq_retry(%s)', v.id)) AS retry
FROM pg_catalog.unnest(ARRAY['0', '-1', '9223372036854775807', '-9223372036854775808',
							 '(SELECT jid FROM ctx) + 1000000', 'NULL']) AS v(id);

-- NULL in each argument
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'complete(NULL, token)', $$SELECT jobqueue.jq_complete(NULL, (SELECT tok FROM ctx))$$),
		(2, 'complete(id, NULL)', $$SELECT jobqueue.jq_complete((SELECT jid FROM ctx), NULL)$$),
		(3, 'fail(NULL, ...)', $$SELECT jobqueue.jq_fail(NULL, (SELECT tok FROM ctx), 'E')$$),
		(4, 'fail(id, NULL, ...)', $$SELECT jobqueue.jq_fail((SELECT jid FROM ctx), NULL, 'E')$$),
		(5, 'fail(error_code NULL)', $$SELECT jobqueue.jq_fail((SELECT jid FROM ctx), (SELECT tok FROM ctx), NULL)$$),
		(6, 'fail(retryable NULL)', $$SELECT jobqueue.jq_fail((SELECT jid FROM ctx), (SELECT tok FROM ctx), 'E', 'm', NULL)$$),
		(7, 'heartbeat(NULL, token)', $$SELECT jobqueue.jq_heartbeat(NULL, (SELECT tok FROM ctx))$$),
		(8, 'heartbeat(id, NULL)', $$SELECT jobqueue.jq_heartbeat((SELECT jid FROM ctx), NULL)$$),
		(9, 'release(NULL, token)', $$SELECT jobqueue.jq_release(NULL, (SELECT tok FROM ctx))$$),
		(10, 'release(id, NULL)', $$SELECT jobqueue.jq_release((SELECT jid FROM ctx), NULL)$$),
		(11, 'release(delay NULL)', $$SELECT jobqueue.jq_release((SELECT jid FROM ctx), (SELECT tok FROM ctx), NULL)$$),
		(12, 'retry(id, infinity)', $$SELECT jobqueue.jq_retry((SELECT jid FROM ctx), 'infinity')$$),
		(13, 'retry(id, -infinity)', $$SELECT jobqueue.jq_retry((SELECT jid FROM ctx), '-infinity')$$),
		(14, 'fail(empty error_code)', $$SELECT jobqueue.jq_fail((SELECT jid FROM ctx), (SELECT tok FROM ctx), '')$$),
		(15, 'fail(129-byte error_code)', $$SELECT jobqueue.jq_fail((SELECT jid FROM ctx), (SELECT tok FROM ctx), pg_catalog.repeat('E', 129))$$),
		(16, 'fail(1 MB error_code)', $$SELECT jobqueue.jq_fail((SELECT jid FROM ctx), (SELECT tok FROM ctx), pg_catalog.repeat('E', 1024 * 1024))$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

-- The queue-first forms: NULL in each argument, hostile and unknown queue
-- names, a job of another queue (refused, nothing changed)
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'complete(NULL queue)', $$SELECT jobqueue.jq_complete(NULL::text, (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(2, 'complete(queue, NULL, token)', $$SELECT jobqueue.jq_complete('hostile', NULL, (SELECT tok FROM ctx))$$),
		(3, 'complete(queue, id, NULL)', $$SELECT jobqueue.jq_complete('hostile', (SELECT jid FROM ctx), NULL::bigint)$$),
		(4, 'complete(empty queue)', $$SELECT jobqueue.jq_complete('', (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(5, 'complete(1 MB queue)', $$SELECT jobqueue.jq_complete(pg_catalog.repeat('q', 1024 * 1024), 1, 1)$$),
		(6, 'complete(unknown queue)', $$SELECT jobqueue.jq_complete('no_such_queue', (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(7, 'complete(other queue)', $$SELECT jobqueue.jq_complete('hostile_min', (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(8, 'complete_many(NULL queue)', $$SELECT count(*) FROM jobqueue.jq_complete_many(NULL::text, ARRAY[(SELECT jid FROM ctx)], ARRAY[(SELECT tok FROM ctx)])$$),
		(9, 'complete_many(queue, NULL ids)', $$SELECT count(*) FROM jobqueue.jq_complete_many('hostile', NULL, ARRAY[1::bigint])$$),
		(10, 'complete_many(queue, ids, NULL)', $$SELECT count(*) FROM jobqueue.jq_complete_many('hostile', ARRAY[1::bigint], NULL)$$),
		(11, 'complete_many(unknown queue)', $$SELECT count(*) FROM jobqueue.jq_complete_many('no_such_queue', ARRAY[(SELECT jid FROM ctx)], ARRAY[(SELECT tok FROM ctx)])$$),
		(12, 'complete_many(other queue)', $$SELECT count(*) FROM jobqueue.jq_complete_many('hostile_min', ARRAY[(SELECT jid FROM ctx)], ARRAY[(SELECT tok FROM ctx)])$$),
		(13, 'fail(NULL queue)', $$SELECT jobqueue.jq_fail(NULL::text, (SELECT jid FROM ctx), (SELECT tok FROM ctx), 'E')$$),
		(14, 'fail(queue, NULL id)', $$SELECT jobqueue.jq_fail('hostile', NULL, (SELECT tok FROM ctx), 'E')$$),
		(15, 'fail(queue, id, NULL token)', $$SELECT jobqueue.jq_fail('hostile', (SELECT jid FROM ctx), NULL::bigint, 'E')$$),
		(16, 'fail(queue, error_code NULL)', $$SELECT jobqueue.jq_fail('hostile', (SELECT jid FROM ctx), (SELECT tok FROM ctx), NULL)$$),
		(17, 'fail(unknown queue)', $$SELECT jobqueue.jq_fail('no_such_queue', (SELECT jid FROM ctx), (SELECT tok FROM ctx), 'E')$$),
		(18, 'fail(other queue)', $$SELECT jobqueue.jq_fail('hostile_min', (SELECT jid FROM ctx), (SELECT tok FROM ctx), 'E')$$),
		(19, 'heartbeat(NULL queue)', $$SELECT jobqueue.jq_heartbeat(NULL::text, (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(20, 'heartbeat(queue, NULL id)', $$SELECT jobqueue.jq_heartbeat('hostile', NULL, (SELECT tok FROM ctx))$$),
		(21, 'heartbeat(unknown queue)', $$SELECT jobqueue.jq_heartbeat('no_such_queue', (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(22, 'heartbeat(other queue)', $$SELECT jobqueue.jq_heartbeat('hostile_min', (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(23, 'heartbeat(other queue, 100 years)', $$SELECT jobqueue.jq_heartbeat('hostile_min', (SELECT jid FROM ctx), (SELECT tok FROM ctx), '100 years') IS NULL$$),
		(24, 'release(NULL queue)', $$SELECT jobqueue.jq_release(NULL::text, (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(25, 'release(queue, id, NULL)', $$SELECT jobqueue.jq_release('hostile', (SELECT jid FROM ctx), NULL::bigint)$$),
		(26, 'release(delay NULL)', $$SELECT jobqueue.jq_release('hostile', (SELECT jid FROM ctx), (SELECT tok FROM ctx), NULL)$$),
		(27, 'release(other queue)', $$SELECT jobqueue.jq_release('hostile_min', (SELECT jid FROM ctx), (SELECT tok FROM ctx))$$),
		(28, 'progress(NULL queue)', $$SELECT jobqueue.jq_progress(NULL::text, (SELECT jid FROM ctx), (SELECT tok FROM ctx), '{}')$$),
		(29, 'progress(queue, NULL progress)', $$SELECT jobqueue.jq_progress('hostile', (SELECT jid FROM ctx), (SELECT tok FROM ctx), NULL)$$),
		(30, 'progress(other queue)', $$SELECT jobqueue.jq_progress('hostile_min', (SELECT jid FROM ctx), (SELECT tok FROM ctx), '{}')$$),
		(31, 'cancel(NULL queue)', $$SELECT jobqueue.jq_cancel(NULL::text, (SELECT jid FROM ctx))$$),
		(32, 'cancel(queue, NULL)', $$SELECT jobqueue.jq_cancel('hostile', NULL)$$),
		(33, 'cancel(unknown queue)', $$SELECT jobqueue.jq_cancel('no_such_queue', (SELECT jid FROM ctx))$$),
		(34, 'cancel(other queue)', $$SELECT jobqueue.jq_cancel('hostile_min', (SELECT jid FROM ctx))$$),
		(35, 'retry(NULL queue)', $$SELECT jobqueue.jq_retry(NULL::text, (SELECT jid FROM ctx))$$),
		(36, 'retry(queue, NULL)', $$SELECT jobqueue.jq_retry('hostile', NULL::bigint)$$),
		(37, 'retry(queue, id, infinity)', $$SELECT jobqueue.jq_retry('hostile', (SELECT jid FROM ctx), 'infinity')$$),
		(38, 'retry(other queue)', $$SELECT jobqueue.jq_retry('hostile_min', (SELECT jid FROM ctx))$$),
		(39, 'job(NULL queue)', $$SELECT count(*) FROM jobqueue.jq_job(NULL::text, (SELECT jid FROM ctx))$$),
		(40, 'job(queue, NULL)', $$SELECT count(*) FROM jobqueue.jq_job('hostile', NULL)$$),
		(41, 'job(unknown queue)', $$SELECT count(*) FROM jobqueue.jq_job('no_such_queue', 1)$$),
		(42, 'job(other queue)', $$SELECT count(*) FROM jobqueue.jq_job('hostile_min', (SELECT jid FROM ctx))$$),
		(43, 'job(queue, id)', $$SELECT count(*) FROM jobqueue.jq_job('hostile', (SELECT jid FROM ctx))$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

-- hostile intervals: retry_in and delay may be zero, extend may not
SELECT i.label,
	pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_fail((SELECT jid FROM ctx), (SELECT tok FROM ctx) + 1, ''E'', NULL, true, %L::interval)', i.val)) AS fail_retry_in,
	pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_heartbeat((SELECT jid FROM ctx), (SELECT tok FROM ctx) + 1, %L::interval)', i.val)) AS heartbeat_extend,
	pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_release((SELECT jid FROM ctx), (SELECT tok FROM ctx) + 1, %L::interval)', i.val)) AS release_delay
FROM bad_intervals i ORDER BY i.ord;

-- the lease holder: heartbeat with the largest extension is capped at
-- max_runtime, then a 1 MB error message is cut to max_error_length bytes
-- on a character boundary
SELECT jobqueue.jq_heartbeat(jid, tok, '100 years') =
	(SELECT started_at + interval '2 hours' FROM jobqueue.jobs WHERE id = jid) AS capped_at_max_runtime
FROM ctx;
SET jobqueue.max_error_length = 1001;
SELECT jobqueue.jq_fail(jid, tok, pg_catalog.repeat('E', 128), pg_catalog.repeat('é', 1024 * 1024), true, '0')
FROM ctx;
RESET jobqueue.max_error_length;
SELECT pg_catalog.octet_length(errors->-1->>'message') AS message_bytes,
	pg_catalog.length(errors->-1->>'message') AS message_chars,
	pg_catalog.length(last_error_code) AS code_length, status, attempt_count
FROM jobqueue.jobs WHERE id = (SELECT jid FROM ctx);

--------------------------------------------------------------------------
-- jq_complete_many
--------------------------------------------------------------------------
-- claim everything ready in the queue, which includes the job of ctx again
UPDATE ctx SET tok = c.token FROM jobqueue.jq_claim('hostile', 1000, 'w2') c WHERE c.id = ctx.jid;
SELECT tok AS token_of_second_claim FROM ctx;
SELECT v.label, pg_temp.try('SELECT count(*) FROM jobqueue.jq_complete_many(' || v.args || ')') AS result
FROM (VALUES
		(1, 'NULL ids', $$NULL, '{1}'$$),
		(2, 'NULL tokens', $$'{1}', NULL$$),
		(3, 'both empty', $$'{}', '{}'$$),
		(4, 'different lengths', $$'{1,2}', '{1}'$$),
		(5, 'empty and not', $$'{}', '{1}'$$),
		(6, 'NULL element in ids', $$ARRAY[NULL, 1]::bigint[], '{1,1}'$$),
		(7, 'NULL element in tokens', $$'{1,1}', ARRAY[1, NULL]::bigint[]$$),
		(8, 'two dimensions', $$'{{1,2},{3,4}}', '{{1,2},{3,4}}'$$),
		(9, 'two dimensions, same count', $$'{1,2}', '{{1},{2}}'$$),
		(10, 'lower bound 5', $$'[5:6]={-1,-2}', '{1,2}'$$),
		(11, 'extremes', $$'{-9223372036854775808,9223372036854775807}', '{9223372036854775807,-9223372036854775808}'$$),
		(12, '100,000 unknown ids', $$(SELECT pg_catalog.array_agg(-g::bigint) FROM pg_catalog.generate_series(1, 100000) g), pg_catalog.array_fill(1::bigint, ARRAY[100000])$$),
		(13, 'right job, wrong token', $$ARRAY[(SELECT jid FROM ctx)], ARRAY[(SELECT tok FROM ctx) - 1]$$))
	AS v(ord, label, args)
ORDER BY v.ord;
-- the same job twice with its token: completed once, reported once
SELECT count(*) AS completed FROM ctx,
	jobqueue.jq_complete_many(ARRAY[jid, jid, -1], ARRAY[tok, tok, tok]);
SELECT status FROM jobqueue.jobs WHERE id = (SELECT jid FROM ctx);

--------------------------------------------------------------------------
-- jq_complete_and_claim (the arguments of jq_complete_many and jq_claim
-- together), on a queue of its own without jobs: a call that succeeds
-- claims nothing; the ids are of no job (-1, ...) or the job of ctx, so
-- that the counters of queue hostile do not depend on the tests before
--------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('hostile_cac');
SELECT b.label, pg_temp.try(pg_catalog.format(
		'SELECT count(*) FROM jobqueue.jq_complete_and_claim(%L, ''{}'', ''{}'', 1, ''w'')', b.val)) AS queue_name
FROM bad_queue_names b ORDER BY b.ord;
SELECT v.label, pg_temp.try('SELECT count(*) FROM jobqueue.jq_complete_and_claim(' || v.args || ')') AS result
FROM (VALUES
		(1, 'NULL ids', $$'hostile_cac', NULL, '{1}', 1, 'w'$$),
		(2, 'NULL tokens', $$'hostile_cac', '{1}', NULL, 1, 'w'$$),
		(3, 'both empty', $$'hostile_cac', '{}', '{}', 1, 'w'$$),
		(4, 'different lengths', $$'hostile_cac', '{1,2}', '{1}', 1, 'w'$$),
		(5, 'empty and not', $$'hostile_cac', '{}', '{1}', 1, 'w'$$),
		(6, 'NULL element in ids', $$'hostile_cac', ARRAY[NULL, 1]::bigint[], '{1,1}', 1, 'w'$$),
		(7, 'NULL element in tokens', $$'hostile_cac', '{1,1}', ARRAY[1, NULL]::bigint[], 1, 'w'$$),
		(8, 'two dimensions', $$'hostile_cac', '{{1,2},{3,4}}', '{{1,2},{3,4}}', 1, 'w'$$),
		(9, 'two dimensions, same count', $$'hostile_cac', '{1,2}', '{{1},{2}}', 1, 'w'$$),
		(10, 'lower bound 5', $$'hostile_cac', '[5:6]={-1,-2}', '{1,2}', 1, 'w'$$),
		(11, 'extremes', $$'hostile_cac', '{-9223372036854775808,9223372036854775807}', '{9223372036854775807,-9223372036854775808}', 1, 'w'$$),
		(12, '100,000 unknown ids', $$'hostile_cac', (SELECT pg_catalog.array_agg(-g::bigint) FROM pg_catalog.generate_series(1, 100000) g), pg_catalog.array_fill(1::bigint, ARRAY[100000]), 1000, 'w'$$),
		(13, 'succeeded job, its old token', $$'hostile_cac', ARRAY[(SELECT jid FROM ctx)], ARRAY[(SELECT tok FROM ctx)], 1, 'w'$$),
		(14, 'right job, wrong token', $$'hostile_cac', ARRAY[(SELECT jid FROM ctx)], ARRAY[(SELECT tok FROM ctx) - 1], 1, 'w'$$),
		(15, 'n NULL', $$'hostile_cac', '{}', '{}', NULL, 'w'$$),
		(16, 'n 0', $$'hostile_cac', '{}', '{}', 0, 'w'$$),
		(17, 'n int min', $$'hostile_cac', '{}', '{}', -2147483648, 'w'$$),
		(18, 'n int max', $$'hostile_cac', '{}', '{}', 2147483647, 'w'$$),
		(19, 'owner NULL', $$'hostile_cac', '{}', '{}', 1, NULL$$),
		(20, 'owner NULL, n 0', $$'hostile_cac', '{}', '{}', 0, NULL$$),
		(21, 'owner empty', $$'hostile_cac', '{}', '{}', 1, ''$$),
		(22, 'owner 1 MB', $$'hostile_cac', '{}', '{}', 1, pg_catalog.repeat('o', 1024 * 1024)$$),
		(23, 'lease NULL', $$'hostile_cac', '{}', '{}', 1, 'w', NULL$$),
		(24, 'results NULL', $$'hostile_cac', '{-1}', '{1}', 1, 'w', NULL, NULL$$),
		(25, 'results shorter', $$'hostile_cac', '{-1,-2}', '{1,1}', 1, 'w', NULL, ARRAY['{}'::jsonb]$$),
		(26, 'results longer, ids empty', $$'hostile_cac', '{}', '{}', 1, 'w', NULL, ARRAY['{}'::jsonb]$$),
		(27, 'results 2-D', $$'hostile_cac', '{-1,-2}', '{1,1}', 1, 'w', NULL, ARRAY[['{}'::jsonb], ['{}'::jsonb]]$$),
		(28, 'results with NULL', $$'hostile_cac', '{-1}', '{1}', 1, 'w', NULL, ARRAY[NULL::jsonb]$$),
		(29, 'result 2 MB', $$'hostile_cac', '{-1}', '{1}', 1, 'w', NULL, ARRAY[pg_catalog.jsonb_build_object('x', pg_catalog.repeat('x', 2 * 1024 * 1024))]$$),
		(30, 'result 10,000 levels', $$'hostile_cac', '{-1}', '{1}', 1, 'w', NULL, ARRAY[(pg_catalog.repeat('[', 10000) || pg_catalog.repeat(']', 10000))::jsonb]$$),
		(31, 'unknown queue', $$'hostile_none', '{-1}', '{1}', 1, 'w'$$),
		(32, 'unknown queue, n 0', $$'hostile_none', '{-1}', '{1}', 0, 'w'$$),
		(33, 'everything NULL', $$NULL, NULL, NULL, NULL, NULL, NULL, NULL$$))
	AS v(ord, label, args)
ORDER BY v.ord;
SELECT i.label, pg_temp.try(pg_catalog.format(
		'SELECT count(*) FROM jobqueue.jq_complete_and_claim(''hostile_cac'', ''{}'', ''{}'', 1, ''w'', %L::interval)', i.val)) AS lease
FROM bad_intervals i ORDER BY i.ord;

--------------------------------------------------------------------------
-- jq_retry, jq_retry_dead, jq_reap, jq_purge, jq_explain_claim
--------------------------------------------------------------------------
SELECT jobqueue.jq_cancel(id) AS cancelled FROM jobqueue.jobs
WHERE queue_name = 'hostile' AND payload = '{"null_args": 1}';
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'retry_dead(error_code empty)', $$SELECT jobqueue.jq_retry_dead('hostile', '')$$),
		(2, 'retry_dead(error_code 1 MB)', $$SELECT jobqueue.jq_retry_dead('hostile', pg_catalog.repeat('E', 1024 * 1024))$$),
		(3, 'retry_dead(max_jobs NULL)', $$SELECT jobqueue.jq_retry_dead('hostile', NULL, NULL)$$),
		(4, 'retry_dead(max_jobs 0)', $$SELECT jobqueue.jq_retry_dead('hostile', NULL, 0)$$),
		(5, 'retry_dead(max_jobs int min)', $$SELECT jobqueue.jq_retry_dead('hostile', NULL, -2147483648)$$),
		(6, 'retry_dead(unknown code, max_jobs int max)', $$SELECT jobqueue.jq_retry_dead('hostile', 'NO_SUCH_CODE', 2147483647)$$),
		(7, 'reap(NULL)', $$SELECT jobqueue.jq_reap(NULL)$$),
		(8, 'reap(0)', $$SELECT jobqueue.jq_reap(0)$$),
		(9, 'reap(int min)', $$SELECT jobqueue.jq_reap(-2147483648)$$),
		(10, 'reap(int max)', $$SELECT jobqueue.jq_reap(2147483647) >= 0$$),
		(11, 'purge(max_jobs NULL)', $$SELECT jobqueue.jq_purge('hostile', NULL, NULL)$$),
		(12, 'purge(max_jobs 0)', $$SELECT jobqueue.jq_purge('hostile', NULL, 0)$$),
		(13, 'purge(max_jobs int min)', $$SELECT jobqueue.jq_purge('hostile', NULL, -2147483648)$$),
		(14, 'purge(retention, int max)', $$SELECT jobqueue.jq_purge('hostile', NULL, 2147483647)$$),
		(15, 'explain_claim(n NULL)', $$SELECT count(*) FROM jobqueue.jq_explain_claim('hostile', NULL)$$),
		(16, 'explain_claim(n 0)', $$SELECT count(*) FROM jobqueue.jq_explain_claim('hostile', 0)$$),
		(17, 'explain_claim(n int max)', $$SELECT count(*) > 0 FROM jobqueue.jq_explain_claim('hostile', 2147483647)$$),
		(18, 'retry(succeeded job)', $$SELECT jobqueue.jq_retry((SELECT jid FROM ctx))$$),
		(19, 'retry(cancelled job, run_at at the end of time)', $$SELECT jobqueue.jq_retry((SELECT id FROM jobqueue.jobs WHERE queue_name = 'hostile' AND payload = '{"null_args": 1}'), '294276-12-31 23:59:59+00')$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;
SELECT i.label, pg_temp.try(pg_catalog.format(
		'SELECT jobqueue.jq_purge(''hostile_min'', %L::interval)', i.val)) AS purge_older_than
FROM bad_intervals i ORDER BY i.ord;

-- the cast itself refuses intervals that PostgreSQL 15 cannot represent
SELECT pg_temp.try($$SELECT jobqueue.jq_purge('hostile', 'infinity'::interval)$$) AS infinite;
SELECT pg_temp.try($$SELECT jobqueue.jq_purge('hostile', interval '1 second' * 'NaN'::float8)$$) AS nan;

--------------------------------------------------------------------------
-- Stored values out of the functions' reach: the table constraints refuse
-- a lease_token at the end of its range and a policy over 100 years, which
-- would make every claim or reap of the queue fail; a job whose attempt
-- counter is at the end of its range, put there by hand, errors cleanly
-- when claimed and changes nothing
--------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('hostile_edge');
SELECT jobqueue.jq_enqueue('hostile_edge', '{}', 0, NULL, 2147483647) > 0 AS enqueued;
-- 1.2: a token at the bigint maximum cannot be stored (a claim adds 1)
\set VERBOSITY terse
UPDATE jobqueue.jobs SET lease_token = 9223372036854775807 WHERE queue_name = 'hostile_edge';
\set VERBOSITY default
UPDATE jobqueue.jobs SET attempt_count = 2147483647 WHERE queue_name = 'hostile_edge';
SELECT pg_temp.try($$SELECT count(*) FROM jobqueue.jq_claim('hostile_edge', 1, 'w')$$) AS attempts_at_max;
UPDATE jobqueue.jobs SET attempt_count = 0 WHERE queue_name = 'hostile_edge';
-- 1.2: nor a lease policy over 100 years
\set VERBOSITY terse
UPDATE jobqueue.queues SET lease_duration = '1000000 years', max_runtime = '1000000 years'
WHERE queue_name = 'hostile_edge';
\set VERBOSITY default
SELECT status, attempt_count, lease_token FROM jobqueue.jobs WHERE queue_name = 'hostile_edge';

--------------------------------------------------------------------------
-- A read-only transaction: every writing function refuses cleanly
--------------------------------------------------------------------------
BEGIN READ ONLY;
SELECT pg_temp.try($$SELECT jobqueue.jq_enqueue('hostile', '{}')$$) AS enqueue;
SELECT pg_temp.try($$SELECT count(*) FROM jobqueue.jq_claim('hostile', 1, 'w')$$) AS claim;
SELECT pg_temp.try($$SELECT count(*) FROM jobqueue.jq_complete_and_claim('hostile', '{1}', '{1}', 1, 'w')$$) AS complete_and_claim;
SELECT pg_temp.try($$SELECT jobqueue.jq_reap()$$) AS reap;
SELECT pg_temp.try($$SELECT jobqueue.jq_create_queue('hostile_ro')$$) AS create_queue;
COMMIT;

--------------------------------------------------------------------------
-- 1.1: statistics, event counters, role helpers, worker status
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'finished_count(NULL, status)', $$SELECT jobqueue.jq_finished_count(NULL, 'succeeded')$$),
		(2, 'finished_count(queue, NULL)', $$SELECT jobqueue.jq_finished_count('hostile', NULL)$$),
		(3, 'finished_count(1 MB name)', $$SELECT jobqueue.jq_finished_count(pg_catalog.repeat('q', 1024 * 1024), 'succeeded')$$),
		(4, 'finished_count(unknown status)', $$SELECT jobqueue.jq_finished_count('hostile', 'finished')$$),
		(5, 'finished_count(hostile, succeeded)', $$SELECT jobqueue.jq_finished_count('hostile', 'succeeded')$$),
		(6, 'counters(NULL)', $$SELECT count(*) > 0 FROM jobqueue.jq_counters(NULL)$$),
		(7, 'counters(all databases)', $$SELECT count(*) > 0 FROM jobqueue.jq_counters(true)$$),
		(8, 'counters_reset(1 MB name)', $$SELECT jobqueue.jq_counters_reset(pg_catalog.repeat('q', 1024 * 1024))$$),
		(9, 'counters_reset(invalid name)', $$SELECT jobqueue.jq_counters_reset('a;b')$$),
		(10, 'counters_reset(unknown queue)', $$SELECT jobqueue.jq_counters_reset('no_such_queue')$$),
		(11, 'role_functions(NULL)', $$SELECT count(*) FROM jobqueue.jq_role_functions(NULL)$$),
		(12, 'role_functions(unknown)', $$SELECT count(*) FROM jobqueue.jq_role_functions('root')$$),
		(13, 'role_functions(1 MB)', $$SELECT count(*) FROM jobqueue.jq_role_functions(pg_catalog.repeat('w', 1024 * 1024))$$),
		(14, 'role_functions(worker)', $$SELECT count(*) FROM jobqueue.jq_role_functions('worker')$$),
		(15, 'worker_status()', $$SELECT count(*) FROM jobqueue.jq_worker_status()$$),
		(16, 'worker_tasks()', $$SELECT count(*) FROM jobqueue.jq_worker_tasks()$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

--------------------------------------------------------------------------
-- 1.4: latency histograms, error counts (a queue name is only compared)
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'latency(NULL)', $$SELECT count(*) >= 0 FROM jobqueue.jq_latency(NULL)$$),
		(2, 'latency(1 MB name)', $$SELECT count(*) FROM jobqueue.jq_latency(pg_catalog.repeat('q', 1024 * 1024))$$),
		(3, 'latency(name is SQL)', $$SELECT count(*) FROM jobqueue.jq_latency('x''; DROP TABLE jobqueue.jobs; --')$$),
		(4, 'latency_buckets(NULL)', $$SELECT count(*) >= 0 FROM jobqueue.jq_latency_buckets(NULL)$$),
		(5, 'latency_buckets(1 MB name)', $$SELECT count(*) FROM jobqueue.jq_latency_buckets(pg_catalog.repeat('q', 1024 * 1024))$$),
		(6, 'latency_buckets(overflow row)', $$SELECT count(*) FROM jobqueue.jq_latency_buckets('*')$$),
		(6.1, 'latency_histograms(NULL)', $$SELECT count(*) >= 0 FROM jobqueue.jq_latency_histograms(NULL)$$),
		(6.2, 'latency_histograms(1 MB name)', $$SELECT count(*) FROM jobqueue.jq_latency_histograms(pg_catalog.repeat('q', 1024 * 1024))$$),
		(6.3, 'latency_histograms(name is SQL)', $$SELECT count(*) FROM jobqueue.jq_latency_histograms('x''; DROP TABLE jobqueue.jobs; --')$$),
		(7, 'latency_reset(1 MB name)', $$SELECT jobqueue.jq_latency_reset(pg_catalog.repeat('q', 1024 * 1024))$$),
		(8, 'latency_reset(unknown queue)', $$SELECT jobqueue.jq_latency_reset('no_such_queue')$$),
		(9, 'error_counts(NULL)', $$SELECT count(*) >= 0 FROM jobqueue.jq_error_counts(NULL)$$),
		(10, 'error_counts(1 MB name)', $$SELECT count(*) FROM jobqueue.jq_error_counts(pg_catalog.repeat('q', 1024 * 1024))$$),
		(11, 'error_counts(name is SQL)', $$SELECT count(*) FROM jobqueue.jq_error_counts('x''; DROP TABLE jobqueue.jobs; --')$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

-- the counters of the hostile queue hold only the calls that succeeded
SELECT enqueued, claimed, completed, complete_fenced, failed_retryable,
	failed_permanent, retries_scheduled, dead_lettered, replayed, purged,
	claim_calls, complete_calls
FROM jobqueue.jq_counters() WHERE queue_name = 'hostile';

-- role helpers: a role's name is never SQL text, whatever it contains
CREATE ROLE regress_jq_hostile;
CREATE ROLE "regress_jq ""hostile""; DROP TABLE jobqueue.jobs; --";
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'grant_producer(NULL)', $$SELECT jobqueue.jq_grant_producer(NULL)$$),
		(2, 'grant_worker(NULL)', $$SELECT jobqueue.jq_grant_worker(NULL)$$),
		(3, 'grant_admin(NULL)', $$SELECT jobqueue.jq_grant_admin(NULL)$$),
		(4, 'revoke_producer(NULL)', $$SELECT jobqueue.jq_revoke_producer(NULL)$$),
		(5, 'revoke_worker(NULL)', $$SELECT jobqueue.jq_revoke_worker(NULL)$$),
		(6, 'revoke_admin(NULL)', $$SELECT jobqueue.jq_revoke_admin(NULL)$$),
		(7, 'grant_worker(unknown role)', $$SELECT jobqueue.jq_grant_worker('regress_jq_no_such_role')$$),
		(8, 'grant_worker(1 MB role name)', $$SELECT jobqueue.jq_grant_worker(pg_catalog.repeat('r', 1024 * 1024)::regrole)$$),
		(9, 'grant_worker(''-'', role 0)', $$SELECT jobqueue.jq_grant_worker('-')$$),
		(10, 'grant_worker(OID of no role)', $$SELECT jobqueue.jq_grant_worker(4294967295::oid::regrole)$$),
		(11, 'grant_role(NULL kind)', $$SELECT jobqueue.jq_grant_role(NULL, 'regress_jq_hostile', true)$$),
		(12, 'grant_role(unknown kind)', $$SELECT jobqueue.jq_grant_role('root', 'regress_jq_hostile', true)$$),
		(13, 'grant_role(grant_it NULL)', $$SELECT jobqueue.jq_grant_role('worker', 'regress_jq_hostile', NULL)$$),
		(14, 'grant_worker(quoted name)', $$SELECT jobqueue.jq_grant_worker('"regress_jq ""hostile""; DROP TABLE jobqueue.jobs; --"')$$),
		(15, 'grant_monitor(NULL)', $$SELECT jobqueue.jq_grant_monitor(NULL)$$),
		(16, 'revoke_monitor(NULL)', $$SELECT jobqueue.jq_revoke_monitor(NULL)$$),
		(17, 'grant_monitor(OID of no role)', $$SELECT jobqueue.jq_grant_monitor(4294967295::oid::regrole)$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;
SELECT pg_catalog.has_function_privilege('"regress_jq ""hostile""; DROP TABLE jobqueue.jobs; --"'::regrole,
		'jobqueue.jq_claim(text, integer, text, interval)', 'EXECUTE') AS quoted_role_may_claim,
	pg_catalog.has_schema_privilege('regress_jq_hostile', 'jobqueue', 'USAGE') AS plain_role_has_schema;
SELECT pg_temp.try($$SELECT jobqueue.jq_revoke_worker('"regress_jq ""hostile""; DROP TABLE jobqueue.jobs; --"')$$);
SELECT pg_catalog.has_function_privilege('"regress_jq ""hostile""; DROP TABLE jobqueue.jobs; --"'::regrole,
		'jobqueue.jq_claim(text, integer, text, interval)', 'EXECUTE') AS quoted_role_may_claim;
DROP OWNED BY regress_jq_hostile, "regress_jq ""hostile""; DROP TABLE jobqueue.jobs; --";
DROP ROLE regress_jq_hostile, "regress_jq ""hostile""; DROP TABLE jobqueue.jobs; --";

-- results, progress and dependencies: NULL in each argument, unknown ids
-- and tokens, oversize and deeply nested JSON, arrays of the wrong shape
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'progress(NULL, token)', $$SELECT jobqueue.jq_progress(NULL, 1, '{}')$$),
		(2, 'progress(id, NULL)', $$SELECT jobqueue.jq_progress(1, NULL, '{}')$$),
		(3, 'progress(NULL progress)', $$SELECT jobqueue.jq_progress(1, 1, NULL)$$),
		(4, 'progress(unknown id)', $$SELECT jobqueue.jq_progress(9223372036854775807, 9223372036854775807, '{}')$$),
		(5, 'progress(negative id, token)', $$SELECT jobqueue.jq_progress(-9223372036854775808, -1, '[]')$$),
		(6, 'progress(2 MB)', $$SELECT jobqueue.jq_progress(1, 1, pg_catalog.jsonb_build_object('x', pg_catalog.repeat('x', 2 * 1024 * 1024)))$$),
		(7, 'progress(10,000 levels)', $$SELECT jobqueue.jq_progress(1, 1, (pg_catalog.repeat('[', 10000) || pg_catalog.repeat(']', 10000))::jsonb)$$),
		(8, 'job(NULL)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_job(NULL)$$),
		(9, 'job(unknown id)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_job(-9223372036854775808)$$),
		(10, 'complete(result 2 MB)', $$SELECT jobqueue.jq_complete(1, 1, pg_catalog.jsonb_build_object('x', pg_catalog.repeat('x', 2 * 1024 * 1024)))$$),
		(11, 'complete(result NULL)', $$SELECT jobqueue.jq_complete(9223372036854775807, 1, NULL)$$),
		(12, 'complete_many(results shorter)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_complete_many('{1,2}', '{1,1}', ARRAY['{}'::jsonb])$$),
		(13, 'complete_many(results 2-D)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_complete_many('{1,2}', '{1,1}', ARRAY[['{}'::jsonb], ['{}'::jsonb]])$$),
		(14, 'complete_many(results with NULL)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_complete_many('{1}', '{1}', ARRAY[NULL::jsonb])$$),
		(15, 'complete_many(result 2 MB)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_complete_many('{1}', '{1}', ARRAY[pg_catalog.jsonb_build_object('x', pg_catalog.repeat('x', 2 * 1024 * 1024))])$$),
		(16, 'fail(error_detail 2 MB)', $$SELECT jobqueue.jq_fail(1, 1, 'E', error_detail => pg_catalog.jsonb_build_object('x', pg_catalog.repeat('x', 2 * 1024 * 1024)))$$),
		(17, 'enqueue(depends_on NULL element)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', depends_on => ARRAY[NULL::bigint])$$),
		(18, 'enqueue(depends_on unknown)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', depends_on => ARRAY[9223372036854775807])$$),
		(19, 'enqueue(depends_on 2-D)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', depends_on => ARRAY[[1], [2]])$$),
		(20, 'enqueue(depends_on 100,000 unknown)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', depends_on => ARRAY(SELECT -g FROM pg_catalog.generate_series(1, 100000) g))$$),
		(21, 'enqueue(depends_on, unknown queue)', $$SELECT jobqueue.jq_enqueue('hostile_none', '{}', depends_on => '{}')$$),
		(22, 'enqueue_many(depends_on unknown)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], depends_on => ARRAY[-1::bigint])$$),
		(23, 'enqueue_many(depends_on NULL element)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], depends_on => ARRAY[NULL::bigint])$$),
		(24, 'create_queue(notify_finished NULL)', $$SELECT jobqueue.jq_create_queue('hostile_nf', notify_finished => NULL)$$),
		(25, 'alter_queue(unknown queue, notify_finished)', $$SELECT jobqueue.jq_alter_queue('hostile_none', notify_finished => true)$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

-- the statistics view over the queues above
SELECT queue_name, paused, pending, ready, scheduled, running, succeeded, dead,
	cancelled, oldest_ready_age IS NOT NULL AS has_ready
FROM jobqueue.queue_stats WHERE queue_name LIKE 'hostile%' ORDER BY queue_name;

--------------------------------------------------------------------------
-- 1.2, ordering and fairness: group keys, queue policies, group statistics
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'enqueue(group NULL)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', group_key => NULL) > 0$$),
		(2, 'enqueue(group empty)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', group_key => '')$$),
		(3, 'enqueue(group 256 bytes)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', group_key => pg_catalog.repeat('g', 256)) > 0$$),
		(4, 'enqueue(group 257 bytes)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', group_key => pg_catalog.repeat('g', 257))$$),
		(5, 'enqueue(group 1 MB)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', group_key => pg_catalog.repeat('g', 1024 * 1024))$$),
		(6, 'enqueue(group SQL)', $$SELECT jobqueue.jq_enqueue('hostile', '{}', group_key => 'a''; DROP TABLE jobqueue.jobs; --') > 0$$),
		(7, 'enqueue_many(keys NULL)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], group_keys => NULL)$$),
		(8, 'enqueue_many(NULL key)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], group_keys => ARRAY[NULL::text])$$),
		(9, 'enqueue_many(too few keys)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb, '{}'], group_keys => ARRAY['a'])$$),
		(10, 'enqueue_many(too many keys)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], group_keys => ARRAY['a', 'b'])$$),
		(11, 'enqueue_many(empty key)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], group_keys => ARRAY[''])$$),
		(12, 'enqueue_many(long key)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], group_keys => ARRAY[pg_catalog.repeat('g', 257)])$$),
		(13, 'enqueue_many(2-D keys)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY['{}'::jsonb], group_keys => ARRAY[ARRAY['a']])$$),
		(14, 'enqueue_many(no payloads, keys)', $$SELECT count(*) FROM jobqueue.jq_enqueue_many('hostile', ARRAY[]::jsonb[], group_keys => ARRAY['a'])$$),
		(15, 'create(group_concurrency 0)', $$SELECT jobqueue.jq_create_queue('hostile_new', group_concurrency => 0)$$),
		(16, 'create(group_concurrency min)', $$SELECT jobqueue.jq_create_queue('hostile_new', group_concurrency => -2147483648)$$),
		(17, 'create(group_ordered NULL)', $$SELECT jobqueue.jq_create_queue('hostile_new', group_ordered => NULL)$$),
		(18, 'create(ordered, concurrency 2)', $$SELECT jobqueue.jq_create_queue('hostile_new', group_ordered => true, group_concurrency => 2)$$),
		(19, 'create(fairness NULL)', $$SELECT jobqueue.jq_create_queue('hostile_new', fairness => NULL)$$),
		(20, 'create(fairness unknown)', $$SELECT jobqueue.jq_create_queue('hostile_new', fairness => 'lottery')$$),
		(21, 'create(fairness 1 MB)', $$SELECT jobqueue.jq_create_queue('hostile_new', fairness => pg_catalog.repeat('p', 1024 * 1024))$$),
		(22, 'create(aging zero)', $$SELECT jobqueue.jq_create_queue('hostile_new', priority_aging => '0')$$),
		(23, 'create(aging negative)', $$SELECT jobqueue.jq_create_queue('hostile_new', priority_aging => '-1 second')$$),
		(24, 'create(aging mixed signs)', $$SELECT jobqueue.jq_create_queue('hostile_new', priority_aging => '1 mon -30 days 1 second')$$),
		(25, 'create(aging 1000000 years)', $$SELECT jobqueue.jq_create_queue('hostile_new', priority_aging => '1000000 years')$$),
		(26, 'alter(group_concurrency -1)', $$SELECT jobqueue.jq_alter_queue('hostile', group_concurrency => -1)$$),
		(27, 'alter(fairness unknown)', $$SELECT jobqueue.jq_alter_queue('hostile', fairness => 'PRIORITY')$$),
		(28, 'alter(aging negative)', $$SELECT jobqueue.jq_alter_queue('hostile', priority_aging => '-1 second')$$),
		(29, 'alter(ordered, concurrency 5)', $$SELECT jobqueue.jq_alter_queue('hostile', group_ordered => true, group_concurrency => 5)$$),
		(30, 'alter(unknown queue, policy)', $$SELECT jobqueue.jq_alter_queue('no_such_queue', fairness => 'round_robin')$$),
		(31, 'alter(all NULL)', $$SELECT jobqueue.jq_alter_queue('hostile', group_concurrency => NULL, group_ordered => NULL, fairness => NULL, priority_aging => NULL)$$),
		(32, 'group_stats(NULL)', $$SELECT count(*) FROM jobqueue.jq_group_stats(NULL)$$),
		(33, 'group_stats(invalid name)', $$SELECT count(*) FROM jobqueue.jq_group_stats('a;b')$$),
		(34, 'group_stats(1 MB name)', $$SELECT count(*) FROM jobqueue.jq_group_stats(pg_catalog.repeat('q', 1024 * 1024))$$),
		(35, 'group_stats(unknown queue)', $$SELECT count(*) FROM jobqueue.jq_group_stats('no_such_queue')$$),
		(36, 'group_stats(hostile)', $$SELECT count(*) FROM jobqueue.jq_group_stats('hostile')$$),
		(37, 'group_count() called directly', $$SELECT jobqueue.jq_group_count()$$),
		(38, 'recount_groups(NULL)', $$SELECT jobqueue.jq_recount_groups(NULL) >= 0$$),
		(39, 'recount_groups(invalid name)', $$SELECT jobqueue.jq_recount_groups('a;b')$$),
		(40, 'recount_groups(1 MB name)', $$SELECT jobqueue.jq_recount_groups(pg_catalog.repeat('q', 1024 * 1024))$$),
		(41, 'recount_groups(unknown queue)', $$SELECT jobqueue.jq_recount_groups('no_such_queue')$$),
		(42, 'recount_groups(hostile)', $$SELECT jobqueue.jq_recount_groups('hostile')$$),
		(43, 'dependencies_settle() called directly', $$SELECT jobqueue.jq_dependencies_settle()$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

--------------------------------------------------------------------------
-- 1.2: cron expressions, schedules, rate limits
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'cron_next(NULL cron)', $$SELECT * FROM jobqueue.jq_cron_next(NULL, now())$$),
		(2, 'cron_next(NULL after)', $$SELECT * FROM jobqueue.jq_cron_next('* * * * *', NULL)$$),
		(3, 'cron_next(NULL timezone)', $$SELECT * FROM jobqueue.jq_cron_next('* * * * *', now(), NULL)$$),
		(4, 'cron_next(NULL count)', $$SELECT * FROM jobqueue.jq_cron_next('* * * * *', now(), 'UTC', NULL)$$),
		(5, 'cron_next(1 MB cron)', $$SELECT * FROM jobqueue.jq_cron_next(pg_catalog.repeat('*', 1024 * 1024), now())$$),
		(6, 'cron_next(1 MB timezone)', $$SELECT * FROM jobqueue.jq_cron_next('* * * * *', now(), pg_catalog.repeat('x', 1024 * 1024))$$),
		(7, 'cron_next(infinity)', $$SELECT * FROM jobqueue.jq_cron_next('* * * * *', 'infinity')$$),
		(8, 'cron_next(-infinity)', $$SELECT * FROM jobqueue.jq_cron_next('* * * * *', '-infinity')$$),
		(9, 'cron_next(first instant)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_cron_next('* * * * *', '4714-11-24 00:00:00+00 BC', 'UTC', 3)$$),
		(10, 'cron_next(last instant)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_cron_next('* * * * *', '294276-12-31 23:59:59+00', 'UTC', 3)$$),
		(11, 'cron_next(seconds at the end)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_cron_next('59 seconds', '294276-12-31 23:59:59+00', 'UTC', 3)$$),
		(12, 'cron_next(int max count)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_cron_next('* * * * *', now(), 'UTC', 2147483647)$$),
		(13, 'cron_next(int min count)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_cron_next('* * * * *', now(), 'UTC', -2147483648)$$),
		(14, 'cron_next(huge numbers)', $$SELECT * FROM jobqueue.jq_cron_next('99999999999999999999 * * * *', now())$$),
		(15, 'cron_next(huge step)', $$SELECT * FROM jobqueue.jq_cron_next('*/99999999999999999999 * * * *', now())$$),
		(16, 'cron_next(never fires)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_cron_next('0 0 31 2 *', now(), 'UTC', 100000)$$),
		(17, 'cron_next(posix zone)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_cron_next('0 0 * * *', now(), '<+0330>-3:30', 2)$$),
		(18, 'schedule(NULL name)', $$SELECT jobqueue.jq_schedule(NULL, 'hostile', '* * * * *')$$),
		(19, 'schedule(1 MB name)', $$SELECT jobqueue.jq_schedule(pg_catalog.repeat('s', 1024 * 1024), 'hostile', '* * * * *')$$),
		(20, 'schedule(name is SQL)', $$SELECT jobqueue.jq_schedule('x''; DROP TABLE jobqueue.jobs; --', 'hostile', '* * * * *')$$),
		(21, 'schedule(unknown queue)', $$SELECT jobqueue.jq_schedule('h', 'no_such_queue', '* * * * *')$$),
		(22, 'schedule(1 MB cron)', $$SELECT jobqueue.jq_schedule('h', 'hostile', pg_catalog.repeat('1,', 512 * 1024) || '1 * * * *')$$),
		(23, 'schedule(never fires)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '0 0 31 11 *')$$),
		(24, 'schedule(deep payload)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', (pg_catalog.repeat('{"a": ', 5000) || '1' || pg_catalog.repeat('}', 5000))::jsonb) IS NOT NULL$$),
		(25, 'schedule(scalar payload)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', 'null')$$),
		(26, 'schedule(oversize payload)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', pg_catalog.jsonb_build_object('x', pg_catalog.repeat('x', 2 * 1024 * 1024)))$$),
		(27, 'schedule(NULL timezone)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', timezone => NULL)$$),
		(28, 'schedule(1 MB timezone)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', timezone => pg_catalog.repeat('z', 1024 * 1024))$$),
		(29, 'schedule(int min priority)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', priority => -2147483648) IS NOT NULL$$),
		(30, 'schedule(1 MB catch_up)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', catch_up => pg_catalog.repeat('a', 1024 * 1024))$$),
		(31, 'schedule(NULL enabled)', $$SELECT jobqueue.jq_schedule('h', 'hostile', '* * * * *', enabled => NULL)$$),
		(32, 'unschedule(NULL)', $$SELECT jobqueue.jq_unschedule(NULL)$$),
		(33, 'unschedule(1 MB name)', $$SELECT jobqueue.jq_unschedule(pg_catalog.repeat('s', 1024 * 1024))$$),
		(34, 'unschedule(unknown)', $$SELECT jobqueue.jq_unschedule('no_such_schedule')$$),
		(35, 'unschedule(h)', $$SELECT jobqueue.jq_unschedule('h')$$),
		(36, 'run_schedules()', $$SELECT jobqueue.jq_run_schedules()$$),
		(37, 'create_queue(NaN rate)', $$SELECT jobqueue.jq_create_queue('hostile_rl', rate_limit => 'NaN')$$),
		(38, 'create_queue(infinite rate)', $$SELECT jobqueue.jq_create_queue('hostile_rl', rate_limit => '-Infinity')$$),
		(39, 'create_queue(int max burst)', $$SELECT jobqueue.jq_create_queue('hostile_rl', rate_limit => 1, rate_burst => 2147483647)$$),
		(40, 'alter_queue(int min burst)', $$SELECT jobqueue.jq_alter_queue('hostile', rate_burst => -2147483648)$$),
		(41, 'alter_queue(tiny rate)', $$SELECT jobqueue.jq_alter_queue('hostile', rate_limit => 1e-300)$$),
		(42, 'rate_limits()', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_rate_limits()$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

--------------------------------------------------------------------------
-- 1.4: listing jobs and schedules, stack traces of failures
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'jobs(NULL queue)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs(NULL)$$),
		(2, 'jobs(1 MB queue)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs(pg_catalog.repeat('q', 1024 * 1024))$$),
		(3, 'jobs(queue name is SQL)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs('x''; DROP TABLE jobqueue.jobs; --')$$),
		(4, 'jobs(int max page)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs('hostile', max_jobs => 2147483647)$$),
		(5, 'jobs(int min page)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs('hostile', max_jobs => -2147483648)$$),
		(6, 'jobs(bigint min before)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs('hostile', before_id => -9223372036854775808)$$),
		(7, 'jobs(bigint max before)', $$SELECT pg_catalog.count(*) >= 0 FROM jobqueue.jq_jobs('hostile', before_id => 9223372036854775807)$$),
		(8, 'jobs(1 MB group key)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs('hostile', group_key => pg_catalog.repeat('g', 1024 * 1024))$$),
		(9, 'jobs(1 MB error code)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs('hostile', error_code => pg_catalog.repeat('E', 1024 * 1024))$$),
		(10, 'jobs(group key is SQL)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_jobs('hostile', group_key => 'x''; DROP TABLE jobqueue.jobs; --')$$),
		(11, 'schedules()', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_schedules()$$),
		(12, 'fail(stack on unknown job)', $$SELECT jobqueue.jq_fail(-1, 1, 'E', 'm', stack => pg_catalog.repeat('s', 1024 * 1024))$$),
		(13, 'queue_counts(NULL limit)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_queue_counts(NULL, NULL)$$),
		(14, 'queue_counts(int max limit)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_queue_counts(NULL, 2147483647)$$),
		(15, 'queue_counts(int min limit)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_queue_counts(NULL, -2147483648)$$),
		(16, 'queue_counts(1 MB and NULL names)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_queue_counts(ARRAY[pg_catalog.repeat('q', 1024 * 1024), NULL])$$),
		(17, 'queue_counts(name is SQL)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_queue_counts(ARRAY['x''; DROP TABLE jobqueue.jobs; --'])$$),
		(18, 'queue_counts(empty array)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_queue_counts('{}')$$),
		(19, 'version()', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_version()$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

--------------------------------------------------------------------------
-- 1.4: per-group overrides
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'set_group_limit(NULL queue)', $$SELECT jobqueue.jq_set_group_limit(NULL, 'g', 1)$$),
		(2, 'set_group_limit(1 MB queue)', $$SELECT jobqueue.jq_set_group_limit(pg_catalog.repeat('q', 1024 * 1024), 'g', 1)$$),
		(3, 'set_group_limit(queue is SQL)', $$SELECT jobqueue.jq_set_group_limit('x''; DROP TABLE jobqueue.jobs; --', 'g', 1)$$),
		(4, 'set_group_limit(NULL group)', $$SELECT jobqueue.jq_set_group_limit('hostile', NULL, 1)$$),
		(5, 'set_group_limit(1 MB group)', $$SELECT jobqueue.jq_set_group_limit('hostile', pg_catalog.repeat('g', 1024 * 1024), 1)$$),
		(6, 'set_group_limit(int min)', $$SELECT jobqueue.jq_set_group_limit('hostile', 'g', -2147483648)$$),
		(7, 'set_group_limit(rate NaN)', $$SELECT jobqueue.jq_set_group_limit('hostile', 'g', rate_limit => 'NaN')$$),
		(8, 'set_group_limit(rate -Infinity)', $$SELECT jobqueue.jq_set_group_limit('hostile', 'g', rate_limit => '-Infinity')$$),
		(9, 'set_group_limit(burst int max)', $$SELECT jobqueue.jq_set_group_limit('hostile', 'g', rate_burst => 2147483647)$$),
		(10, 'set_group_limit(weight Infinity)', $$SELECT jobqueue.jq_set_group_limit('hostile', 'g', weight => 'Infinity')$$),
		(11, 'set_group_limit(weight tiny negative)', $$SELECT jobqueue.jq_set_group_limit('hostile', 'g', weight => -1e-300)$$),
		(12, 'set_group_limit(all NULL)', $$SELECT jobqueue.jq_set_group_limit('hostile', 'g')$$),
		(13, 'group_limits(NULL)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_group_limits(NULL)$$),
		(14, 'group_limits(1 MB queue)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_group_limits(pg_catalog.repeat('q', 1024 * 1024))$$),
		(15, 'group_limits(unknown queue)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_group_limits('no_such_queue')$$),
		(16, 'group_limits(hostile)', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_group_limits('hostile')$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

--------------------------------------------------------------------------
-- 1.4: scale-out on Citus, called on a server without it
--------------------------------------------------------------------------
SELECT v.label, pg_temp.try(v.stmt) AS result
FROM (VALUES
		(1, 'distribute() without Citus', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_distribute()$$),
		(2, 'distribute_node() without Citus', $$SELECT pg_catalog.count(*) FROM jobqueue.jq_distribute_node()$$),
		(3, 'queue_node(NULL)', $$SELECT jobqueue.jq_queue_node(NULL)$$),
		(4, 'queue_node(1 MB name)', $$SELECT jobqueue.jq_queue_node(pg_catalog.repeat('q', 1024 * 1024))$$),
		(5, 'queue_node(name is SQL)', $$SELECT jobqueue.jq_queue_node('x''; DROP TABLE jobqueue.jobs; --')$$),
		(6, 'plans_reset() twice', $$SELECT jobqueue.jq_plans_reset(), jobqueue.jq_plans_reset()$$))
	AS v(ord, label, stmt)
ORDER BY v.ord;

--------------------------------------------------------------------------
-- Every function of the extension was called above.  A new function must
-- be added to this test (and to this list) with its own hostile calls.
--------------------------------------------------------------------------
SELECT p.oid::regprocedure AS not_covered
FROM pg_catalog.pg_depend d
	JOIN pg_catalog.pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_catalog.pg_proc'::regclass AND d.deptype = 'e'
	AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'jobqueue')
	AND p.proname NOT IN ('jq_create_queue', 'jq_alter_queue', 'jq_drop_queue',
						  'jq_pause_queue', 'jq_resume_queue', 'jq_enqueue',
						  'jq_enqueue_many', 'jq_claim', 'jq_complete',
						  'jq_complete_many', 'jq_complete_and_claim',
						  'jq_fail', 'jq_heartbeat',
						  'jq_release', 'jq_cancel', 'jq_retry', 'jq_retry_dead',
						  'jq_reap', 'jq_purge', 'jq_explain_claim',
						  'jq_finished_count', 'jq_counters', 'jq_counters_reset',
						  'jq_latency', 'jq_latency_buckets', 'jq_latency_histograms', 'jq_latency_reset',
						  'jq_error_counts',
						  'jq_role_functions', 'jq_grant_role',
						  'jq_grant_producer', 'jq_grant_worker', 'jq_grant_admin',
						  'jq_revoke_producer', 'jq_revoke_worker', 'jq_revoke_admin',
						  'jq_grant_monitor', 'jq_revoke_monitor',
						  'jq_worker_status', 'jq_worker_tasks',
						  'jq_progress', 'jq_job',
						  'jq_group_stats', 'jq_group_count', 'jq_recount_groups',
						  'jq_set_group_limit', 'jq_group_limits',
						  'jq_dependencies_settle', 'jq_cron_next', 'jq_schedule', 'jq_unschedule',
						  'jq_run_schedules', 'jq_rate_limits',
						  'jq_jobs', 'jq_schedules', 'jq_queue_counts', 'jq_version',
						  'jq_distribute', 'jq_distribute_node', 'jq_queue_node', 'jq_plans_reset')
ORDER BY 1;

-- clean up
SELECT jobqueue.jq_drop_queue(q, force => true)
FROM pg_catalog.unnest(ARRAY['hostile', 'hostile_max', 'hostile_min',
							 'hostile_edge', 'hostile_cac']) AS q;
SELECT count(*) AS leftover_jobs FROM jobqueue.jobs WHERE queue_name LIKE 'hostile%';
