--
-- 415_schedules: jq_schedule, jq_unschedule and jq_run_schedules (the
-- background worker is off in these tests): the slots enqueued, catch-up,
-- exactly once per slot, and every error.
--
SET timezone = 'UTC';
SELECT jobqueue.jq_create_queue('sched');

-- the next run time is returned; replacing keeps the row
SELECT jobqueue.jq_schedule('yearly', 'sched', '@yearly', '{"k": "v"}') = date_trunc('year', now()) + interval '1 year' AS next_is_new_year;
SELECT jobqueue.jq_schedule('yearly', 'sched', '0 0 1 1 *', '{"k": "v"}', 'UTC', 5, 'all') = date_trunc('year', now()) + interval '1 year' AS replaced;
SELECT schedule_name, queue_name, cron, timezone, payload, priority, enabled, catch_up, last_run_at, last_job_id
FROM jobqueue.schedules;
SELECT jobqueue.jq_schedule('off', 'sched', '* * * * *', enabled => false) AS disabled_has_no_next_run;

-- nothing is due yet
SELECT jobqueue.jq_run_schedules() AS enqueued;

-- five years of downtime: 'all' enqueues every missed slot, 'latest' the
-- most recent, 'none' none; then each continues at the next slot
SELECT jobqueue.jq_schedule('latest', 'sched', '0 0 1 1 *', catch_up => 'latest') IS NOT NULL AS created;
SELECT jobqueue.jq_schedule('none', 'sched', '0 0 1 1 *', catch_up => 'none') IS NOT NULL AS created;
UPDATE jobqueue.schedules SET next_run_at = date_trunc('year', now()) - interval '5 years'
WHERE schedule_name IN ('yearly', 'latest', 'none');
SELECT jobqueue.jq_run_schedules() AS enqueued;
SELECT j.payload ->> 'jq_schedule' AS schedule,
	   (j.payload ->> 'jq_slot')::timestamptz - date_trunc('year', now()) AS slot_from_this_year,
	   j.payload ->> 'k' AS k, j.priority,
	   j.idempotency_key = 'jq_schedule:' || (j.payload ->> 'jq_schedule') || ':' || (j.payload ->> 'jq_slot') AS key_is_slot
FROM jobqueue.jobs j WHERE j.queue_name = 'sched' ORDER BY j.id;
SELECT schedule_name, next_run_at = date_trunc('year', now()) + interval '1 year' AS continues,
	last_run_at = date_trunc('year', now()) AS last_run_this_year,
	last_job_id = (SELECT max(j.id) FROM jobqueue.jobs j WHERE j.payload ->> 'jq_schedule' = s.schedule_name) AS last_job
FROM jobqueue.schedules s WHERE schedule_name IN ('yearly', 'latest', 'none') ORDER BY 1;

-- exactly once: a slot handed back (as by a racing jq_schedule) is not
-- enqueued again
UPDATE jobqueue.schedules SET next_run_at = date_trunc('year', now()) - interval '5 years'
WHERE schedule_name = 'yearly';
SELECT jobqueue.jq_run_schedules() AS enqueued_again;
SELECT count(*) AS jobs FROM jobqueue.jobs WHERE queue_name = 'sched';

-- a redeploy declares its schedules again: an identical declaration
-- changes nothing, so the slots missed while nothing ran (three years of
-- them here) are still enqueued as catch_up => 'all' promises
SELECT jobqueue.jq_create_queue('sched_redeploy');
SELECT jobqueue.jq_schedule('redeploy', 'sched_redeploy', '0 0 1 1 *', '{"v": 1}', catch_up => 'all') IS NOT NULL AS created;
UPDATE jobqueue.schedules SET next_run_at = date_trunc('year', now()) - interval '3 years'
WHERE schedule_name = 'redeploy';
SELECT xmin AS redeploy_xmin, next_run_at AS redeploy_next FROM jobqueue.schedules
WHERE schedule_name = 'redeploy' \gset
SELECT jobqueue.jq_schedule('redeploy', 'sched_redeploy', '0 0 1 1 *', '{"v": 1}', catch_up => 'all') = :'redeploy_next' AS identical_returns_kept_next_run;
SELECT xmin = :'redeploy_xmin' AS identical_writes_nothing, next_run_at = :'redeploy_next' AS kept
FROM jobqueue.schedules WHERE schedule_name = 'redeploy';
SELECT jobqueue.jq_run_schedules() AS enqueued_missed_slots;
SELECT extract(year FROM (payload ->> 'jq_slot')::timestamptz) - extract(year FROM now()) AS slot_year_from_this_year
FROM jobqueue.jobs WHERE queue_name = 'sched_redeploy' ORDER BY id;
-- a changed payload, priority or catch_up with the same cron and time zone
-- keeps next_run_at (due slots get the new definition); a new cron starts
-- after now
UPDATE jobqueue.schedules SET next_run_at = date_trunc('year', now()) - interval '2 years'
WHERE schedule_name = 'redeploy';
SELECT jobqueue.jq_schedule('redeploy', 'sched_redeploy', '0 0 1 1 *', '{"v": 2}', priority => 3, catch_up => 'latest') = date_trunc('year', now()) - interval '2 years' AS changed_payload_keeps_next_run;
SELECT jobqueue.jq_schedule('redeploy', 'sched_redeploy', '0 0 1 * *', '{"v": 2}', priority => 3, catch_up => 'latest') = date_trunc('month', now()) + interval '1 month' AS changed_cron_starts_after_now;
SELECT jobqueue.jq_unschedule('redeploy');
SELECT jobqueue.jq_drop_queue('sched_redeploy', force => true);

-- 'all' is capped at the 1,000 most recent slots
SELECT jobqueue.jq_schedule('secs', 'sched', '1 seconds', catch_up => 'all') IS NOT NULL AS created;
UPDATE jobqueue.schedules SET next_run_at = date_trunc('second', now()) - interval '1 hour'
WHERE schedule_name = 'secs';
SELECT jobqueue.jq_run_schedules() BETWEEN 1000 AND 1001 AS capped;
SELECT max((payload ->> 'jq_slot')::timestamptz) > now() - interval '2 seconds' AS includes_latest
FROM jobqueue.jobs WHERE payload ->> 'jq_schedule' = 'secs';
SELECT jobqueue.jq_unschedule('secs'), jobqueue.jq_unschedule('secs');

-- a hand-broken row stops its schedule with a WARNING; the others go on
UPDATE jobqueue.schedules SET cron = 'bad', next_run_at = now() - interval '1 day'
WHERE schedule_name = 'latest';
SELECT jobqueue.jq_run_schedules() AS enqueued;
SELECT schedule_name, next_run_at FROM jobqueue.schedules WHERE schedule_name = 'latest';

-- a schedule whose queue was dropped enqueues nothing and goes on
SELECT jobqueue.jq_create_queue('sched_gone');
SELECT jobqueue.jq_schedule('gone', 'sched_gone', '@daily') IS NOT NULL;
SELECT jobqueue.jq_drop_queue('sched_gone');
UPDATE jobqueue.schedules SET next_run_at = now() - interval '1 minute' WHERE schedule_name = 'gone';
SELECT jobqueue.jq_run_schedules() AS enqueued;
SELECT next_run_at > now() AS continues FROM jobqueue.schedules WHERE schedule_name = 'gone';

-- errors
SELECT test_helpers.try(s) AS result FROM unnest(ARRAY[
	$$SELECT jobqueue.jq_schedule(NULL, 'sched', '* * * * *')$$,
	$$SELECT jobqueue.jq_schedule('', 'sched', '* * * * *')$$,
	$$SELECT jobqueue.jq_schedule('a b', 'sched', '* * * * *')$$,
	$$SELECT jobqueue.jq_schedule(repeat('s', 129), 'sched', '* * * * *')$$,
	$$SELECT jobqueue.jq_schedule('x', NULL, '* * * * *')$$,
	$$SELECT jobqueue.jq_schedule('x', 'no_such_queue', '* * * * *')$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', NULL)$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * *')$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '0 0 30 2 *')$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', NULL)$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', '[1]')$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', '1')$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', timezone => NULL)$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', timezone => 'Nowhere/Land')$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', priority => NULL)$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', catch_up => NULL)$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', catch_up => 'some')$$,
	$$SELECT jobqueue.jq_schedule('x', 'sched', '* * * * *', enabled => NULL)$$,
	$$SELECT jobqueue.jq_unschedule(NULL)$$,
	$$SELECT jobqueue.jq_unschedule('a;b')$$]) WITH ORDINALITY AS t(s, ord) ORDER BY ord;
SELECT count(*) AS no_schedule_x FROM jobqueue.schedules WHERE schedule_name = 'x';

-- clean up
SELECT jobqueue.jq_unschedule(s) FROM unnest(ARRAY['yearly', 'latest', 'none', 'off', 'gone']) s;
SELECT jobqueue.jq_drop_queue('sched', force => true);
