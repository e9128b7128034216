#!/usr/bin/env bash
# jobqueue benchmark, part "group controls": what per-group overrides and
# fair share cost a claim, side by side in one run.
#
#   bench/group_controls.sh           (psql's usual PG* environment: a
#                                      database with jobqueue installed)
#
# 1. Overrides: two queues with group_concurrency 4 and GC_GROUPS (10,000)
#    groups of 2 ready jobs each; "over" also has GC_OVERRIDES (100)
#    overrides (concurrency 3, on groups spread over the key range) and as
#    many again for groups without jobs.  Claim p50 of "over" against
#    "plain".
# 2. Fair share: a fair_share queue against a priority queue with the same
#    group policy (group_concurrency 4), at 100 and at GC_GROUPS ready
#    groups, half of the groups with a charged usage.
#
# Each claim runs inside the server (clock_timestamp around jq_claim, no
# network) in a subtransaction that is rolled back, so every claim sees
# the same backlog; the kinds alternate, GC_CLAIMS (100) claims of 1 each,
# repeated GC_ROUNDS (3) times.  Prints the p50 per queue and round, and
# the ratio of the medians of the rounds; the load average before and
# after.  Drops its queues at the end.
set -euo pipefail
GC_GROUPS=${GC_GROUPS:-10000}
GC_OVERRIDES=${GC_OVERRIDES:-100}
GC_CLAIMS=${GC_CLAIMS:-100}
GC_ROUNDS=${GC_ROUNDS:-3}
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
QUEUES="'gc_plain', 'gc_over', 'gc_prio_small', 'gc_fair_small', 'gc_prio_big', 'gc_fair_big'"

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"${PSQL[@]}" <<SQL >/dev/null
SELECT jobqueue.jq_drop_queue(queue_name, force => true) FROM jobqueue.queues
WHERE queue_name IN ($QUEUES);
SQL
"${PSQL[@]}" <<SQL
\o /dev/null
SELECT jobqueue.jq_create_queue('gc_plain', group_concurrency => 4);
SELECT jobqueue.jq_create_queue('gc_over', group_concurrency => 4);
SELECT jobqueue.jq_create_queue('gc_prio_small', group_concurrency => 4);
SELECT jobqueue.jq_create_queue('gc_fair_small', group_concurrency => 4, fairness => 'fair_share');
SELECT jobqueue.jq_create_queue('gc_prio_big', group_concurrency => 4);
SELECT jobqueue.jq_create_queue('gc_fair_big', group_concurrency => 4, fairness => 'fair_share');
SELECT count(*) FROM (VALUES ('gc_plain', $GC_GROUPS), ('gc_over', $GC_GROUPS),
		('gc_prio_small', 100), ('gc_fair_small', 100),
		('gc_prio_big', $GC_GROUPS), ('gc_fair_big', $GC_GROUPS)) v(q, g),
	LATERAL jobqueue.jq_enqueue_many(v.q,
		ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 2 * v.g)),
		group_keys => ARRAY(SELECT 'g' || lpad((i % v.g)::text, 6, '0') FROM generate_series(1, 2 * v.g) i));
SELECT jobqueue.jq_set_group_limit('gc_over', 'g' || lpad((i * ($GC_GROUPS / $GC_OVERRIDES))::text, 6, '0'), 3)
FROM generate_series(0, $GC_OVERRIDES - 1) i;
SELECT jobqueue.jq_set_group_limit('gc_over', 'idle-' || i, 3) FROM generate_series(1, $GC_OVERRIDES) i;
-- half of the fair-share groups have used something (as finished attempts would)
UPDATE jobqueue.groups SET usage = 1 + (hashtext(group_key) & 1023) / 100.0,
	usage_epoch = extract(epoch FROM now())
WHERE queue_name IN ('gc_fair_small', 'gc_fair_big') AND hashtext(group_key) % 2 = 0;
SELECT jobqueue.jq_alter_queue(q, fair_share_half_life => '1 hour') FROM unnest(ARRAY['gc_fair_small', 'gc_fair_big']) q;
ANALYZE jobqueue.jobs;
ANALYZE jobqueue.groups;
CREATE TEMP TABLE gc_times (round int, queue text, ms float8);
CREATE FUNCTION pg_temp.gc_claim(r int, q text) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	t0 timestamptz;
	t1 timestamptz;
BEGIN
	BEGIN
		t0 := clock_timestamp();
		PERFORM * FROM jobqueue.jq_claim(q, 1, 'bench');
		t1 := clock_timestamp();
		RAISE SQLSTATE 'JQBEN';
	EXCEPTION WHEN SQLSTATE 'JQBEN' THEN
		NULL;
	END;
	INSERT INTO gc_times VALUES (r, q, extract(epoch FROM t1 - t0) * 1000);
END
\$\$;
-- warm up every statement once
SELECT pg_temp.gc_claim(0, q) FROM unnest(ARRAY[$QUEUES]) q;
DELETE FROM gc_times;
SELECT pg_temp.gc_claim(r, q)
FROM generate_series(1, $GC_ROUNDS) r, generate_series(1, $GC_CLAIMS) i, unnest(ARRAY[$QUEUES]) q
ORDER BY r, i;
\o
\pset format aligned
\pset tuples_only off
\echo $GC_GROUPS groups of 2 ready jobs; $GC_OVERRIDES overrides on them and $GC_OVERRIDES on idle groups; $GC_CLAIMS claims of 1 per queue and round
SELECT queue, round, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3) AS p50_ms
FROM gc_times GROUP BY queue, round ORDER BY queue, round;
WITH p AS (SELECT queue, round, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS p50
		   FROM gc_times GROUP BY queue, round),
	 m AS (SELECT queue, percentile_cont(0.5) WITHIN GROUP (ORDER BY p50) AS p50 FROM p GROUP BY queue)
SELECT v.what, round((a.p50 / b.p50)::numeric, 2) AS ratio
FROM (VALUES ('overrides / none, $GC_GROUPS groups', 'gc_over', 'gc_plain'),
			 ('fair_share / priority, 100 groups', 'gc_fair_small', 'gc_prio_small'),
			 ('fair_share / priority, $GC_GROUPS groups', 'gc_fair_big', 'gc_prio_big')) v(what, a, b)
JOIN m a ON a.queue = v.a JOIN m b ON b.queue = v.b;
SQL
"${PSQL[@]}" <<SQL >/dev/null
SELECT jobqueue.jq_drop_queue(queue_name, force => true) FROM jobqueue.queues
WHERE queue_name IN ($QUEUES);
SQL
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
