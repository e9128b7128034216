--
-- jq_fail(..., stack): the stack trace of a failure is kept in the job's
-- history entry as "stack", cut to jobqueue.max_error_stack_size bytes on
-- a UTF-8 character boundary; NULL or absent keeps no field.
--
SELECT jobqueue.jq_create_queue('q_stack', max_attempts => 100);

CREATE FUNCTION pg_temp.fail_with_stack(stack text) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	r record;
	entry jsonb;
BEGIN
	SELECT * INTO r FROM jobqueue.jq_claim('q_stack', 1, 'w-stack');
	PERFORM jobqueue.jq_fail(r.id, r.token, 'KeyError', 'no key', retry_in => '0',
							 stack => stack);
	SELECT errors -> -1 INTO entry FROM jobqueue.jobs WHERE id = r.id;
	RETURN entry;
END
$$;
SELECT jobqueue.jq_enqueue('q_stack', '{}') AS jid \gset

-- NULL: the entry has no field "stack", as before 1.4
SELECT e ? 'stack' AS has_stack, e ->> 'message' AS message, e ->> 'code' AS code
FROM pg_temp.fail_with_stack(NULL) e;

-- a short stack is kept whole, next to the message and a detail
SELECT r.id AS rid, r.token AS rtok FROM jobqueue.jq_claim('q_stack', 1, 'w') r \gset
SELECT jobqueue.jq_fail(:rid, :rtok, 'E', 'boom', retry_in => '0',
						error_detail => '{"k": 1}',
						stack => E'Traceback (most recent call last):\n  File "app.py", line 3, in handle\nKeyError: ''x''');
SELECT errors -> -1 -> 'detail' AS detail, errors -> -1 ->> 'stack' AS stack
FROM jobqueue.jobs WHERE id = :rid;

-- the bound: default 8 kB, settable per session from 16 B to 64 kB
SHOW jobqueue.max_error_stack_size;
SELECT octet_length(e ->> 'stack') AS bytes_kept
FROM pg_temp.fail_with_stack(repeat('x', 1000000)) e;
SET jobqueue.max_error_stack_size = 16;
SELECT s.what, octet_length(s.stack) AS bytes_in, e ->> 'stack' AS kept,
       octet_length(e ->> 'stack') AS bytes_kept
FROM (VALUES
	('16 ASCII bytes',        repeat('a', 16)),
	('17 ASCII bytes',        repeat('a', 17)),
	('15 + 2-byte character', repeat('a', 15) || 'é'),
	('3-byte characters',     repeat('€', 10)),
	('1 + 4-byte characters', 'a' || repeat('😀', 5)),
	('empty',                 '')
) s(what, stack), LATERAL pg_temp.fail_with_stack(s.stack) e;
RESET jobqueue.max_error_stack_size;
SELECT test_helpers.try($$SET jobqueue.max_error_stack_size = 15$$);
SELECT test_helpers.try($$SET jobqueue.max_error_stack_size = '65kB'$$);

-- a fenced failure keeps nothing, stack or not
SELECT r.id AS rid, r.token AS rtok FROM jobqueue.jq_claim('q_stack', 1, 'w') r \gset
SELECT jsonb_array_length(errors) AS before FROM jobqueue.jobs WHERE id = :rid;
SELECT jobqueue.jq_fail(:rid, :rtok - 1, 'E', 'late', stack => 'stack') AS fenced;
SELECT jsonb_array_length(errors) AS after FROM jobqueue.jobs WHERE id = :rid;
SELECT jobqueue.jq_release(:rid, :rtok);

-- the old signature is gone; the new one is the worker's
SELECT to_regprocedure('jobqueue.jq_fail(bigint, bigint, text, text, boolean, interval, jsonb)') AS old_fail;
SELECT p AS in_worker_set FROM jobqueue.jq_role_functions('worker') p
WHERE p::text LIKE 'jobqueue.jq_fail(%';

SELECT jobqueue.jq_drop_queue('q_stack', force => true);
