#!/usr/bin/env bash
# The dashboard on a big table: 1,000,000 pending and 1,000,000 finished
# jobs (and 2,000 dead) in 20 queues.  Measures, with a real HTTP client
# (bench/dashboard-client.js, keep-alive, one request at a time) against
# the running dashboard/jobqueue-dashboard:
#   - the overview (GET /api/queues) and filtered jobs pages
#     (GET /api/jobs?queue=&status=...) : p50, p95, p99, max;
#   - what a dashboard left open costs the database: the CPU time of the
#     dashboard's backends (application_name jobqueue-dashboard, read from
#     /proc) over BENCH_OPEN_SECONDS, once idle and once while a worker
#     drains one queue (every completion is a change the page hears of).
#   - the overview's own query in the server (jq_queue_counts, and
#     queue_stats for comparison), which refreshes the dashboard's copy;
# Usage: sudo bash bench/dashboard.sh     (own cluster in bench/work-dashboard)
# Environment: BENCH_PENDING (1000000), BENCH_FINISHED (1000000),
#   BENCH_REQUESTS (200 per URL), BENCH_OPEN_SECONDS (60), PG_CONFIG.
source "$(dirname "$0")/../scripts/common.sh"

PENDING=${BENCH_PENDING:-1000000}
FINISHED=${BENCH_FINISHED:-1000000}
OPEN_SECONDS=${BENCH_OPEN_SECONDS:-60}
export BENCH_REQUESTS=${BENCH_REQUESTS:-200}
WORK=$JQ_ROOT/bench/work-dashboard
CLK_TCK=$(getconf CLK_TCK)

jq_install_packages
if [ "${BENCH_INSTALL:-1}" = 1 ]; then
	src=$(jq_workdir bench-dashboard)
	jq_build_install "$src"
	rm -rf "$src"
fi
if [ ! -d "$JQ_ROOT/dashboard/node_modules/pg" ]; then
	(cd "$JQ_ROOT/dashboard" && npm ci --omit=dev --no-audit --no-fund --loglevel=error)
fi

port=$(jq_free_port 56100 56199)
jq_owned_dir "$WORK"
jq_cluster_init "$WORK" "$port"
jq_cluster_conf <<CONF
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'jobqueue'
shared_buffers = '1GB'
max_wal_size = '8GB'
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
cat >"$JQ_PGDATA/pg_hba.conf" <<HBA
local all all trust
host all all 127.0.0.1/32 scram-sha-256
HBA
dash_pid=
worker_pid=
cleanup() {
	[ -n "$worker_pid" ] && psql_b -d dash -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench-worker'" >/dev/null 2>&1
	[ -n "$dash_pid" ] && kill "$dash_pid" 2>/dev/null
	wait 2>/dev/null
	jq_cluster_stop
}
trap cleanup EXIT
jq_cluster_start
psql_b() { as_pguser psql -X -q -At -v ON_ERROR_STOP=1 -h "$JQ_PGHOST" -p "$port" "$@"; }
psql_b -d postgres -c 'CREATE DATABASE dash'
psql_b -d dash -c 'CREATE EXTENSION jobqueue'

log "loading $PENDING pending and $FINISHED finished jobs in 20 queues"
t0=$(date +%s)
psql_b -d dash <<SQL
SELECT jobqueue.jq_create_queue('queue_' || lpad(i::text, 2, '0'), retention => '30 days') FROM generate_series(1, 20) i;
CREATE ROLE bench_monitor LOGIN PASSWORD 'bench';
CREATE ROLE bench_admin LOGIN PASSWORD 'bench';
SELECT jobqueue.jq_grant_monitor('bench_monitor');
SELECT jobqueue.jq_grant_admin('bench_admin');
-- The rows are written directly (a fixture, not the API): the finished
-- jobs first, as in a queue that has run for a while.
INSERT INTO jobqueue.jobs (queue_name, payload, status, max_attempts, attempt_count, lease_token,
                           lease_owner, created_at, available_at, started_at, finished_at)
SELECT 'queue_' || lpad((1 + i % 20)::text, 2, '0'), jsonb_build_object('user_id', i, 'template', 'welcome'),
       'succeeded', 8, 1, 1, 'worker-' || (i % 8), t, t, t, t + interval '20 ms'
FROM generate_series(1, $FINISHED) i, LATERAL (SELECT now() - interval '1 day' + i * interval '50 ms') x(t);
INSERT INTO jobqueue.jobs (queue_name, payload, status, max_attempts, attempt_count, lease_token,
                           created_at, available_at, finished_at, last_error_code, errors)
SELECT 'queue_' || lpad((1 + i % 20)::text, 2, '0'), jsonb_build_object('user_id', i), 'dead', 1, 1, 1,
       now() - interval '1 hour', now() - interval '1 hour', now() - interval '30 minutes',
       CASE WHEN i % 3 = 0 THEN 'HTTP_503' ELSE 'BAD_ADDRESS' END,
       jsonb_build_array(jsonb_build_object('attempt', 1, 'code', CASE WHEN i % 3 = 0 THEN 'HTTP_503' ELSE 'BAD_ADDRESS' END,
                                            'message', 'failed', 'owner', 'worker-1'))
FROM generate_series(1, 2000) i;
INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, created_at, available_at)
SELECT 'queue_' || lpad((1 + i % 20)::text, 2, '0'), jsonb_build_object('user_id', i), 8,
       now() - interval '10 minutes', now() - interval '10 minutes' + (i % 1000) * interval '1 ms'
FROM generate_series(1, $PENDING) i;
SQL
psql_b -d dash -c 'VACUUM (ANALYZE) jobqueue.jobs'
echo "loaded in $(($(date +%s) - t0)) s; table and indexes: $(psql_b -d dash -c "SELECT pg_size_pretty(pg_total_relation_size('jobqueue.jobs'))")"
psql_b -d dash -c "SELECT status, count(*) FROM jobqueue.jobs GROUP BY 1 ORDER BY 1" | sed 's/^/    /'

# What refreshes the overview's counts: jq_queue_counts (bounded, what the
# dashboard reads) against queue_stats (counts the whole backlog), each
# timed in the server, 20 times (the first of each on a cold cache).
log "the overview's query in the server, 20 runs each (ms: p50 p95 max)"
for q in 'SELECT * FROM jobqueue.jq_queue_counts(NULL, 1000)' 'SELECT * FROM jobqueue.queue_stats'; do
	{ echo '\timing on'; for ((i = 0; i < 20; i++)); do echo "$q;"; done; } |
		psql_b -d dash -v ON_ERROR_STOP=0 -c 'SET statement_timeout = 0' -f - 2>&1 |
		sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sort -n |
		awk -v q="$q" '{ t[NR] = $1 } END { i = int(NR * 0.95 + 0.999); printf "    %s: %.1f %.1f %.1f\n", q, t[int((NR + 1) / 2)], t[i], t[NR] }'
done | tee "$WORK/overview_query.txt"

dport=$(jq_free_port 56200 56299)
"$JQ_ROOT/dashboard/jobqueue-dashboard" --listen "127.0.0.1:$dport" --dsn "postgresql://127.0.0.1:$port/dash" \
	>"$WORK/dashboard.log" 2>&1 &
dash_pid=$!
for ((i = 0; i < 100; i++)); do grep -q listening "$WORK/dashboard.log" && break; sleep 0.1; done
export DASH_URL="http://127.0.0.1:$dport" DASH_USER=bench_monitor DASH_PASSWORD=bench
client() { node "$JQ_ROOT/bench/dashboard-client.js" "$@"; }

log "latency in ms, $BENCH_REQUESTS requests per URL (url p50 p95 p99 max), as bench_monitor"
client latency /api/queues /api/queues/queue_07 \
	'/api/jobs?queue=queue_07' '/api/jobs?queue=queue_07&status=pending' \
	'/api/jobs?queue=queue_07&status=succeeded' '/api/jobs?queue=queue_07&status=dead&error_code=HTTP_503' \
	'/api/jobs?queue=queue_07&status=succeeded&before_id=500000' '/api/dead-letters?queue=queue_07' |
	tee "$WORK/latency.txt" | sed 's/^/    /'

# CPU seconds of the dashboard's backends, from /proc (utime + stime).
dash_cpu() {
	local total=0 pid f
	for pid in $(psql_b -d dash -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'jobqueue-dashboard'"); do
		f=/proc/$pid/stat
		[ -r "$f" ] || continue
		total=$((total + $(awk '{ print $14 + $15 }' "$f")))
	done
	echo "$total"
}
open_run() {
	local label=$1 c0 c1 t0 t1
	c0=$(dash_cpu)
	t0=$(date +%s.%N)
	client open "$OPEN_SECONDS" | sed 's/^/    /'
	t1=$(date +%s.%N)
	c1=$(dash_cpu)
	awk -v a="$c0" -v b="$c1" -v t0="$t0" -v t1="$t1" -v hz="$CLK_TCK" -v l="$label" \
		'BEGIN { printf "    %s: the dashboard'"'"'s backends used %.2f s of CPU in %.0f s = %.2f %% of a core\n", l, (b - a) / hz, t1 - t0, 100 * (b - a) / hz / (t1 - t0) }'
}
log "a dashboard left open (overview, live updates) for $OPEN_SECONDS s, idle database"
open_run idle | tee "$WORK/open_idle.txt"

log "the same while a worker drains queue_03 (claim 10 + complete, as fast as it goes)"
(
	for ((k = 0; k < 10000000; k++)); do
		echo "WITH c AS (SELECT id, token FROM jobqueue.jq_claim('queue_03', 10, 'bench-worker'))
			SELECT count(*) FROM jobqueue.jq_complete_many(ARRAY(SELECT id FROM c), ARRAY(SELECT token FROM c));"
	done | as_pguser env PGAPPNAME=bench-worker psql -X -q -h "$JQ_PGHOST" -p "$port" -d dash >/dev/null 2>&1
) &
worker_pid=$!
open_run "busy queue_03" | tee "$WORK/open_busy.txt"
psql_b -d dash -c "SELECT jobqueue.jq_counters() IS NOT NULL" >/dev/null
echo "    the worker completed $(psql_b -d dash -c "SELECT completed FROM jobqueue.jq_counters() WHERE queue_name = 'queue_03'") jobs meanwhile"
psql_b -d dash -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'bench-worker'" >/dev/null
wait "$worker_pid" 2>/dev/null || true
worker_pid=
echo
echo "results in $WORK (overview_query.txt, latency.txt, open_idle.txt, open_busy.txt)"
