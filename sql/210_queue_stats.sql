--
-- jobqueue.queue_stats: one row per queue, exact backlog numbers from the
-- partial indexes.
--
-- succeeded and cancelled are counted exactly here, whatever the size the
-- tests before this one left the table at (see below for the estimates)
SET jobqueue.exact_count_limit = -1;
SELECT jobqueue.jq_create_queue('q_stats', lease_duration => '100 seconds');
SELECT jobqueue.jq_create_queue('q_stats_empty');
SELECT jobqueue.jq_pause_queue('q_stats_empty');

-- six jobs ready for an hour, two scheduled for later
SELECT count(jobqueue.jq_enqueue('q_stats', jsonb_build_object('n', i),
                                 run_at => now() - interval '1 hour'))
FROM generate_series(1, 6) i;
SELECT count(jobqueue.jq_enqueue('q_stats', '{"later": true}', run_at => now() + interval '1 hour'))
FROM generate_series(1, 2);

-- one lease about to expire (3 s left: under 5 s), one with 100 s left
SELECT count(*) FROM jobqueue.jq_claim('q_stats', 1, 'w', lease => '3 seconds');
SELECT count(*) FROM jobqueue.jq_claim('q_stats', 1, 'w');
-- one succeeded, one dead, one cancelled
SELECT jobqueue.jq_complete(id, token) FROM jobqueue.jq_claim('q_stats', 1, 'w');
SELECT jobqueue.jq_fail(id, token, 'E_BAD', retryable => false) FROM jobqueue.jq_claim('q_stats', 1, 'w');
SELECT jobqueue.jq_cancel(max(id)) FROM jobqueue.jobs WHERE queue_name = 'q_stats' AND status = 'pending'
  AND available_at < now();

SELECT queue_name, paused, pending, ready, scheduled, running, expiring_soon,
       succeeded, dead, cancelled,
       oldest_ready_age BETWEEN interval '1 hour' AND interval '1 hour 5 minutes' AS ready_for_an_hour,
       oldest_dead_age BETWEEN interval '0' AND interval '5 minutes' AS dead_just_now
FROM jobqueue.queue_stats WHERE queue_name LIKE 'q_stats%' ORDER BY queue_name;

-- the empty queue: zeros and NULL ages (NULL oldest_ready_age: nothing to alert on)
SELECT oldest_ready_age IS NULL AS no_ready_age, oldest_dead_age IS NULL AS no_dead_age
FROM jobqueue.queue_stats WHERE queue_name = 'q_stats_empty';

-- an expired lease not reaped yet counts as expiring
UPDATE jobqueue.jobs SET lease_expires_at = now() - interval '1 second'
WHERE queue_name = 'q_stats' AND status = 'running' AND lease_expires_at > now() + interval '50 seconds';
SELECT running, expiring_soon FROM jobqueue.queue_stats WHERE queue_name = 'q_stats';

-- jq_finished_count (exact here)
SELECT jobqueue.jq_finished_count('q_stats', 'succeeded') AS succeeded,
       jobqueue.jq_finished_count('q_stats', 'cancelled') AS cancelled,
       jobqueue.jq_finished_count('q_stats_empty', 'succeeded') AS none;

-- jq_queue_counts: the view's counts while they are under count_limit
-- (here with jobs at three priorities and a blocked group), and
-- count_limit + 1 above it
SELECT jobqueue.jq_create_queue('q_stats_groups', group_ordered => true);
SELECT count(jobqueue.jq_enqueue('q_stats_groups', '{}', priority => i % 3, group_key => 'g' || (i % 4),
                                 run_at => now() + CASE WHEN i % 5 = 0 THEN interval '1 hour' ELSE interval '-1 minute' END))
FROM generate_series(1, 40) i;
SELECT jobqueue.jq_fail(id, token, 'E_BAD', retryable => false)
FROM jobqueue.jq_claim('q_stats_groups', 1, 'w');
SELECT c.queue_name,
       (c.paused, c.ready, c.scheduled, c.running, c.expiring_soon, c.waiting, c.dead, c.succeeded,
        c.cancelled, c.oldest_ready_age, c.oldest_dead_age, c.groups_blocked)
       IS NOT DISTINCT FROM
       (s.paused, s.ready, s.scheduled, s.running, s.expiring_soon, s.waiting, s.dead, s.succeeded,
        s.cancelled, s.oldest_ready_age, s.oldest_dead_age, s.groups_blocked) AS as_queue_stats,
       c.ready, c.scheduled, c.groups_blocked
FROM jobqueue.jq_queue_counts() c JOIN jobqueue.queue_stats s USING (queue_name)
WHERE c.queue_name LIKE 'q_stats%' ORDER BY 1;
SELECT queue_name, ready, scheduled, running, dead
FROM jobqueue.jq_queue_counts(ARRAY['q_stats', 'q_stats_groups', 'no_such_queue'], count_limit => 2);
SELECT jobqueue.jq_queue_counts(count_limit => 0);

--
-- On a large table the view reads the partial indexes, never the whole
-- table: 100,000 jobs, nearly all finished, in another queue.
--
SELECT jobqueue.jq_create_queue('q_stats_big');
INSERT INTO jobqueue.jobs (queue_name, payload, status, max_attempts, finished_at, available_at,
                           lease_expires_at, started_at)
SELECT 'q_stats_big', '{}',
       CASE WHEN i % 1000 = 0 THEN 'pending'
            WHEN i % 1000 = 1 THEN 'running'
            WHEN i % 1000 = 2 THEN 'dead'
            WHEN i % 100 = 3 THEN 'cancelled'
            ELSE 'succeeded' END::jobqueue.job_status,
       1,
       CASE WHEN i % 1000 IN (0, 1) THEN NULL ELSE now() - interval '1 minute' END,
       now() - interval '10 minutes',
       CASE WHEN i % 1000 = 1 THEN now() + interval '1 minute' END,
       CASE WHEN i % 1000 = 1 THEN now() END
FROM generate_series(1, 100000) i;
ANALYZE jobqueue.jobs;

-- how the plan of the view reads the jobs table: partial indexes only
CREATE FUNCTION pg_temp.plan_scans(query text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
	RETURN QUERY
	WITH RECURSIVE nodes(n) AS (
		SELECT plan -> 0 -> 'Plan'
		UNION ALL
		SELECT c FROM nodes, json_array_elements(nodes.n -> 'Plans') c
	)
	SELECT DISTINCT CASE
		WHEN n ->> 'Node Type' IN ('Index Scan', 'Index Only Scan', 'Bitmap Index Scan')
			THEN 'index ' || (n ->> 'Index Name')
		ELSE lower(n ->> 'Node Type') || ' on ' || (n ->> 'Relation Name') END
	FROM nodes
	WHERE n ->> 'Relation Name' = 'jobs' OR n ->> 'Index Name' LIKE 'jobs%'
	ORDER BY 1;
END
$$;
SELECT * FROM pg_temp.plan_scans('SELECT * FROM jobqueue.queue_stats');

-- exact: the backlog, leases and dead jobs; succeeded and cancelled are the
-- planner's estimates on a table over jobqueue.exact_count_limit (98,700
-- and 1,000 in truth)
SET jobqueue.exact_count_limit = 0;
SELECT queue_name, pending, ready, scheduled, running, expiring_soon, dead,
       succeeded BETWEEN 95000 AND 102000 AS succeeded_about_right,
       cancelled BETWEEN 700 AND 1300 AS cancelled_about_right,
       oldest_ready_age >= interval '10 minutes' AS ready_for_10_minutes
FROM jobqueue.queue_stats WHERE queue_name = 'q_stats_big';
-- jq_queue_counts stops at count_limit + 1 (100 of each in truth)
SELECT queue_name, ready, running, dead FROM jobqueue.jq_queue_counts(ARRAY['q_stats_big'], 10);

RESET jobqueue.exact_count_limit;
SHOW jobqueue.exact_count_limit;

SELECT jobqueue.jq_drop_queue(q, force => true)
FROM unnest(ARRAY['q_stats', 'q_stats_empty', 'q_stats_groups', 'q_stats_big']) q;
