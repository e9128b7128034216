#!/usr/bin/env bash
# jobqueue benchmark suite: jq_* functions side by side with the equivalent
# hand-written SQL, with pgbench custom scripts.
#
# Usage (as root, or with sudo, on Debian bookworm):
#     sudo bench/run.sh                    full run (about 45 minutes)
#     sudo BENCH_QUICK=1 bench/run.sh      small sizes, short runs (a few minutes)
#     sudo BENCH_ONLY="throughput naive" bench/run.sh    some parts only
#
# It installs what is missing (PostgreSQL 15, gnuplot-nox), builds and
# installs the extension (PG_CONFIG=... to pick another installation), starts
# a throwaway tuned cluster in bench/work/ (git-ignored) as user postgres, runs
# the parts below, and writes CSV files and PNG plots to bench/results/
# (BENCH_RESULTS=... to write elsewhere).  See bench/README.md for what each
# part measures and how to read the results.
#
# Parts (BENCH_ONLY picks a subset, in this order):
#   throughput  claim+complete (batch 1, 10, 100) and enqueue (1, 100),
#               jobqueue and hand-written SQL interleaved, synchronous_commit
#               on and off, median of BENCH_ROUNDS runs; jobs/s, WAL and
#               server CPU per job
#   diag        where the time goes: pg_stat_statements (nested statements
#               too) for claim+complete of 1 and 100 jobs, both ways
#   naive       the classic broken claim vs jq_claim, 8 clients x 1250 claims
#               on 10,000 jobs
#   growth      claim latency p50/p99 with 10k..10M pending jobs, and with
#               10M finished jobs beside 10k pending
#   reap        time to clear 100k and 1M expired leases
#   bloat       table and index size after 100k and 1M jobs flowed through,
#               with and without purging
#   churn       steady-rate enqueue+claim+complete, sampled over time
source "$(dirname "$0")/../scripts/common.sh"

BENCH_DIR=$JQ_ROOT/bench
WORK=$BENCH_DIR/work
RES=${BENCH_RESULTS:-$BENCH_DIR/results}
PORT=${BENCH_PORT:-55432}
PAYLOAD='{"task": "send_email", "user_id": 12345, "template": "welcome"}'

# Sizes and durations; BENCH_QUICK=1 shrinks everything for a smoke run.
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_SECONDS:=2}" "${BENCH_ROUNDS:=1}" "${BENCH_CLIENTS:=1 4}"
	: "${BENCH_GROWTH_SIZES:=10000 100000}" "${BENCH_GROWTH_FINISHED:=100000}"
	: "${BENCH_LAT_CLAIMS:=200}" "${BENCH_REAP_SIZES:=10000 50000}"
	: "${BENCH_FLOW_FIRST:=20000}" "${BENCH_FLOW_TOTAL:=100000}"
	: "${BENCH_CHURN_SECONDS:=20}" "${BENCH_SAMPLE:=2}"
fi
BENCH_ONLY=${BENCH_ONLY:-throughput diag naive growth reap bloat churn}
BENCH_SECONDS=${BENCH_SECONDS:-3}		# per throughput run
BENCH_ROUNDS=${BENCH_ROUNDS:-3}			# runs per configuration (median)
BENCH_CLIENTS=${BENCH_CLIENTS:-1 2 4 8}
BENCH_SYNC=${BENCH_SYNC:-off on}
BENCH_ENQ_CLIENTS=${BENCH_ENQ_CLIENTS:-1 8}
BENCH_GROWTH_SIZES=${BENCH_GROWTH_SIZES:-10000 100000 1000000 10000000}
BENCH_GROWTH_FINISHED=${BENCH_GROWTH_FINISHED:-10000000}
BENCH_GROWTH_PENDING=${BENCH_GROWTH_PENDING:-10000}
BENCH_LAT_CLAIMS=${BENCH_LAT_CLAIMS:-500}	# claims per impl per round
BENCH_REAP_SIZES=${BENCH_REAP_SIZES:-100000 1000000}
BENCH_FLOW_FIRST=${BENCH_FLOW_FIRST:-100000}
BENCH_FLOW_TOTAL=${BENCH_FLOW_TOTAL:-1000000}
BENCH_CHURN_SECONDS=${BENCH_CHURN_SECONDS:-600}
BENCH_CHURN_RATE=${BENCH_CHURN_RATE:-auto}	# jobs/s; auto: half the measured maximum
BENCH_CHURN_CLIENTS=${BENCH_CHURN_CLIENTS:-4}
BENCH_SAMPLE=${BENCH_SAMPLE:-5}			# seconds between churn samples
BENCH_INSTALL=${BENCH_INSTALL:-1}		# 0: use the installed extension as is
# The churn run is shortened so that the whole run ends within this many
# minutes (it runs last); 0: no limit.
BENCH_BUDGET_MIN=${BENCH_BUDGET_MIN:-45}
BENCH_T0=$(date +%s)
BENCH_LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

CLK_TCK=$(getconf CLK_TCK)

# ---------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------

# psql on the benchmark database, unaligned, tuples only.
q() {
	as_pguser psql -X -q -At -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -d "${DB:-bench}" -c "$1"
}
# Several statements in one session, each in its own transaction.
qm() {
	local args=() stmt
	for stmt in "$@"; do args+=(-c "$stmt"); done
	as_pguser psql -X -q -At -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -d "${DB:-bench}" "${args[@]}"
}
# The same against the database that collects the results.
r() { DB=benchres q "$1"; }

# pgbench as the cluster owner, in the scratch directory (transaction logs).
pgb() {
	local sync=$1
	shift
	(cd "$WORK/tmp" && as_pguser env PGHOST="$WORK" PGPORT="$PORT" PGDATABASE=bench \
		PGOPTIONS="-c synchronous_commit=$sync" pgbench -n -M prepared "$@" 2>&1)
}

stop_cluster() {
	if [ -f "$WORK/data/postmaster.pid" ]; then
		as_pguser pg_ctl -D "$WORK/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
}

start_cluster() {
	stop_cluster
	rm -rf "$WORK"
	mkdir -p "$WORK/tmp" "$RES"
	# Results of an earlier run would mix with this one's.
	rm -f "$RES"/*.csv "$RES"/*.png "$RES"/*.txt
	chown -R "$JQ_PGUSER" "$WORK"
	log "creating a throwaway cluster in $WORK/data"
	as_pguser initdb -D "$WORK/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
	# Tuned for a dedicated machine; sized from its memory.
	local mem_mb sb_mb
	mem_mb=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
	sb_mb=$((mem_mb / 4 > 8192 ? 8192 : mem_mb / 4))
	cat >>"$WORK/data/postgresql.conf" <<EOF

# ---- jobqueue benchmark settings ----
listen_addresses = ''
port = $PORT
unix_socket_directories = '$WORK'
max_connections = 50
shared_preload_libraries = 'jobqueue, pg_stat_statements'
pg_stat_statements.track = none		# switched on only for diagnostics
shared_buffers = ${sb_mb}MB
effective_cache_size = $((mem_mb / 2))MB
work_mem = 16MB
maintenance_work_mem = 1GB
wal_buffers = 64MB
max_wal_size = 16GB
min_wal_size = 2GB
checkpoint_timeout = 30min
checkpoint_completion_target = 0.9
random_page_cost = 1.1
effective_io_concurrency = 200
jit = off
autovacuum_naptime = 10s
autovacuum_vacuum_cost_limit = 2000
track_io_timing = on
log_checkpoints = on
log_autovacuum_min_duration = 0
log_min_duration_statement = -1
EOF
	as_pguser pg_ctl -D "$WORK/data" -l "$WORK/server.log" -w start >/dev/null
	DB=postgres q "CREATE DATABASE bench" >/dev/null
	DB=postgres q "CREATE DATABASE benchres" >/dev/null
	q "CREATE EXTENSION jobqueue; CREATE EXTENSION pg_stat_statements;" >/dev/null
	q "SELECT jobqueue.jq_create_queue('bench')" >/dev/null
	# Notifications are a wake-up hint that the hand-written SQL does not
	# send; the throughput comparison runs without them on both sides (one
	# extra enqueue run measures their cost).
	q "SELECT jobqueue.jq_alter_queue('bench', notify => false)" >/dev/null
	q "SELECT jobqueue.jq_create_queue('bench_notify')" >/dev/null
	# Reap in committed batches, as a scheduler calling jq_reap() would.
	q "CREATE PROCEDURE public.reap_all(batch int, INOUT total bigint DEFAULT 0,
			INOUT batches int DEFAULT 0) LANGUAGE plpgsql AS \$\$
		DECLARE n bigint;
		BEGIN
			LOOP
				n := jobqueue.jq_reap(batch);
				COMMIT;
				EXIT WHEN n = 0;
				total := total + n;
				batches := batches + 1;
			END LOOP;
		END \$\$" >/dev/null
	r "CREATE TABLE throughput_runs (scenario text, batch int, clients int,
			sync_commit text, impl text, round int, jobs bigint, seconds float8,
			jobs_per_s float8, wal_bytes numeric, server_cpu_s float8,
			preload bigint, pending_left bigint);
		CREATE TABLE latency_log (size text, pending bigint, finished bigint,
			impl text, round int, latency_us bigint);
		CREATE TABLE naive (impl text, clients int, claims_per_client int,
			jobs bigint, distinct_succeeded bigint, still_pending bigint,
			max_attempts int, jobs_claimed_twice_or_more bigint, seconds float8);
		CREATE TABLE reap (how text, expired bigint, reaped bigint,
			batches int, seconds float8);
		CREATE TABLE bloat (purging text, jobs_flowed bigint, phase text,
			table_bytes bigint, index_bytes bigint, total_bytes bigint,
			n_live_tup bigint, n_dead_tup bigint, rows_in_table bigint);
		CREATE TABLE churn (t float8, tps float8, lat_ms float8, lag_ms float8,
			total_bytes bigint, table_bytes bigint, index_bytes bigint,
			n_live_tup bigint, n_dead_tup bigint, pending bigint,
			running bigint, finished bigint, purging text);
		CREATE VIEW throughput AS
			SELECT scenario, batch, clients, sync_commit, impl, count(*) AS runs,
				   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY jobs_per_s)::numeric) AS jobs_per_s,
				   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY wal_bytes / jobs)::numeric) AS wal_bytes_per_job,
				   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY server_cpu_s * 1e6 / jobs)::numeric, 1) AS server_cpu_us_per_job
			  FROM throughput_runs GROUP BY 1, 2, 3, 4, 5" >/dev/null
}

# Server CPU time so far, in seconds: the postmaster and its live children,
# plus the children that have exited (cutime/cstime of the postmaster).
server_cpu() {
	local pm
	pm=$(head -n 1 "$WORK/data/postmaster.pid")
	{
		awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
		for c in $(ps --ppid "$pm" -o pid=); do
			awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || true
		done
	} | awk -v hz="$CLK_TCK" '{ s += $1 } END { printf "%.2f\n", s / hz }'
}

# Does the installed version have the background worker (and its GUCs)?
have_worker() {
	[ "$(q "SELECT count(*) FROM pg_settings WHERE name = 'jobqueue.worker_enabled'")" = 1 ] &&
		[ "$(q "SHOW jobqueue.worker_enabled")" = on ]
}

# Empty the jobs table and load $1 pending jobs of queue bench (oldest first),
# plus the rows given by an optional extra INSERT ... SELECT; then VACUUM
# ANALYZE and (unless NO_CHECKPOINT=1) CHECKPOINT, so every run starts from
# the same state.
reset_jobs() {
	local n=$1 extra=${2:-} stmts=("TRUNCATE jobqueue.jobs") ckpt=CHECKPOINT
	[ "${NO_CHECKPOINT:-0}" = 1 ] && ckpt="SELECT 1"
	[ -n "$extra" ] && stmts+=("$extra")
	[ "$n" -gt 0 ] && stmts+=("INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, available_at)
		   SELECT 'bench', '$PAYLOAD', 8,
				  now() - interval '1 hour' + g * interval '1 microsecond'
			 FROM generate_series(1, $n) AS g")
	qm "${stmts[@]}" "VACUUM ANALYZE jobqueue.jobs" "$ckpt" >/dev/null
}

# ---------------------------------------------------------------------------
# Throughput: jobqueue vs hand-written SQL, interleaved
# ---------------------------------------------------------------------------

# One pgbench run; records a row in throughput_runs and prints jobs/s.
# tp_run scenario batch clients sync impl round preload
tp_run() {
	local scen=$1 n=$2 c=$3 sync=$4 impl=$5 round=$6 preload=$7
	local script queue=bench kind
	case $scen in
	claim) kind=claim; [ "$n" = 1 ] && script=${impl}_claim1.sql || script=${impl}_claimN.sql ;;
	enqueue) kind=enqueue; [ "$n" = 1 ] && script=${impl}_enqueue1.sql || script=${impl}_enqueueN.sql ;;
	enqueue_notify) kind=enqueue; queue=bench_notify; script=ext_enqueue1.sql ;;
	esac
	# No CHECKPOINT: the pages a run touches were written since the last
	# one, so WAL per job is the steady state between checkpoints, without
	# full-page images.
	NO_CHECKPOINT=1 reset_jobs "$([ $kind = claim ] && echo "$preload" || echo 0)"
	local lsn0 cpu0 out lsn1 cpu1 tx tps jobs left
	lsn0=$(q "SELECT pg_current_wal_insert_lsn()")
	cpu0=$(server_cpu)
	out=$(pgb "$sync" -c "$c" -j "$c" -T "$BENCH_SECONDS" -f "$BENCH_DIR/pgbench/$script" \
		-D q="$queue" -D n="$n" -D owner=bench-worker)
	sleep 0.3	# let the postmaster reap the exited backends (CPU time)
	cpu1=$(server_cpu)
	lsn1=$(q "SELECT pg_current_wal_insert_lsn()")
	tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")
	if [ -z "$tx" ] || [ -z "$tps" ] || grep -q -E 'aborted|error' <<<"$out"; then
		echo "$out" >&2
		echo "pgbench failed: $scen $n $c $sync $impl" >&2
		exit 1
	fi
	if [ $kind = claim ]; then
		read -r jobs left < <(q "SELECT count(*) FILTER (WHERE status = 'succeeded'),
				count(*) FILTER (WHERE status = 'pending') FROM jobqueue.jobs" | tr '|' ' ')
	else
		jobs=$(q "SELECT count(*) FROM jobqueue.jobs")
		left=0
	fi
	r "INSERT INTO throughput_runs VALUES ('$scen', $n, $c, '$sync', '$impl', $round,
		$jobs, $tx / $tps, $jobs / ($tx / $tps), pg_wal_lsn_diff('$lsn1', '$lsn0'),
		$cpu1 - $cpu0, $preload, $left)" >/dev/null
	printf '  %-14s n=%-3s c=%s sync=%-3s %-4s round %s: %8.0f jobs/s (%s jobs, %s left)\n' \
		"$scen" "$n" "$c" "$sync" "$impl" "$round" \
		"$(awk -v j="$jobs" -v t="$tx" -v p="$tps" 'BEGIN { print j / (t / p) }')" "$jobs" "$left"
	[ "$left" -gt 0 ] || [ $kind != claim ]
}

# Preload for the next claim run: twice what the fastest run of this batch
# size and client count so far completed (at least 20,000 jobs), or the guess
# before the first run.  A run that drains the queue would overstate the
# rate: it is repeated with twice the jobs.
declare -A PRELOAD
claim_preload() {
	local key=$1 guess=$2
	echo "${PRELOAD[$key]:-$guess}"
}

part_throughput() {
	log "throughput: ${BENCH_SECONDS}s per run, $BENCH_ROUNDS rounds, clients $BENCH_CLIENTS"
	local sync n c round impl first second pre done_jobs
	for sync in $BENCH_SYNC; do
		for n in 1 10 100; do
			for c in $BENCH_CLIENTS; do
				for round in $(seq 1 "$BENCH_ROUNDS"); do
					# Alternate which side goes first.
					if ((round % 2)); then first=ext second=hand; else first=hand second=ext; fi
					for impl in $first $second; do
						pre=$(claim_preload "$n/$c" $((n == 1 ? 40000 : n == 10 ? 120000 : 200000)))
						until tp_run claim "$n" "$c" "$sync" "$impl" "$round" "$pre"; do
							echo "  queue drained: run again with more jobs" >&2
							r "DELETE FROM throughput_runs WHERE scenario = 'claim' AND batch = $n
								AND clients = $c AND sync_commit = '$sync' AND impl = '$impl'
								AND round = $round" >/dev/null
							pre=$((pre * 2))
							PRELOAD[$n/$c]=$pre
						done
						done_jobs=$(r "SELECT max(jobs) FROM throughput_runs WHERE scenario = 'claim'
							AND batch = $n AND clients = $c")
						PRELOAD[$n/$c]=$((done_jobs * 2 > 20000 ? done_jobs * 2 : 20000))
					done
				done
			done
		done
		for n in 1 100; do
			for c in $BENCH_ENQ_CLIENTS; do
				for round in $(seq 1 "$BENCH_ROUNDS"); do
					if ((round % 2)); then first=ext second=hand; else first=hand second=ext; fi
					for impl in $first $second; do
						tp_run enqueue "$n" "$c" "$sync" "$impl" "$round" 0
					done
					if [ "$n" = 1 ] && [ "$c" = 8 ] && [ "$sync" = off ]; then
						tp_run enqueue_notify 1 "$c" "$sync" ext "$round" 0
					fi
				done
			done
		done
	done
}

# ---------------------------------------------------------------------------
# Where the time goes: pg_stat_statements with nested statements tracked
# ---------------------------------------------------------------------------

part_diag() {
	log "diagnostics: per-statement times of claim + complete (1 client, 5,000 jobs each)"
	local impl n
	qm "ALTER SYSTEM SET pg_stat_statements.track = 'all'" \
		"ALTER SYSTEM SET pg_stat_statements.track_planning = on" "SELECT pg_reload_conf()" >/dev/null
	r "CREATE TABLE IF NOT EXISTS diag (impl text, batch int, toplevel bool, calls bigint,
			plans bigint, plan_ms float8, total_ms float8, us_per_call float8,
			us_per_job float8, query text)" >/dev/null
	for n in 1 100; do
		for impl in ext hand $([ $n = 1 ] && echo handplain); do
			reset_jobs 20000
			q "SELECT pg_stat_statements_reset()" >/dev/null
			pgb off -c 1 -j 1 -t $((5000 / n)) \
				-f "$BENCH_DIR/pgbench/${impl}_$([ $n = 1 ] && echo claim1 || echo claimN).sql" \
				-D q=bench -D n=$n -D owner=w >/dev/null
			q "SELECT '$impl', $n, toplevel, calls, plans, total_plan_time, total_exec_time,
					total_exec_time * 1000 / calls, total_exec_time * 1000 / 5000,
					regexp_replace(query, '\s+', ' ', 'g')
				 FROM pg_stat_statements
				WHERE calls >= $((5000 / n)) AND dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
				ORDER BY total_exec_time DESC LIMIT 6" |
				DB=benchres as_pguser psql -X -q -h "$WORK" -p "$PORT" -d benchres \
					-c "\\copy diag FROM STDIN WITH (FORMAT csv, DELIMITER '|')"
		done
	done
	qm "ALTER SYSTEM RESET pg_stat_statements.track" \
		"ALTER SYSTEM RESET pg_stat_statements.track_planning" "SELECT pg_reload_conf()" >/dev/null
	r "SELECT impl, batch, toplevel, calls, plans, round(us_per_job::numeric, 1), left(query, 60) FROM diag" | sed 's/^/  /'

	# The fixed cost of a call: a complete that matches no job, as installed
	# (SECURITY DEFINER with SET search_path), without the SET clause,
	# without either, and as hand-written SQL; 1 client, rounds interleaved.
	r "CREATE TABLE IF NOT EXISTS call_cost (variant text, round int, calls_per_s float8)" >/dev/null
	local round variant out fn="jobqueue.jq_complete(bigint, bigint)"
	reset_jobs 1000
	for round in 1 2 3; do
		for variant in "as installed" "without SET search_path" "SECURITY INVOKER, no SET" "hand-written UPDATE"; do
			case $variant in
			"as installed") q "ALTER FUNCTION $fn SECURITY DEFINER SET search_path = pg_catalog, pg_temp" ;;
			"without SET search_path") q "ALTER FUNCTION $fn RESET search_path" ;;
			"SECURITY INVOKER, no SET") q "ALTER FUNCTION $fn SECURITY INVOKER RESET search_path" ;;
			esac
			out=$(pgb off -c 1 -j 1 -T "$BENCH_SECONDS" -f "$BENCH_DIR/pgbench/$([ "$variant" = "hand-written UPDATE" ] &&
				echo hand || echo ext)_noop_complete.sql")
			r "INSERT INTO call_cost VALUES ('$variant', $round,
				$(sed -n 's/^tps = \([0-9.]*\) (without.*/\1/p' <<<"$out"))" >/dev/null
		done
	done
	q "ALTER FUNCTION $fn SECURITY DEFINER SET search_path = pg_catalog, pg_temp" >/dev/null
	r "SELECT variant, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s)::numeric)
		 FROM call_cost GROUP BY 1 ORDER BY 2" | sed 's/^/  no-op complete, /'

	# The fenced complete of one job with 5,000 jobs running, after an
	# ANALYZE that saw none running: plain status test and "IS TRUE" form,
	# generic plans as the extension keeps them.
	reset_jobs 100000
	qm "SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" >/dev/null
	local stmt id
	id=$(q "SELECT max(id) FROM jobqueue.jobs WHERE status = 'running'")
	{
		for stmt in "j.status = 'running'" "(j.status = 'running') IS TRUE"; do
			echo "==== complete of one job, 5000 running, status test: $stmt"
			qm "SET plan_cache_mode = force_generic_plan" \
				"PREPARE c(bigint, bigint, timestamptz) AS UPDATE jobqueue.jobs j
					SET status = 'succeeded', finished_at = \$3, lease_expires_at = NULL
					WHERE j.id = \$1 AND j.lease_token = \$2 AND $stmt AND j.lease_expires_at > \$3" \
				"BEGIN" \
				"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
					EXECUTE c($id, 1, now())" \
				"ROLLBACK"
			echo
		done
	} >"$RES/explain_complete.txt"
	cat "$RES/explain_complete.txt" | sed 's/^/  /'
}

# ---------------------------------------------------------------------------
# The classic double-claim experiment
# ---------------------------------------------------------------------------

part_naive() {
	log "naive claim vs jq_claim: 8 clients x 1250 claims on 10,000 jobs"
	local impl script out t0 t1
	for impl in naive ext hand; do
		script=${impl}_claim1.sql
		reset_jobs 10000
		t0=$(date +%s.%N)
		out=$(pgb on -c 8 -j 8 -t 1250 -f "$BENCH_DIR/pgbench/$script" -D q=bench -D owner=w)
		t1=$(date +%s.%N)
		grep -q 'number of transactions actually processed: 10000' <<<"$out" ||
			{ echo "$out" >&2; exit 1; }
		r "INSERT INTO naive SELECT '$impl', 8, 1250, $(q "SELECT count(*) || ', ' ||
				count(*) FILTER (WHERE status = 'succeeded') || ', ' ||
				count(*) FILTER (WHERE status = 'pending') || ', ' ||
				max(attempt_count) || ', ' ||
				count(*) FILTER (WHERE attempt_count > 1)
			FROM jobqueue.jobs"), $t1 - $t0" >/dev/null
	done
	r "SELECT impl, distinct_succeeded, max_attempts FROM naive" | sed 's/^/  /'
}

# ---------------------------------------------------------------------------
# Growth: claim latency against backlog size
# ---------------------------------------------------------------------------

# Claim latency at the current table contents: BENCH_ROUNDS rounds of
# BENCH_LAT_CLAIMS claims by one client, jobqueue and hand-written alternating.
latency_rounds() {
	local size=$1 pending=$2 finished=$3 round impl out
	for round in $(seq 1 "$BENCH_ROUNDS"); do
		for impl in ext hand; do
			rm -f "$WORK"/tmp/lat.*
			out=$(pgb off -c 1 -j 1 -t "$BENCH_LAT_CLAIMS" -f "$BENCH_DIR/pgbench/${impl}_claim1_only.sql" \
				-D q=bench -D owner=w -l --log-prefix=lat)
			grep -q "actually processed: $BENCH_LAT_CLAIMS" <<<"$out" || { echo "$out" >&2; exit 1; }
			awk -v s="$size" -v p="$pending" -v f="$finished" -v i="$impl" -v r="$round" \
				'{ print s "," p "," f "," i "," r "," $3 }' "$WORK"/tmp/lat.* |
				DB=benchres as_pguser psql -X -q -h "$WORK" -p "$PORT" -d benchres \
					-c "\\copy latency_log FROM STDIN WITH (FORMAT csv)"
		done
	done
	# The plans, with the buffers they touch, at this size.
	{
		echo "==== $size: jq_explain_claim('bench', 1)"
		q "SELECT jobqueue.jq_explain_claim('bench', 1)"
		echo "==== $size: hand-written claim of 1 job, EXPLAIN (ANALYZE, BUFFERS), rolled back"
		qm "BEGIN" "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
			WITH c AS (SELECT j.id FROM jobqueue.jobs j
						WHERE j.queue_name = 'bench' AND j.status = 'pending' AND j.available_at <= now()
						ORDER BY j.priority DESC, j.available_at, j.id
						LIMIT 1 FOR UPDATE SKIP LOCKED)
			UPDATE jobqueue.jobs j SET status = 'running', lease_token = j.lease_token + 1
			  FROM c WHERE j.id = c.id RETURNING j.id" "ROLLBACK"
		echo
	} >>"$RES/explain_growth.txt"
	r "SELECT impl, percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us),
			percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)
		 FROM latency_log WHERE size = '$size' GROUP BY impl" |
		awk -F'|' -v s="$size" '{ printf "  %-22s %-4s p50 %6d us  p99 %6d us\n", s, $1, $2, $3 }'
}

part_growth() {
	log "growth: claim latency with ${BENCH_GROWTH_SIZES// /, } pending jobs"
	local n t0 t1
	for n in $BENCH_GROWTH_SIZES; do
		t0=$(date +%s)
		reset_jobs "$n"
		t1=$(date +%s)
		echo "  loaded $n pending jobs in $((t1 - t0)) s"
		latency_rounds "${n} pending" "$n" 0
	done
	n=$BENCH_GROWTH_FINISHED
	t0=$(date +%s)
	reset_jobs "$BENCH_GROWTH_PENDING" "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts,
			status, available_at, attempt_count, lease_owner, lease_token, started_at, finished_at)
		SELECT 'bench', '$PAYLOAD', 8, 'succeeded',
			   now() - interval '2 hours' + g * interval '1 microsecond', 1, 'w', 1,
			   now() - interval '2 hours', now() - interval '90 minutes'
		  FROM generate_series(1, $n) AS g"
	t1=$(date +%s)
	echo "  loaded $n finished + $BENCH_GROWTH_PENDING pending jobs in $((t1 - t0)) s"
	latency_rounds "${BENCH_GROWTH_PENDING} pending + ${n} finished" "$BENCH_GROWTH_PENDING" "$n"
}

# ---------------------------------------------------------------------------
# Reaper: time to clear expired leases
# ---------------------------------------------------------------------------

load_expired() {
	reset_jobs 0 "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, status,
			available_at, attempt_count, lease_owner, lease_token, started_at, lease_expires_at)
		SELECT 'bench', '$PAYLOAD', 8, 'running', now() - interval '1 hour', 1,
			   'crashed-worker', 1, now() - interval '2 minutes',
			   now() - interval '1 minute' - g * interval '1 microsecond'
		  FROM generate_series(1, $1) AS g"
}

part_reap() {
	log "reaper: clearing ${BENCH_REAP_SIZES// /, } expired leases"
	local n res t0 t1 left batch=${BENCH_REAP_BATCH:-10000} worker=0
	have_worker && worker=1
	for n in $BENCH_REAP_SIZES; do
		# jq_reap() called in a loop, one transaction per batch, as a
		# scheduler would; the background worker must not help.
		if ((worker)); then
			q "ALTER SYSTEM SET jobqueue.worker_enabled = off" >/dev/null
			q "SELECT pg_reload_conf()" >/dev/null
			sleep 2
		fi
		load_expired "$n"
		t0=$(date +%s.%N)
		res=$(q "CALL public.reap_all($batch)")
		t1=$(date +%s.%N)
		r "INSERT INTO reap VALUES ('jq_reap($batch) loop with a commit per batch', $n,
			${res%|*}, ${res#*|}, $t1 - $t0)" >/dev/null
		printf '  %8d expired, jq_reap(%d) loop: %.1f s\n' "$n" "$batch" \
			"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
		if ((worker)); then
			# The background worker: running, but with a reap interval too
			# long to matter while the expired leases are loaded; the clock
			# starts when the normal interval is restored.
			q "ALTER SYSTEM RESET jobqueue.worker_enabled" >/dev/null
			q "ALTER SYSTEM SET jobqueue.reap_interval = '1h'" >/dev/null
			q "SELECT pg_reload_conf()" >/dev/null
			sleep 2
			if have_worker; then
				# The launcher starts the worker again within its interval.
				for _ in $(seq 1 60); do
					[ "$(q "SELECT attached FROM jobqueue.jq_worker_status()")" = t ] && break
					sleep 0.5
				done
				load_expired "$n"
				q "ALTER SYSTEM RESET jobqueue.reap_interval" >/dev/null
				t0=$(date +%s.%N)
				q "SELECT pg_reload_conf()" >/dev/null
				while :; do
					left=$(q "SELECT count(*) FROM jobqueue.jobs WHERE status = 'running'")
					[ "$left" = 0 ] && break
					sleep 0.2
				done
				t1=$(date +%s.%N)
				r "INSERT INTO reap VALUES ('background worker (reap_batch '
					|| current_setting('jobqueue.reap_batch') || ')', $n, $n, NULL,
					$t1 - $t0)" >/dev/null
				printf '  %8d expired, background worker: %.1f s\n' \
					"$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
			fi
			q "ALTER SYSTEM RESET jobqueue.reap_interval" >/dev/null
			q "SELECT pg_reload_conf()" >/dev/null
		fi
	done
}

# ---------------------------------------------------------------------------
# Bloat: size after many jobs flowed through
# ---------------------------------------------------------------------------

snapshot_size() {
	local purging=$1 flowed=$2 phase=$3
	r "INSERT INTO bloat VALUES ('$purging', $flowed, '$phase', $(q "
		SELECT pg_relation_size('jobqueue.jobs') || ', ' ||
			   pg_indexes_size('jobqueue.jobs') || ', ' ||
			   pg_total_relation_size('jobqueue.jobs') || ', ' ||
			   n_live_tup || ', ' || n_dead_tup || ', ' ||
			   (SELECT count(*) FROM jobqueue.jobs)
		  FROM pg_stat_user_tables WHERE relid = 'jobqueue.jobs'::regclass"))" >/dev/null
}

# Start purging finished jobs of queue bench: the background worker does it
# when the queue's retention is short; without a worker, a loop calls
# jq_purge every second, as a scheduler would.
PURGER_PID=
start_purging() {
	q "SELECT jobqueue.jq_alter_queue('bench', retention => '${1:-1 second}')" >/dev/null
	if have_worker; then
		echo worker
	else
		(while :; do q "SELECT jobqueue.jq_purge('bench', NULL, 10000)" >/dev/null || true; sleep 1; done) \
			>/dev/null 2>&1 &
		PURGER_PID=$!
		echo "jq_purge every 1 s"
	fi
}
stop_purging() {
	if [ -n "$PURGER_PID" ]; then
		kill "$PURGER_PID" 2>/dev/null || true
		wait "$PURGER_PID" 2>/dev/null || true
		PURGER_PID=
	fi
	q "SELECT jobqueue.jq_alter_queue('bench', retention => '7 days')" >/dev/null
}

part_bloat() {
	log "bloat: $BENCH_FLOW_FIRST then $BENCH_FLOW_TOTAL jobs through enqueue_many/claim/complete_many(100), 4 clients"
	local purging how per_client out
	for purging in off on; do
		reset_jobs 0
		how=none
		[ $purging = on ] && how=$(start_purging)
		per_client=$((BENCH_FLOW_FIRST / 400))
		out=$(pgb off -c 4 -j 4 -t "$per_client" -f "$BENCH_DIR/pgbench/ext_flow.sql" \
			-D q=bench -D n=100 -D owner=w)
		grep -q 'actually processed' <<<"$out" || { echo "$out" >&2; exit 1; }
		snapshot_size "$how" "$BENCH_FLOW_FIRST" "right after"
		per_client=$(((BENCH_FLOW_TOTAL - BENCH_FLOW_FIRST) / 400))
		out=$(pgb off -c 4 -j 4 -t "$per_client" -f "$BENCH_DIR/pgbench/ext_flow.sql" \
			-D q=bench -D n=100 -D owner=w)
		grep -q 'actually processed' <<<"$out" || { echo "$out" >&2; exit 1; }
		snapshot_size "$how" "$BENCH_FLOW_TOTAL" "right after"
		sleep 15
		snapshot_size "$how" "$BENCH_FLOW_TOTAL" "15 s later"
		stop_purging
	done
	r "SELECT purging, jobs_flowed, phase, pg_size_pretty(total_bytes), n_dead_tup FROM bloat" | sed 's/^/  /'
}

# ---------------------------------------------------------------------------
# Sustained churn at a steady rate
# ---------------------------------------------------------------------------

part_churn() {
	local how t0 pid out max
	if [ "$BENCH_CHURN_RATE" = auto ]; then
		# Half of what the same clients manage unthrottled.
		reset_jobs 0
		out=$(pgb on -c "$BENCH_CHURN_CLIENTS" -j "$BENCH_CHURN_CLIENTS" -T 10 \
			-f "$BENCH_DIR/pgbench/ext_churn.sql" -D q=bench -D owner=w)
		max=$(sed -n 's/^tps = \([0-9]*\).*/\1/p' <<<"$out")
		BENCH_CHURN_RATE=$((max / 2))
		echo "  unthrottled: $max jobs/s; churn rate $BENCH_CHURN_RATE jobs/s"
	fi
	if ((BENCH_BUDGET_MIN > 0)); then
		local left=$((BENCH_BUDGET_MIN * 60 - ($(date +%s) - BENCH_T0) - 90))
		if ((left < BENCH_CHURN_SECONDS)); then
			BENCH_CHURN_SECONDS=$((left < 60 ? 60 : left))
			echo "  churn shortened to ${BENCH_CHURN_SECONDS}s to end within ${BENCH_BUDGET_MIN} minutes"
		fi
	fi
	log "churn: ${BENCH_CHURN_SECONDS}s of enqueue+claim+complete at $BENCH_CHURN_RATE jobs/s, $BENCH_CHURN_CLIENTS clients"
	reset_jobs 0
	how=$(start_purging '10 seconds')
	rm -f "$WORK/tmp/churn.out" "$WORK/tmp/churn.sizes"
	(cd "$WORK/tmp" && as_pguser env PGHOST="$WORK" PGPORT="$PORT" PGDATABASE=bench \
		pgbench -n -M prepared -c "$BENCH_CHURN_CLIENTS" -j "$BENCH_CHURN_CLIENTS" \
		-T "$BENCH_CHURN_SECONDS" -R "$BENCH_CHURN_RATE" -P "$BENCH_SAMPLE" \
		-f "$BENCH_DIR/pgbench/ext_churn.sql" -D q=bench -D owner=w >"$WORK/tmp/churn.out" 2>&1) &
	pid=$!
	t0=$(date +%s.%N)
	while kill -0 "$pid" 2>/dev/null; do
		sleep "$BENCH_SAMPLE"
		q "SELECT $(date +%s.%N) - $t0, pg_total_relation_size('jobqueue.jobs'),
				  pg_relation_size('jobqueue.jobs'), pg_indexes_size('jobqueue.jobs'),
				  s.n_live_tup, s.n_dead_tup,
				  count(*) FILTER (WHERE j.status = 'pending'),
				  count(*) FILTER (WHERE j.status = 'running'),
				  count(*) FILTER (WHERE j.status IN ('succeeded', 'cancelled', 'dead'))
			 FROM pg_stat_user_tables s, jobqueue.jobs j
			WHERE s.relid = 'jobqueue.jobs'::regclass
			GROUP BY s.n_live_tup, s.n_dead_tup" >>"$WORK/tmp/churn.sizes" || true
	done
	wait "$pid" || { cat "$WORK/tmp/churn.out" >&2; exit 1; }
	stop_purging
	# pgbench progress lines: "progress: 5.0 s, 499.8 tps, lat 1.234 ms stddev 0.5, lag 0.1 ms"
	sed -n 's/^progress: \([0-9.]*\) s, \([0-9.]*\) tps, lat \([0-9.]*\) ms.*lag \([0-9.]*\) ms.*/\1,\2,\3,\4/p' \
		"$WORK/tmp/churn.out" >"$WORK/tmp/churn.tps"
	echo "churn: ${BENCH_CHURN_SECONDS} s at $BENCH_CHURN_RATE jobs/s (half of the unthrottled ${max:-?} jobs/s), $BENCH_CHURN_CLIENTS clients, synchronous_commit on, purging by $how with retention 10 s" \
		>"$RES/churn_settings.txt"
	# Join each throughput sample with the nearest size sample.
	awk -F'|' -v OFS=, -v how="$how" 'NR == FNR { t[NR] = $0; n = NR; next }
		{ split(t[1], best, ","); bd = 1e9
		  for (i = 1; i <= n; i++) { split(t[i], a, ","); d = a[1] - $1; if (d < 0) d = -d
			if (d < bd) { bd = d; split(t[i], best, ",") } }
		  printf "%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", $1, best[2], best[3], best[4],
			$2, $3, $4, $5, $6, $7, $8, $9, how }' \
		"$WORK/tmp/churn.tps" "$WORK/tmp/churn.sizes" |
		as_pguser psql -X -q -h "$WORK" -p "$PORT" -d benchres \
			-c "\\copy churn (t, tps, lat_ms, lag_ms, total_bytes, table_bytes, index_bytes, n_live_tup, n_dead_tup, pending, running, finished, purging) FROM STDIN WITH (FORMAT csv)"
	grep -E '^(number of transactions|latency average|tps)' "$WORK/tmp/churn.out" | sed 's/^/  /'
}

# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

export_results() {
	log "writing results to $RES"
	local f
	export_csv() {
		DB=benchres as_pguser psql -X -q -h "$WORK" -p "$PORT" -d benchres \
			-c "\\copy ($2) TO STDOUT WITH (FORMAT csv, HEADER)" >"$RES/$1.csv"
	}
	r "SELECT count(*) FROM throughput_runs" | grep -qv '^0$' && {
		export_csv throughput_runs "SELECT scenario, batch, clients, sync_commit, impl, round, jobs,
			round(seconds::numeric, 3) AS seconds, round(jobs_per_s::numeric) AS jobs_per_s,
			wal_bytes, round(wal_bytes / jobs, 1) AS wal_bytes_per_job,
			server_cpu_s, round((server_cpu_s * 1e6 / jobs)::numeric, 1) AS server_cpu_us_per_job,
			preload, pending_left FROM throughput_runs ORDER BY 1, 2, 4, 3, 6, 5"
		export_csv throughput "SELECT e.scenario, e.batch, e.clients, e.sync_commit,
				e.jobs_per_s AS ext_jobs_per_s, h.jobs_per_s AS hand_jobs_per_s,
				round(e.jobs_per_s / h.jobs_per_s, 3) AS ratio,
				e.wal_bytes_per_job AS ext_wal_bytes_per_job, h.wal_bytes_per_job AS hand_wal_bytes_per_job,
				e.server_cpu_us_per_job AS ext_cpu_us_per_job, h.server_cpu_us_per_job AS hand_cpu_us_per_job,
				e.runs
			FROM throughput e LEFT JOIN throughput h ON h.impl = 'hand'
				 AND (h.scenario, h.batch, h.clients, h.sync_commit) = (e.scenario, e.batch, e.clients, e.sync_commit)
			WHERE e.impl = 'ext' ORDER BY e.scenario, e.sync_commit DESC, e.batch, e.clients"
		# Batched vs single-job throughput of jobqueue, per client count.
		export_csv batch_speedup "SELECT b.sync_commit, b.clients, b.batch,
				b.jobs_per_s, s.jobs_per_s AS single_jobs_per_s,
				round(b.jobs_per_s / s.jobs_per_s, 2) AS speedup
			FROM throughput b JOIN throughput s ON s.scenario = b.scenario AND s.impl = b.impl
				 AND s.clients = b.clients AND s.sync_commit = b.sync_commit AND s.batch = 1
			WHERE b.scenario = 'claim' AND b.impl = 'ext' AND b.batch > 1
			ORDER BY 1 DESC, 3, 2"
	}
	r "SELECT count(*) FROM naive" | grep -qv '^0$' && export_csv naive "SELECT * FROM naive"
	r "SELECT to_regclass('call_cost') IS NOT NULL" | grep -q t &&
		export_csv call_cost "SELECT variant, count(*) AS runs,
			round(percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s)::numeric) AS calls_per_s,
			round((1e6 / percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s))::numeric, 1) AS us_per_call
			FROM call_cost GROUP BY 1 ORDER BY 3"
	r "SELECT to_regclass('diag') IS NOT NULL" | grep -q t &&
		export_csv diag_statements "SELECT impl, batch, toplevel, calls, plans, round(plan_ms::numeric, 1) AS plan_ms,
			round(total_ms::numeric, 1) AS exec_ms,
			round(us_per_call::numeric, 1) AS us_per_call, round(us_per_job::numeric, 1) AS us_per_job,
			query FROM diag"
	r "SELECT count(*) FROM latency_log" | grep -qv '^0$' && {
		export_csv growth "SELECT size, pending, finished, impl, count(*) AS claims,
				percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us) AS p50_us,
				percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us) AS p99_us,
				round(avg(latency_us)) AS mean_us
			FROM latency_log GROUP BY 1, 2, 3, 4 ORDER BY finished, pending, impl"
	}
	r "SELECT count(*) FROM reap" | grep -qv '^0$' &&
		export_csv reap "SELECT how, expired, reaped, batches, round(seconds::numeric, 2) AS seconds,
			round((reaped / seconds)::numeric) AS jobs_per_s FROM reap"
	r "SELECT count(*) FROM bloat" | grep -qv '^0$' && export_csv bloat "SELECT * FROM bloat"
	r "SELECT count(*) FROM churn" | grep -qv '^0$' && export_csv churn "SELECT * FROM churn ORDER BY t"
	# Machine, versions and every setting that differs from the default.
	{
		echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
		echo "machine: $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)), $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo) RAM"
		echo "kernel: $(uname -r)"
		echo "server: $(q 'SELECT version()')"
		echo "pgbench: $(as_pguser pgbench --version)"
		echo "jobqueue: $(q "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'") (commit $(git -C "$JQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
			[ -n "$(git -C "$JQ_ROOT" status --porcelain -- src sql jobqueue.control 2>/dev/null)" ] &&
				echo ", with uncommitted changes in src/ or sql/"))"
		echo "background worker: $(have_worker && echo running || echo absent or off)"
		echo "load average (1, 5, 15 min) at the start: $BENCH_LOAD0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo "wall time of the parts: ${PART_TIMES%, }"
		echo "parameters: BENCH_SECONDS=$BENCH_SECONDS BENCH_ROUNDS=$BENCH_ROUNDS BENCH_CLIENTS='$BENCH_CLIENTS'" \
			"BENCH_GROWTH_SIZES='$BENCH_GROWTH_SIZES' BENCH_GROWTH_FINISHED=$BENCH_GROWTH_FINISHED" \
			"BENCH_LAT_CLAIMS=$BENCH_LAT_CLAIMS BENCH_REAP_SIZES='$BENCH_REAP_SIZES'" \
			"BENCH_FLOW_TOTAL=$BENCH_FLOW_TOTAL BENCH_CHURN_SECONDS=$BENCH_CHURN_SECONDS" \
			"BENCH_CHURN_RATE=$BENCH_CHURN_RATE"
		echo
		echo "settings that differ from the defaults:"
		q "SELECT name || ' = ' || setting || coalesce(' ' || unit, '') FROM pg_settings
			WHERE source NOT IN ('default', 'override') ORDER BY name" | sed 's/^/  /'
	} >"$RES/environment.txt"
	cat "$RES/environment.txt"
	for f in "$RES"/*.csv; do
		[ -f "$f" ] || continue
		log "$(basename "$f")"
		head -n 40 "$f" | column -s, -t
	done
	plot_results
	summary_md >"$RES/summary.md"
	log "summary: $RES/summary.md"
}

# A markdown table: md_table "col | col | ..." "query" (the query's columns
# in that order; psql separates them with |).
md_table() {
	local header=$1 query=$2 rows
	rows=$(r "$query") || return 0
	[ -n "$rows" ] || return 0
	echo "| $header |"
	echo "|$(sed 's/[^|]*/---/g' <<<"$header")|"
	sed 's/|/ | /g; s/^/| /; s/$/ |/' <<<"$rows"
	echo
}

# Every result as markdown tables, for bench/README.md.
summary_md() {
	echo "## claim + complete, jobs/s (median of $BENCH_ROUNDS runs of ${BENCH_SECONDS}s)"
	echo
	md_table "synchronous_commit | batch | clients | jobqueue | hand-written | ratio | WAL B/job jobqueue | WAL B/job hand | server CPU us/job jobqueue | server CPU us/job hand" \
		"SELECT e.sync_commit, e.batch, e.clients, e.jobs_per_s, h.jobs_per_s,
				to_char(e.jobs_per_s / h.jobs_per_s, 'FM0.00') ||
				CASE WHEN e.jobs_per_s / h.jobs_per_s < 0.95 THEN ' (< 0.95)' ELSE '' END,
				e.wal_bytes_per_job, h.wal_bytes_per_job, e.server_cpu_us_per_job, h.server_cpu_us_per_job
		   FROM throughput e JOIN throughput h ON h.impl = 'hand'
				AND (h.scenario, h.batch, h.clients, h.sync_commit) = (e.scenario, e.batch, e.clients, e.sync_commit)
		  WHERE e.impl = 'ext' AND e.scenario = 'claim' ORDER BY e.sync_commit DESC, e.batch, e.clients"
	echo "## batched vs single-job claim + complete (jobqueue), jobs/s"
	echo
	md_table "synchronous_commit | clients | batch | jobs/s | batch of 1, jobs/s | speedup" \
		"SELECT b.sync_commit, b.clients, b.batch, b.jobs_per_s, s.jobs_per_s,
				to_char(b.jobs_per_s / s.jobs_per_s, 'FM990.0') || 'x'
		   FROM throughput b JOIN throughput s ON s.scenario = b.scenario AND s.impl = b.impl
				AND s.clients = b.clients AND s.sync_commit = b.sync_commit AND s.batch = 1
		  WHERE b.scenario = 'claim' AND b.impl = 'ext' AND b.batch > 1 ORDER BY 1 DESC, 3, 2"
	echo "## enqueue, jobs/s"
	echo
	md_table "synchronous_commit | jobs per call | clients | jobqueue | hand-written | ratio | WAL B/job jobqueue | WAL B/job hand | server CPU us/job jobqueue | server CPU us/job hand" \
		"SELECT e.sync_commit, e.batch, e.clients, e.jobs_per_s, h.jobs_per_s,
				to_char(e.jobs_per_s / h.jobs_per_s, 'FM0.00'),
				e.wal_bytes_per_job, h.wal_bytes_per_job, e.server_cpu_us_per_job, h.server_cpu_us_per_job
		   FROM throughput e JOIN throughput h ON h.impl = 'hand'
				AND (h.scenario, h.batch, h.clients, h.sync_commit) = (e.scenario, e.batch, e.clients, e.sync_commit)
		  WHERE e.impl = 'ext' AND e.scenario = 'enqueue' ORDER BY e.sync_commit DESC, e.batch, e.clients"
	echo "jq_enqueue on a queue with notify on:"
	echo
	md_table "synchronous_commit | clients | jobs/s | WAL B/job | server CPU us/job" \
		"SELECT sync_commit, clients, jobs_per_s, wal_bytes_per_job, server_cpu_us_per_job
		   FROM throughput WHERE scenario = 'enqueue_notify'"
	echo "## the fixed cost of one call (a complete that matches no job, 1 client)"
	echo
	md_table "variant | calls/s | us per call" \
		"SELECT variant, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s)::numeric),
				round((1e6 / percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s))::numeric, 1)
		   FROM call_cost GROUP BY 1 ORDER BY 2 DESC" 2>/dev/null
	echo "## double-claim experiment: 8 clients x 1,250 claims on 10,000 jobs"
	echo
	md_table "claim | distinct jobs succeeded | still pending | highest attempt_count | jobs claimed more than once | seconds" \
		"SELECT CASE impl WHEN 'naive' THEN 'naive UPDATE ... WHERE id = (SELECT ... LIMIT 1)'
					WHEN 'ext' THEN 'jq_claim + jq_complete' ELSE 'hand-written SKIP LOCKED' END,
				distinct_succeeded, still_pending, max_attempts, jobs_claimed_twice_or_more,
				round(seconds::numeric, 1) FROM naive"
	echo "## claim latency against backlog (1 client, claim of 1 job, $BENCH_ROUNDS x $BENCH_LAT_CLAIMS claims each)"
	echo
	md_table "backlog | claim | p50 us | p99 us | mean us | p50 / p50 at the smallest backlog" \
		"SELECT l.size, CASE l.impl WHEN 'ext' THEN 'jq_claim' ELSE 'hand-written' END,
				percentile_disc(0.5) WITHIN GROUP (ORDER BY l.latency_us),
				percentile_disc(0.99) WITHIN GROUP (ORDER BY l.latency_us),
				round(avg(l.latency_us)),
				to_char(percentile_disc(0.5) WITHIN GROUP (ORDER BY l.latency_us)::numeric /
					(SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY b.latency_us)
					   FROM latency_log b WHERE b.impl = l.impl AND b.finished = 0
						 AND b.pending = (SELECT min(pending) FROM latency_log)), 'FM990.00')
		   FROM latency_log l GROUP BY l.size, l.impl, l.pending, l.finished
		  ORDER BY l.finished, l.pending, l.impl"
	echo "## reaper: expired leases back to pending"
	echo
	md_table "how | expired leases | reaped | batches | seconds | leases/s" \
		"SELECT how, expired, reaped, coalesce(batches::text, ''), round(seconds::numeric, 1),
				round((reaped / seconds)::numeric) FROM reap"
	echo "## table size after jobs flowed through (enqueue_many + claim + complete_many of 100, 4 clients)"
	echo
	md_table "purging | jobs flowed | when | heap | indexes | total | rows in table | n_dead_tup" \
		"SELECT purging, jobs_flowed, phase, pg_size_pretty(table_bytes), pg_size_pretty(index_bytes),
				pg_size_pretty(total_bytes), rows_in_table, n_dead_tup FROM bloat"
	echo "## sustained churn"
	echo
	[ -f "$RES/churn_settings.txt" ] && { cat "$RES/churn_settings.txt"; echo; }
	md_table "samples | mean jobs/s | min jobs/s | max jobs/s | mean latency ms | max lag ms | total size first / min / max / last | max n_dead_tup" \
		"SELECT count(*), round(avg(tps)), round(min(tps)), round(max(tps)), round(avg(lat_ms)::numeric, 1),
				round(max(lag_ms)::numeric, 1),
				pg_size_pretty((array_agg(total_bytes ORDER BY t))[1]) || ' / ' ||
				pg_size_pretty(min(total_bytes)) || ' / ' || pg_size_pretty(max(total_bytes)) || ' / ' ||
				pg_size_pretty((array_agg(total_bytes ORDER BY t DESC))[1]),
				max(n_dead_tup)
		   FROM churn HAVING count(*) > 0"
}

# Data files for gnuplot (one per line in a plot) and the plots themselves.
plot_results() {
	log "plots"
	local d=$WORK/plot sync n impl
	rm -rf "$d"
	mkdir -p "$d"
	chown "$JQ_PGUSER" "$d"
	for sync in off on; do
		for n in 1 10 100; do
			for impl in ext hand; do
				r "SELECT clients, jobs_per_s FROM throughput WHERE scenario = 'claim'
					AND batch = $n AND sync_commit = '$sync' AND impl = '$impl' ORDER BY clients" \
					| tr '|' ' ' >"$d/claim_${sync}_${n}_${impl}.dat"
			done
			r "SELECT e.clients, e.jobs_per_s / h.jobs_per_s FROM throughput e JOIN throughput h
				ON (h.scenario, h.batch, h.clients, h.sync_commit) = (e.scenario, e.batch, e.clients, e.sync_commit)
				WHERE e.impl = 'ext' AND h.impl = 'hand' AND e.scenario = 'claim'
				AND e.batch = $n AND e.sync_commit = '$sync' ORDER BY e.clients" \
				| tr '|' ' ' >"$d/ratio_${sync}_${n}.dat"
		done
	done
	for impl in ext hand; do
		r "SELECT pending, percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us),
				percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)
			 FROM latency_log WHERE impl = '$impl' AND finished = 0 GROUP BY pending ORDER BY pending" \
			| tr '|' ' ' >"$d/growth_${impl}.dat"
		r "SELECT pending, percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us),
				percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)
			 FROM latency_log WHERE impl = '$impl' AND finished > 0 GROUP BY pending ORDER BY pending" \
			| tr '|' ' ' >"$d/growth_finished_${impl}.dat"
	done
	r "SELECT t, tps, lat_ms, lag_ms, total_bytes / 1048576.0, table_bytes / 1048576.0,
			index_bytes / 1048576.0, n_dead_tup, n_live_tup, pending + running
		 FROM churn ORDER BY t" | tr '|' ' ' >"$d/churn.dat"
	gnuplot -e "dat='$d'; out='$RES'; finished='$(awk -v n="$BENCH_GROWTH_FINISHED" \
		'BEGIN { print (n >= 1e6 ? n / 1e6 "M" : n / 1e3 "k") }')'" "$BENCH_DIR/plots.gp"
	ls "$RES"/*.png 2>/dev/null || true
}

# ---------------------------------------------------------------------------

# On exit: stop the helpers and, unless BENCH_KEEP=1, the cluster.
cleanup() {
	[ -z "$PURGER_PID" ] || kill "$PURGER_PID" 2>/dev/null || true
	[ -z "${LOAD_PID:-}" ] || kill "$LOAD_PID" 2>/dev/null || true
	[ "${BENCH_KEEP:-0}" = 1 ] || stop_cluster
}

main() {
	jq_install_packages gnuplot-nox
	if [ "$BENCH_INSTALL" = 1 ]; then
		local dir
		dir=$(jq_workdir bench)
		jq_build_install "$dir"
		rm -rf "$dir"
	fi
	LOAD_PID=
	trap cleanup EXIT
	start_cluster
	# The machine's load through the run: other work on it shows up here.
	(echo "seconds,load1,part"; while :; do
		echo "$(($(date +%s) - BENCH_T0)),$(cut -d' ' -f1 /proc/loadavg),$(cat "$WORK/part" 2>/dev/null)"
		sleep 10
	done) >"$RES/loadavg.csv" 2>/dev/null &
	LOAD_PID=$!
	log "server: $(q 'SELECT version()')"
	have_worker && log "background worker: on" || log "background worker: absent or off"
	local part t
	PART_TIMES=
	for part in throughput diag naive growth reap bloat churn; do
		case " $BENCH_ONLY " in
		*" $part "*)
			t=$(date +%s)
			echo "$part" >"$WORK/part"
			"part_$part"
			PART_TIMES+="$part $(($(date +%s) - t))s, "
			;;
		esac
	done
	kill "$LOAD_PID" 2>/dev/null || true
	export_results
}

main "$@"
