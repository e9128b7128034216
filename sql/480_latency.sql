--
-- Latency histograms (jq_latency, jq_latency_buckets, jq_latency_reset).
-- The values come from times the test sets itself (run_at in the past,
-- started_at and created_at moved back), so each is known to within the
-- few milliseconds the statements take.  A quantile is interpolated in
-- its bucket (at most 6.25 % wide), so the bounds below are the value
-- -6 % .. +7 %; a maximum and a sum are exact.
-- Latencies are published when a transaction ends.
--
SELECT jobqueue.jq_create_queue('q_lat', max_attempts => 2, lease_duration => '1 hour');
SELECT jobqueue.jq_counters_reset();

CREATE FUNCTION pg_temp.lat(queue text) RETURNS TABLE(kind text, count bigint,
	p50 numeric, p90 numeric, p99 numeric, max numeric, sum numeric)
LANGUAGE sql AS $$
	SELECT l.kind, l.count, round(extract(epoch FROM l.p50), 1),
		round(extract(epoch FROM l.p90), 1), round(extract(epoch FROM l.p99), 1),
		round(extract(epoch FROM l.max), 1), round(extract(epoch FROM l.sum), 1)
	FROM jobqueue.jq_latency(queue) l ORDER BY l.kind
$$;

-- nothing timed yet: no rows
SELECT count(*) FROM jobqueue.jq_latency('q_lat');

-- wait: 100 jobs, ready 1 .. 100 seconds ago, claimed in one transaction
BEGIN;
SELECT count(jobqueue.jq_enqueue('q_lat', jsonb_build_object('i', i),
	run_at => now() - make_interval(secs => i))) FROM generate_series(1, 100) AS i;
CREATE TEMP TABLE c AS SELECT * FROM jobqueue.jq_claim('q_lat', 100, 'w');
COMMIT;
SELECT kind, count,
	p50 BETWEEN 50 * 0.94 AND 50 * 1.07 AS p50_ok,
	p90 BETWEEN 90 * 0.94 AND 90 * 1.07 AS p90_ok,
	p99 BETWEEN 99 * 0.94 AND 99 * 1.07 AS p99_ok,
	max BETWEEN 100 AND 110 AS max_ok
FROM pg_temp.lat('q_lat') WHERE kind = 'wait';
-- every wait is i seconds plus the same time from the enqueues to the
-- claim, e: max = 100 + e, sum = 5050 + 100 e
SELECT abs(extract(epoch FROM sum) - 100 * extract(epoch FROM max) + 4950) < 0.001 AS sum_ok
FROM jobqueue.jq_latency('q_lat') WHERE kind = 'wait';
SELECT kind, count, p50 FROM pg_temp.lat('q_lat') WHERE kind <> 'wait';

-- a rolled-back claim times nothing, nor does a rolled-back savepoint
SELECT jobqueue.jq_enqueue('q_lat', '{}', run_at => now() - interval '1 hour') AS j2 \gset
BEGIN;
SELECT count(*) FROM jobqueue.jq_claim('q_lat', 1, 'w');
ROLLBACK;
BEGIN;
SAVEPOINT s;
SELECT count(*) FROM jobqueue.jq_claim('q_lat', 1, 'w');
ROLLBACK TO SAVEPOINT s;
SAVEPOINT t;
CREATE TEMP TABLE c2 AS SELECT * FROM jobqueue.jq_claim('q_lat', 1, 'w');
RELEASE SAVEPOINT t;
COMMIT;
SELECT kind, count, max >= 3600 AS max_is_the_hour FROM pg_temp.lat('q_lat');

-- run and total: the attempts started an hour ago, the jobs were enqueued a
-- day ago; run for every attempt that ends, total for succeeded and dead
UPDATE jobqueue.jobs SET started_at = started_at - interval '1 hour',
	created_at = created_at - interval '1 day' WHERE queue_name = 'q_lat';
SELECT count(*) FROM jobqueue.jq_complete_many(
	ARRAY(SELECT id FROM c ORDER BY id LIMIT 10), ARRAY(SELECT token FROM c ORDER BY id LIMIT 10));
SELECT jobqueue.jq_fail(id, token, 'E_ONE', 'boom', true) FROM c ORDER BY id OFFSET 10 LIMIT 1;
SELECT jobqueue.jq_fail(id, token, 'E_TWO', 'boom', false) FROM c ORDER BY id OFFSET 11 LIMIT 1;
SELECT jobqueue.jq_release(id, token) FROM c ORDER BY id OFFSET 12 LIMIT 1;
-- a fenced completion times nothing
SELECT jobqueue.jq_complete(id, token + 1) FROM c ORDER BY id OFFSET 13 LIMIT 1;
SELECT kind, count, p50 BETWEEN 3600 * 0.94 AND 3600 * 1.07 AS p50_ok,
	max BETWEEN 3600 AND 3700 AS max_ok
FROM pg_temp.lat('q_lat') WHERE kind = 'run';
SELECT kind, count, p50 BETWEEN 86400 * 0.94 AND 86400 * 1.07 AS p50_ok,
	max BETWEEN 86400 AND 86500 AS max_ok
FROM pg_temp.lat('q_lat') WHERE kind = 'total';

-- the reaper: a lease lost ends the run when the reaper finds it
UPDATE jobqueue.jobs SET lease_expires_at = now() - interval '1 second'
WHERE id = (SELECT id FROM c ORDER BY id OFFSET 14 LIMIT 1);
SELECT jobqueue.jq_reap() AS reaped;
SELECT kind, count FROM pg_temp.lat('q_lat') WHERE kind = 'run';

-- the buckets: cumulative, ending at infinity with the count, and the
-- upper bounds where they are documented
SELECT bucket, le FROM jobqueue.jq_latency_buckets('q_lat')
WHERE kind = 'wait' AND bucket IN (0, 1, 15, 16, 17, 32, 496, 512, 513) ORDER BY bucket;
SELECT kind, count(*) AS buckets, bool_and(le > 0) AS positive,
	max(count) AS last_count FROM jobqueue.jq_latency_buckets('q_lat') GROUP BY kind ORDER BY kind;
SELECT count(*) AS not_cumulative FROM (
	SELECT count < lag(count) OVER (PARTITION BY kind ORDER BY bucket) AS down
	FROM jobqueue.jq_latency_buckets('q_lat')) b WHERE down;
SELECT b.kind, b.count = l.count AS inf_is_count
FROM jobqueue.jq_latency_buckets('q_lat') b JOIN jobqueue.jq_latency('q_lat') l USING (kind)
WHERE b.le = 'Infinity' ORDER BY b.kind;
-- the wait of 50 s is in the bucket whose bounds hold 50 s
SELECT le FROM jobqueue.jq_latency_buckets('q_lat') b
WHERE kind = 'wait' AND count >= 50 ORDER BY bucket LIMIT 1;

-- jq_latency_histograms: the buckets numbered a multiple of 16 of
-- jq_latency_buckets as arrays, with the count and the sum of jq_latency
SELECT h.kind, pg_catalog.array_length(h.le, 1) AS bounds,
	h.le = (SELECT pg_catalog.array_agg(b.le ORDER BY b.bucket) FROM jobqueue.jq_latency_buckets('q_lat') b
			WHERE b.kind = h.kind AND b.bucket % 16 = 0 AND b.le < 'Infinity') AS same_bounds,
	h.counts = (SELECT pg_catalog.array_agg(b.count ORDER BY b.bucket) FROM jobqueue.jq_latency_buckets('q_lat') b
			WHERE b.kind = h.kind AND b.bucket % 16 = 0 AND b.le < 'Infinity') AS same_counts,
	h.count = l.count AS same_count,
	pg_catalog.abs(h.sum - EXTRACT(epoch FROM l.sum)::float8) < 1e-6 AS same_sum,
	h.le[1] AS first_le, h.le[33] AS last_le
FROM jobqueue.jq_latency_histograms('q_lat') h JOIN jobqueue.jq_latency('q_lat') l USING (queue_name, kind)
ORDER BY h.kind;
SELECT count(*) FROM jobqueue.jq_latency_histograms('no_such_queue');
-- NULL: every queue of the database; an unknown queue: nothing
SELECT DISTINCT queue_name FROM jobqueue.jq_latency();
SELECT count(*) FROM jobqueue.jq_latency('no_such_queue');
SELECT count(*) FROM jobqueue.jq_latency_buckets('no_such_queue');

-- jq_latency_reset zeroes the histograms and keeps the event counters
SELECT claimed AS claimed_before FROM jobqueue.jq_counters() WHERE queue_name = 'q_lat';
SELECT since AS since_before FROM jobqueue.jq_latency('q_lat') LIMIT 1 \gset
SELECT jobqueue.jq_latency_reset('q_lat');
SELECT count(*) AS rows_after_reset FROM jobqueue.jq_latency('q_lat');
SELECT claimed AS claimed_after FROM jobqueue.jq_counters() WHERE queue_name = 'q_lat';
SELECT jobqueue.jq_enqueue('q_lat', '{}') IS NOT NULL AS enqueued;
SELECT count(*) FROM jobqueue.jq_claim('q_lat', 1, 'w');
SELECT kind, count, since > :'since_before' AS since_moved FROM jobqueue.jq_latency('q_lat') ORDER BY kind;
-- jq_counters_reset removes them with the counters
SELECT jobqueue.jq_counters_reset('q_lat');
SELECT count(*) AS rows_after_counters_reset FROM jobqueue.jq_latency('q_lat');

-- track_counters off: nothing is timed
SET jobqueue.track_counters = off;
SELECT jobqueue.jq_enqueue('q_lat', '{}') IS NOT NULL AS enqueued;
SELECT count(*) FROM jobqueue.jq_claim('q_lat', 1, 'w');
RESET jobqueue.track_counters;
SELECT count(*) AS rows_untracked FROM jobqueue.jq_latency('q_lat');

SELECT jobqueue.jq_drop_queue('q_lat', force => true);
