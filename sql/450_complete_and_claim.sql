--
-- 450_complete_and_claim: jq_complete_and_claim, the worker loop in one
-- call: the completion under the rule of jq_complete_many (fencing,
-- results, their size, jobs of any queue), then the claim under the rules
-- of jq_claim (paused, unknown, rate-limited and group-policy queues), in
-- one transaction; n = 0, empty arrays, dependencies released, counters,
-- and every argument error.  Jobs are shown by the number in their payload
-- ("n"), never by id.
--
SET client_min_messages = warning;
SELECT jobqueue.jq_create_queue('q_cac', max_attempts => 3, lease_duration => '1 hour');
SELECT jobqueue.jq_create_queue('q_cac_other', lease_duration => '1 hour');
SELECT jobqueue.jq_counters_reset();

-- the jobs a worker holds, as a worker keeps them in memory
CREATE TEMP TABLE held (n int, id bigint, token bigint);
-- one turn of the loop: complete what is held (with results when given),
-- claim up to k more, hold those; returns the numbers of the jobs claimed
CREATE FUNCTION pg_temp.turn(q text, k int, with_results boolean DEFAULT false)
RETURNS SETOF int LANGUAGE plpgsql AS $$
DECLARE
	ids bigint[] := ARRAY(SELECT h.id FROM held h ORDER BY h.n);
	tokens bigint[] := ARRAY(SELECT h.token FROM held h ORDER BY h.n);
	results jsonb[] := CASE WHEN with_results
		THEN ARRAY(SELECT jsonb_build_object('done', h.n) FROM held h ORDER BY h.n) END;
BEGIN
	DELETE FROM held;
	RETURN QUERY
	WITH c AS (SELECT * FROM jobqueue.jq_complete_and_claim(q, ids, tokens, k, 'cac-worker',
												results => results) WITH ORDINALITY AS c),
	ins AS (INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM c)
	SELECT (c.payload->>'n')::int FROM c ORDER BY c.ordinality;
END
$$;
-- the jobs of a queue by number: status and result
CREATE FUNCTION pg_temp.jobs(q text) RETURNS TABLE(n int, status jobqueue.job_status, attempt int, result jsonb)
LANGUAGE sql AS $$
	SELECT (j.payload->>'n')::int, j.status, j.attempt_count, j.result FROM jobqueue.jobs j
	WHERE j.queue_name = q ORDER BY 1
$$;
CREATE FUNCTION pg_temp.counters(queue text) RETURNS TABLE(counter text, value bigint)
LANGUAGE sql AS $$
	SELECT key, value::bigint
	FROM jobqueue.jq_counters() c, jsonb_each_text(to_jsonb(c) - 'dbid' - 'queue_name'
	                                                - 'claim_time' - 'complete_time' - 'since')
	WHERE c.queue_name IS NOT DISTINCT FROM queue AND value::bigint <> 0
	ORDER BY key
$$;

-- the result is jq_claim's: the same columns, types and order
SELECT pg_get_function_result('jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[])'::regprocedure)
     = pg_get_function_result('jobqueue.jq_claim(text, int, text, interval)'::regprocedure) AS same_result_type;
SELECT pg_get_function_arguments('jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, interval, jsonb[])'::regprocedure);

------------------------------------------------------------------------
-- The loop
------------------------------------------------------------------------
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_cac',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 7) i));
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_cac',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(9, 30) i));
SELECT jobqueue.jq_enqueue('q_cac', '{"n": 8}', priority => 5) > 0 AS urgent_enqueued;

-- empty arrays: a claim only, in claim order (the urgent job first), with
-- the lease of the queue; the claimed jobs look as jq_claim leaves them
SELECT * FROM pg_temp.turn('q_cac', 2);
SELECT j.payload->>'n' AS n, j.status, j.attempt_count, j.lease_owner, j.lease_token = h.token AS token_matches,
       j.lease_expires_at BETWEEN now() + interval '59 minutes' AND clock_timestamp() + interval '1 hour' AS queue_lease
FROM jobqueue.jobs j JOIN held h ON h.id = j.id ORDER BY h.n;
-- the next turn completes those two and claims two more
SELECT * FROM pg_temp.turn('q_cac', 2);
SELECT * FROM pg_temp.jobs('q_cac') WHERE status <> 'pending';
-- with results: stored per job, as jq_complete_many stores them
SELECT * FROM pg_temp.turn('q_cac', 1, with_results => true);
SELECT * FROM pg_temp.jobs('q_cac') WHERE status = 'succeeded';
-- NULL elements of results: no result for that job
SELECT count(*) FROM jobqueue.jq_complete_and_claim('q_cac',
	ARRAY(SELECT id FROM held), ARRAY(SELECT token FROM held), 0, 'w',
	results => ARRAY[NULL]::jsonb[]);
DELETE FROM held;
SELECT n, status, result FROM pg_temp.jobs('q_cac') WHERE n = 2;
-- an explicit lease
SELECT count(*) AS claimed,
       bool_and(lease_expires_at <= clock_timestamp() + interval '5 minutes') AS short_lease
FROM jobqueue.jq_complete_and_claim('q_cac', '{}', '{}', 1, 'w', lease => '5 minutes');

------------------------------------------------------------------------
-- Fencing: a stale pair completes nothing, the claim still happens
------------------------------------------------------------------------
TRUNCATE held;
SELECT jobqueue.jq_counters_reset('q_cac');
INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM jobqueue.jq_claim('q_cac', 1, 'w') c;
SELECT n FROM held;
SELECT test_helpers.job_row(id) AS before_row FROM held \gset
SELECT (c.payload->>'n')::int AS claimed
FROM jobqueue.jq_complete_and_claim('q_cac',
	ARRAY(SELECT id FROM held), ARRAY(SELECT token + 1 FROM held), 1, 'w',
	results => ARRAY['{"stale": true}']::jsonb[]) c;
SELECT test_helpers.job_row(id) = :'before_row' AS stale_changed_nothing FROM held;
-- an unknown job is refused the same way
SELECT count(*) AS claimed FROM jobqueue.jq_complete_and_claim('q_cac', '{-1}', '{1}', 1, 'w');
-- a second completion of a job already completed changes nothing either
SELECT id AS done_id, token AS done_token FROM held \gset
SELECT count(*) FROM jobqueue.jq_complete_and_claim('q_cac', ARRAY[:done_id]::bigint[], ARRAY[:done_token]::bigint[], 0, 'w');
SELECT count(*) FROM jobqueue.jq_complete_and_claim('q_cac', ARRAY[:done_id]::bigint[], ARRAY[:done_token]::bigint[], 0, 'w',
	results => ARRAY['{"again": true}']::jsonb[]);
SELECT status, result FROM jobqueue.jq_job(:done_id);
-- counters as the two separate calls count them: a complete call for each
-- call with ids, a claim call for each with n > 0; the fenced pairs (the
-- unknown job's without a queue)
SELECT * FROM pg_temp.counters('q_cac');
SELECT complete_fenced FROM jobqueue.jq_counters() WHERE queue_name IS NULL;
SELECT claim_calls, claim_time > 0 AS claim_timed, complete_calls, complete_time > 0 AS complete_timed
FROM jobqueue.jq_counters() WHERE queue_name = 'q_cac';

------------------------------------------------------------------------
-- n = 0 and empty arrays
------------------------------------------------------------------------
-- nothing to complete and nothing to claim: no rows, nothing counted
SELECT jobqueue.jq_counters_reset('q_cac');
SELECT count(*) FROM jobqueue.jq_complete_and_claim('q_cac', '{}', '{}', 0, 'w');
SELECT * FROM pg_temp.counters('q_cac');
-- n = 0 completes and claims nothing, even with ready jobs
TRUNCATE held;
INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM jobqueue.jq_claim('q_cac', 1, 'w') c;
SELECT count(*) AS ready_before FROM jobqueue.jobs WHERE queue_name = 'q_cac' AND status = 'pending';
SELECT count(*) AS claimed FROM jobqueue.jq_complete_and_claim('q_cac',
	ARRAY(SELECT id FROM held), ARRAY(SELECT token FROM held), 0, 'w');
SELECT j.status FROM jobqueue.jobs j JOIN held h USING (id);
SELECT count(*) AS ready_after FROM jobqueue.jobs WHERE queue_name = 'q_cac' AND status = 'pending';
-- the queue must exist also with n = 0; the error undoes the completion
TRUNCATE held;
INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM jobqueue.jq_claim('q_cac', 1, 'w') c;
SELECT test_helpers.try(format('SELECT jobqueue.jq_complete_and_claim(%L, %L, %L, 0, %L)',
	'no_such_queue', ARRAY(SELECT id FROM held), ARRAY(SELECT token FROM held), 'w'));
SELECT j.status FROM jobqueue.jobs j JOIN held h USING (id);

------------------------------------------------------------------------
-- Jobs of other queues are completed all the same
------------------------------------------------------------------------
SELECT jobqueue.jq_enqueue('q_cac_other', '{"n": 100}') > 0;
INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM jobqueue.jq_claim('q_cac_other', 1, 'w') c;
SELECT (c.payload->>'n')::int AS claimed_from_q_cac
FROM jobqueue.jq_complete_and_claim('q_cac',
	ARRAY(SELECT id FROM held ORDER BY n), ARRAY(SELECT token FROM held ORDER BY n), 1, 'w') c;
SELECT j.queue_name, j.payload->>'n' AS n, j.status FROM jobqueue.jobs j JOIN held h USING (id) ORDER BY h.n;
TRUNCATE held;

------------------------------------------------------------------------
-- The claim's rules: paused, unknown, rate-limited and group-policy queues
------------------------------------------------------------------------
-- paused: the completion happens, the claim finds nothing
INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM jobqueue.jq_claim('q_cac', 1, 'w') c;
SELECT jobqueue.jq_pause_queue('q_cac');
SELECT count(*) AS claimed_from_paused FROM jobqueue.jq_complete_and_claim('q_cac',
	ARRAY(SELECT id FROM held), ARRAY(SELECT token FROM held), 5, 'w');
SELECT j.status FROM jobqueue.jobs j JOIN held h USING (id);
SELECT jobqueue.jq_resume_queue('q_cac');
TRUNCATE held;
-- unknown queue: 42704 as jq_claim, and the completion is undone with it
INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM jobqueue.jq_claim('q_cac', 1, 'w') c;
SELECT test_helpers.try(format('SELECT jobqueue.jq_complete_and_claim(%L, %L, %L, 1, %L)',
	'no_such_queue', ARRAY(SELECT id FROM held), ARRAY(SELECT token FROM held), 'w'));
SELECT j.status FROM jobqueue.jobs j JOIN held h USING (id);
TRUNCATE held;

-- rate-limited: at most the tokens left, never waiting; the completion
-- happens also when no token is left
SELECT jobqueue.jq_create_queue('q_cac_rl', rate_limit => 0.001, rate_burst => 3);
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_cac_rl',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 10) i));
SELECT * FROM pg_temp.turn('q_cac_rl', 2);
SELECT * FROM pg_temp.turn('q_cac_rl', 2);
SELECT * FROM pg_temp.turn('q_cac_rl', 2);
SELECT n, status FROM pg_temp.jobs('q_cac_rl') WHERE status <> 'pending';
SELECT rate_burst, claims_limited, jobs_claimed FROM jobqueue.jq_rate_limits() WHERE queue_name = 'q_cac_rl';
TRUNCATE held;

-- a group limit: completing the group's running job frees its slot, and
-- the claim of the same call takes the group's next job (two separate
-- calls would too); a claim beside the running job gets nothing
SELECT jobqueue.jq_create_queue('q_cac_grp', group_concurrency => 1, lease_duration => '1 hour');
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_cac_grp',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 3) i),
	group_keys => ARRAY['g', 'g', 'g']);
SELECT * FROM pg_temp.turn('q_cac_grp', 3);
SELECT count(*) AS beside_running FROM jobqueue.jq_claim('q_cac_grp', 3, 'w2');
SELECT * FROM pg_temp.turn('q_cac_grp', 3);
SELECT * FROM pg_temp.turn('q_cac_grp', 3);
SELECT * FROM pg_temp.turn('q_cac_grp', 3);
SELECT n, status FROM pg_temp.jobs('q_cac_grp');
SELECT group_key, running FROM jobqueue.groups WHERE queue_name = 'q_cac_grp';
TRUNCATE held;

------------------------------------------------------------------------
-- Dependencies: the completion releases the dependents, and the claim of
-- the same call can take them
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('q_cac_dep', lease_duration => '1 hour');
SELECT jobqueue.jq_enqueue('q_cac_dep', '{"n": 1}') AS dep_a \gset
SELECT jobqueue.jq_enqueue('q_cac_dep', '{"n": 2}', depends_on => ARRAY[:dep_a]) > 0 AS b_waits;
SELECT * FROM pg_temp.turn('q_cac_dep', 5);
SELECT n, status FROM pg_temp.jobs('q_cac_dep');
SELECT * FROM pg_temp.turn('q_cac_dep', 5);
SELECT n, status FROM pg_temp.jobs('q_cac_dep');
SELECT * FROM pg_temp.turn('q_cac_dep', 5);
SELECT n, status FROM pg_temp.jobs('q_cac_dep');
-- and a stale completion releases nothing
SELECT jobqueue.jq_enqueue('q_cac_dep', '{"n": 3}') AS dep_c \gset
SELECT jobqueue.jq_enqueue('q_cac_dep', '{"n": 4}', depends_on => ARRAY[:dep_c]) > 0 AS d_waits;
SELECT * FROM pg_temp.turn('q_cac_dep', 5);
UPDATE held SET token = token + 1;
SELECT * FROM pg_temp.turn('q_cac_dep', 5);
SELECT n, status FROM pg_temp.jobs('q_cac_dep');
TRUNCATE held;

------------------------------------------------------------------------
-- Results: the size limit, and the rollback of a failed call
------------------------------------------------------------------------
INSERT INTO held SELECT (c.payload->>'n')::int, c.id, c.token FROM jobqueue.jq_claim('q_cac', 1, 'w') c;
SET jobqueue.max_result_size = 100;
SELECT test_helpers.try(format('SELECT jobqueue.jq_complete_and_claim(%L, %L, %L, 1, %L, results => %L)',
	'q_cac', ARRAY(SELECT id FROM held), ARRAY(SELECT token FROM held), 'w',
	ARRAY[jsonb_build_object('x', repeat('x', 200))]));
RESET jobqueue.max_result_size;
SELECT j.status, j.result FROM jobqueue.jobs j JOIN held h USING (id);
SELECT count(*) AS still_ready FROM jobqueue.jobs WHERE queue_name = 'q_cac' AND status = 'pending';

------------------------------------------------------------------------
-- Argument errors, each with its SQLSTATE; none changes anything
------------------------------------------------------------------------
-- the job held, as a table the statements below read (psql variables are
-- not substituted inside dollar quotes)
CREATE TEMP TABLE cur AS SELECT id, token FROM held;
SELECT test_helpers.job_row(id) AS held_row FROM cur \gset
SELECT count(*) AS pending_before FROM jobqueue.jobs WHERE status = 'pending' \gset
SELECT t.label, test_helpers.try(t.stmt) AS result FROM (VALUES
	('null queue',            $$SELECT jobqueue.jq_complete_and_claim(NULL, '{}', '{}', 1, 'w')$$),
	('bad queue name',        $$SELECT jobqueue.jq_complete_and_claim('q cac', '{}', '{}', 1, 'w')$$),
	('empty queue name',      $$SELECT jobqueue.jq_complete_and_claim('', '{}', '{}', 1, 'w')$$),
	('queue name too long',   $$SELECT jobqueue.jq_complete_and_claim(repeat('q', 129), '{}', '{}', 1, 'w')$$),
	('unknown queue',         $$SELECT jobqueue.jq_complete_and_claim('no_such_queue', '{}', '{}', 1, 'w')$$),
	('null ids',              $$SELECT jobqueue.jq_complete_and_claim('q_cac', NULL, '{}', 1, 'w')$$),
	('null tokens',           $$SELECT jobqueue.jq_complete_and_claim('q_cac', '{}', NULL, 1, 'w')$$),
	('null id element',       $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur), NULL], ARRAY[(SELECT token FROM cur), 1], 1, 'w')$$),
	('null token element',    $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur), 1], ARRAY[(SELECT token FROM cur), NULL], 1, 'w')$$),
	('more ids than tokens',  $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur), 1], ARRAY[(SELECT token FROM cur)], 1, 'w')$$),
	('more tokens than ids',  $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur), 1], 1, 'w')$$),
	('ids empty, tokens not', $$SELECT jobqueue.jq_complete_and_claim('q_cac', '{}', ARRAY[(SELECT token FROM cur)], 1, 'w')$$),
	('two-dimensional ids',   $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[[(SELECT id FROM cur)]], ARRAY[(SELECT token FROM cur)], 1, 'w')$$),
	('two-dimensional tokens', $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[[(SELECT token FROM cur)]], 1, 'w')$$),
	('more results than ids', $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, 'w', results => ARRAY['{}', '{}']::jsonb[])$$),
	('fewer results than ids', $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, 'w', results => '{}')$$),
	('results, no ids',       $$SELECT jobqueue.jq_complete_and_claim('q_cac', '{}', '{}', 1, 'w', results => ARRAY['{}']::jsonb[])$$),
	('two-dimensional results', $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, 'w', results => ARRAY[['{}']]::jsonb[])$$),
	('null n',                $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], NULL, 'w')$$),
	('n negative',            $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], -1, 'w')$$),
	('n above the batch limit', $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1001, 'w')$$),
	('null owner',            $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, NULL)$$),
	('null owner, n = 0',     $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 0, NULL)$$),
	('empty owner',           $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, '')$$),
	('owner too long',        $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, repeat('o', 257))$$),
	('lease 0',               $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, 'w', '0')$$),
	('lease negative',        $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, 'w', '-1 minute')$$),
	('lease mixed signs',     $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, 'w', '1 day -1 second')$$),
	('lease too long',        $$SELECT jobqueue.jq_complete_and_claim('q_cac', ARRAY[(SELECT id FROM cur)], ARRAY[(SELECT token FROM cur)], 1, 'w', '200 years')$$)
) AS t(label, stmt);
-- a lower jobqueue.max_claim_batch is the limit of n too
SET jobqueue.max_claim_batch = 2;
SELECT test_helpers.try($$SELECT jobqueue.jq_complete_and_claim('q_cac', '{}', '{}', 3, 'w')$$);
RESET jobqueue.max_claim_batch;
SELECT test_helpers.job_row(id) = :'held_row' AS held_job_unchanged FROM cur;
SELECT count(*) = :pending_before AS nothing_claimed FROM jobqueue.jobs WHERE status = 'pending';
-- the limits themselves are accepted: n = max_claim_batch, the longest owner
SELECT count(*) >= 0 AS ok FROM jobqueue.jq_complete_and_claim('q_cac', '{}', '{}', 1000, repeat('o', 256));
-- and the held job is completed at last
SELECT count(*) FROM jobqueue.jq_complete_and_claim('q_cac',
	ARRAY(SELECT id FROM cur), ARRAY(SELECT token FROM cur), 0, 'w');
SELECT j.status FROM cur, jobqueue.jq_job(cur.id) j;

SELECT jobqueue.jq_drop_queue(q, force => true)
FROM unnest(ARRAY['q_cac', 'q_cac_other', 'q_cac_rl', 'q_cac_grp', 'q_cac_dep']) q;
