#!/usr/bin/env bash
# jobqueue benchmark, part "group history": does the cost of grouped claims
# and of the group statistics follow the groups that have work, or every
# group a queue ever had?
#
#   bench/group_history.sh            (psql's usual PG* environment: a
#                                      database with jobqueue installed)
#
# Two strictly ordered queues (group_ordered: one group per order or
# document is what it exists for) and two group_concurrency queues, each
# with GH_LIVE (100) live groups of GH_JOBS (10) pending jobs.  The "hist"
# queues also had GH_FINISHED (200,000) groups whose jobs all succeeded;
# the "fresh" ones never had more than their live groups.  Measured inside
# the server (clock_timestamp around each call, so no network): the p50 and
# p95 of GH_CLAIMS (200) claims of 1 and of 5 (each batch completed at
# once, so the backlog stays the same), and queue_stats and jq_group_stats
# of each queue (median of 5).  Prints one line per measurement and the
# ratios hist / fresh, then the worker's repair of the group counters
# (with the prune of the rows of finished groups): its first pass, the
# passes it takes to prune, and its cost afterwards.  Drops its queues at
# the end.
set -euo pipefail
GH_FINISHED=${GH_FINISHED:-200000}
GH_LIVE=${GH_LIVE:-100}
GH_JOBS=${GH_JOBS:-10}
GH_CLAIMS=${GH_CLAIMS:-200}
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)

"${PSQL[@]}" <<SQL
SELECT jobqueue.jq_drop_queue(queue_name, force => true) FROM jobqueue.queues
WHERE queue_name IN ('gh_hist_ordered', 'gh_fresh_ordered', 'gh_hist_limit', 'gh_fresh_limit');
SQL
"${PSQL[@]}" <<SQL
\o /dev/null
SELECT jobqueue.jq_create_queue('gh_hist_ordered', group_ordered => true);
SELECT jobqueue.jq_create_queue('gh_fresh_ordered', group_ordered => true);
SELECT jobqueue.jq_create_queue('gh_hist_limit', group_concurrency => 2);
SELECT jobqueue.jq_create_queue('gh_fresh_limit', group_concurrency => 2);
-- the finished groups: one job each, succeeded (the group row is made by
-- the insert, as an enqueue would)
INSERT INTO jobqueue.jobs (queue_name, payload, status, group_key, max_attempts, finished_at)
SELECT q, '{}', 'succeeded', 'order-' || i, 3, now()
FROM unnest(ARRAY['gh_hist_ordered', 'gh_hist_limit']) q, generate_series(1, $GH_FINISHED) i;
-- the live groups, in every queue
SELECT count(*) FROM unnest(ARRAY['gh_hist_ordered', 'gh_fresh_ordered', 'gh_hist_limit', 'gh_fresh_limit']) q,
	LATERAL jobqueue.jq_enqueue_many(q,
		ARRAY(SELECT '{}'::jsonb FROM generate_series(1, $GH_LIVE * $GH_JOBS)),
		group_keys => ARRAY(SELECT 'live-' || (i % $GH_LIVE) FROM generate_series(1, $GH_LIVE * $GH_JOBS) i));
ANALYZE jobqueue.jobs;
CREATE TEMP TABLE gh_times (what text, queue text, ms float8);
CREATE FUNCTION pg_temp.gh_claims(q text, n int, k int) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	t0 timestamptz;
	ids bigint[];
	tokens bigint[];
BEGIN
	FOR i IN 1 .. k LOOP
		t0 := clock_timestamp();
		SELECT array_agg(c.id), array_agg(c.token) INTO ids, tokens FROM jobqueue.jq_claim(q, n, 'bench') c;
		INSERT INTO gh_times VALUES ('claim ' || n, q, extract(epoch FROM clock_timestamp() - t0) * 1000);
		-- put the jobs back as new ones of the same groups: the backlog stays
		PERFORM jobqueue.jq_complete_many(ids, tokens);
		PERFORM jobqueue.jq_enqueue_many(q, ARRAY(SELECT '{}'::jsonb FROM unnest(ids)),
			group_keys => ARRAY(SELECT j.group_key FROM jobqueue.jobs j WHERE j.id = ANY (ids)));
	END LOOP;
END
\$\$;
CREATE FUNCTION pg_temp.gh_stats(q text) RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	t0 timestamptz;
BEGIN
	FOR i IN 1 .. 5 LOOP
		t0 := clock_timestamp();
		PERFORM * FROM jobqueue.queue_stats s WHERE s.queue_name = q;
		INSERT INTO gh_times VALUES ('queue_stats', q, extract(epoch FROM clock_timestamp() - t0) * 1000);
		t0 := clock_timestamp();
		PERFORM * FROM jobqueue.jq_group_stats(q);
		INSERT INTO gh_times VALUES ('jq_group_stats', q, extract(epoch FROM clock_timestamp() - t0) * 1000);
	END LOOP;
END
\$\$;
SELECT pg_temp.gh_claims(q, n, $GH_CLAIMS)
FROM unnest(ARRAY['gh_fresh_ordered', 'gh_hist_ordered', 'gh_fresh_limit', 'gh_hist_limit']) q,
	unnest(ARRAY[1, 5]) n;
SELECT pg_temp.gh_stats(q)
FROM unnest(ARRAY['gh_fresh_ordered', 'gh_hist_ordered', 'gh_fresh_limit', 'gh_hist_limit']) q;
-- the worker's repair of the group counters (jq_recount_groups(NULL) is
-- what it runs after its reaps, the prune of finished groups' rows
-- included): its first pass with the rows of the finished groups still
-- there, the passes it takes to prune them, then (after the VACUUM that
-- autovacuum would run) its cost with only the live groups' rows left
CREATE TEMP TABLE gh_repair (ord serial, what text, n bigint, ms float8);
CREATE FUNCTION pg_temp.gh_repair() RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	t0 timestamptz;
	passes int := 0;
	rows_before bigint;
BEGIN
	SELECT count(*) INTO rows_before FROM jobqueue.groups;
	t0 := clock_timestamp();
	PERFORM jobqueue.jq_recount_groups(NULL);
	INSERT INTO gh_repair (what, n, ms) VALUES ('first pass (rows of groups before)', rows_before,
		extract(epoch FROM clock_timestamp() - t0) * 1000);
	LOOP
		passes := passes + 1;
		EXIT WHEN (SELECT count(*) FROM jobqueue.groups) <= 4 * $GH_LIVE OR passes > 1000;
		PERFORM jobqueue.jq_recount_groups(NULL);
	END LOOP;
	INSERT INTO gh_repair (what, n, ms) VALUES ('passes to prune', passes, NULL);
END
\$\$;
CREATE FUNCTION pg_temp.gh_repair_after() RETURNS void LANGUAGE plpgsql AS \$\$
DECLARE
	t0 timestamptz;
BEGIN
	FOR i IN 1 .. 5 LOOP
		t0 := clock_timestamp();
		PERFORM jobqueue.jq_recount_groups(NULL);
		INSERT INTO gh_repair (what, n, ms) VALUES ('pass after pruning (rows of groups)',
			(SELECT count(*) FROM jobqueue.groups),
			extract(epoch FROM clock_timestamp() - t0) * 1000);
	END LOOP;
END
\$\$;
SELECT pg_temp.gh_repair();
VACUUM jobqueue.groups;
SELECT pg_temp.gh_repair_after();
\o
\pset format aligned
\pset tuples_only off
\echo groups: $GH_FINISHED finished beside $GH_LIVE live ($GH_JOBS jobs each); $GH_CLAIMS claims per size
SELECT what, queue,
	round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS p50_ms,
	round(percentile_cont(0.95) WITHIN GROUP (ORDER BY ms)::numeric, 2) AS p95_ms
FROM gh_times GROUP BY what, queue ORDER BY what, queue;
SELECT h.what, replace(h.queue, 'gh_hist_', '') AS policy,
	round((percentile_cont(0.5) WITHIN GROUP (ORDER BY h.ms) /
		(SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f.ms) FROM gh_times f
		 WHERE f.what = h.what AND f.queue = replace(h.queue, 'hist', 'fresh')))::numeric, 2) AS hist_over_fresh
FROM gh_times h WHERE h.queue LIKE 'gh_hist_%' GROUP BY h.what, h.queue ORDER BY 1, 2;
\echo the worker's repair of the group counters, with the prune of finished groups' rows
SELECT what, max(n) AS n, round((percentile_cont(0.5) WITHIN GROUP (ORDER BY ms))::numeric, 2) AS p50_ms
FROM gh_repair GROUP BY what ORDER BY min(ord);
SQL
"${PSQL[@]}" <<SQL >/dev/null
SELECT jobqueue.jq_drop_queue(q, force => true)
FROM unnest(ARRAY['gh_hist_ordered', 'gh_fresh_ordered', 'gh_hist_limit', 'gh_fresh_limit']) q;
SQL
