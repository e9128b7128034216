--
-- Trace context: jobqueue.traceparent / jobqueue.tracestate and the
-- traceparent arguments; the claims return it; a dependent, a scheduled run
-- and a replay keep a link to their origin.
--
SELECT jobqueue.jq_create_queue('q_tr');
\set tp1 '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
\set tp2 '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00'

-- invalid values are refused with 22023, by SET and by the argument
\set VERBOSITY sqlstate
SET jobqueue.traceparent = 'not a traceparent';
SET jobqueue.traceparent = '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01';
SET jobqueue.traceparent = '00-00000000000000000000000000000000-b7ad6b7169203331-01';
SET jobqueue.traceparent = '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01';
SET jobqueue.traceparent = 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
SET jobqueue.traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-extra';
SET jobqueue.tracestate = E'a=1\n';
SELECT jobqueue.jq_enqueue('q_tr', '{}', traceparent => 'junk');
SELECT jobqueue.jq_enqueue_many('q_tr', ARRAY['{}']::jsonb[], traceparent => '00-1-2-3');
SELECT jobqueue.jq_schedule('s_tr', 'q_tr', '* * * * *', traceparent => 'junk');
SELECT jobqueue.jq_enqueue('q_tr', '{}', traceparent => :'tp1', tracestate => repeat('x', 513));
\set VERBOSITY default
-- the message says what is wrong
SELECT jobqueue.jq_enqueue('q_tr', '{}', traceparent => '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-1');
-- a later version may add fields after a dash
SET jobqueue.traceparent = '01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-later';
RESET jobqueue.traceparent;
-- nothing recorded by the refused calls
SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'q_tr';

-- the explicit argument; else the session's setting; else none
SELECT jobqueue.jq_enqueue('q_tr', '{"n": 1}', traceparent => :'tp1', tracestate => 'k=v') AS j1 \gset
SET jobqueue.traceparent = :'tp2';
SET jobqueue.tracestate = 'vendor=x';
SELECT jobqueue.jq_enqueue('q_tr', '{"n": 2}') AS j2 \gset
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_tr', ARRAY['{"n": 3}', '{"n": 4}']::jsonb[]);
-- an explicit traceparent does not take the session's tracestate
SELECT jobqueue.jq_enqueue('q_tr', '{"n": 5}', traceparent => :'tp1') AS j5 \gset
RESET jobqueue.traceparent;
RESET jobqueue.tracestate;
SELECT jobqueue.jq_enqueue('q_tr', '{"n": 6}') AS j6 \gset
-- the argument lasted for its call only
SHOW jobqueue.traceparent;
SELECT payload->>'n' AS n, traceparent = :'tp1' AS tp1, traceparent = :'tp2' AS tp2,
	tracestate FROM jobqueue.jobs WHERE queue_name = 'q_tr' ORDER BY id;

-- SET LOCAL in the application's transaction reaches a trigger's enqueue
CREATE TABLE orders (id int, note text);
CREATE FUNCTION enqueue_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM jobqueue.jq_enqueue('q_tr', jsonb_build_object('order', NEW.id));
	RETURN NEW;
END $$;
CREATE TRIGGER orders_enqueue AFTER INSERT ON orders FOR EACH ROW EXECUTE FUNCTION enqueue_order();
BEGIN;
SET LOCAL jobqueue.traceparent = :'tp2';
INSERT INTO orders VALUES (7, 'from the application');
COMMIT;
SHOW jobqueue.traceparent;
SELECT traceparent = :'tp2' AS from_the_transaction FROM jobqueue.jobs
WHERE queue_name = 'q_tr' AND payload ? 'order';

-- the claims return it, in claim order
SELECT c.payload->>'n' AS n, c.payload->>'order' AS "order", c.traceparent = :'tp1' AS tp1,
	c.traceparent = :'tp2' AS tp2, c.tracestate, c.trace_origin
FROM jobqueue.jq_claim('q_tr', 10, 'w') c ORDER BY c.id;

-- a dependent released by its last dependency keeps the dependency's
-- traceparent as its origin; its own traceparent is its producer's
SELECT jobqueue.jq_enqueue('q_tr', '{"d": "dep"}', traceparent => :'tp1') AS dep \gset
SELECT jobqueue.jq_enqueue('q_tr', '{"d": "child"}', depends_on => ARRAY[:dep]::bigint[],
	traceparent => :'tp2') AS child \gset
SELECT jobqueue.jq_complete(c.id, c.token) FROM jobqueue.jq_claim('q_tr', 1, 'w') c;
SELECT status, traceparent = :'tp2' AS own, trace_origin = :'tp1' AS origin_is_dependency
FROM jobqueue.jobs WHERE id = :child;

-- a replay: the replayer's context, the previous one as its origin
UPDATE jobqueue.jobs SET status = 'dead', finished_at = now(), lease_expires_at = NULL
WHERE id = :j6;
SET jobqueue.traceparent = :'tp1';
SELECT jobqueue.jq_retry(:j6);
RESET jobqueue.traceparent;
SELECT traceparent = :'tp1' AS replayer, trace_origin IS NULL AS had_none FROM jobqueue.jobs WHERE id = :j6;
UPDATE jobqueue.jobs SET status = 'dead', finished_at = now() WHERE id = :j6;
SELECT jobqueue.jq_retry(:j6);
SELECT traceparent = :'tp1' AS kept, trace_origin = :'tp1' AS origin FROM jobqueue.jobs WHERE id = :j6;

-- a schedule records the context of its jq_schedule call, its runs carry it
SELECT jobqueue.jq_schedule('s_tr', 'q_tr', '* * * * *', traceparent => :'tp2', tracestate => 's=1') IS NOT NULL AS scheduled;
UPDATE jobqueue.schedules SET next_run_at = now() - interval '1 minute' WHERE schedule_name = 's_tr';
SELECT jobqueue.jq_run_schedules() > 0 AS ran;
SELECT traceparent = :'tp2' AS from_schedule, tracestate FROM jobqueue.jobs
WHERE queue_name = 'q_tr' AND payload->>'jq_schedule' = 's_tr';
-- replacing the schedule replaces its context
SELECT jobqueue.jq_schedule('s_tr', 'q_tr', '* * * * *') IS NOT NULL AS rescheduled;
SELECT traceparent IS NULL AS none FROM jobqueue.schedules WHERE schedule_name = 's_tr';

SELECT jobqueue.jq_unschedule('s_tr');
DROP TABLE orders;
SELECT jobqueue.jq_drop_queue('q_tr', force => true);
