# Shared by the parts of the jobqueue benchmark (bench/<part>.sh) and
# bench/run.sh, which runs them all: settings, the throwaway cluster, the
# psql and pgbench helpers, and the results.  Sourced, not run.
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/common.sh"
BENCH_LIB=1

BENCH_DIR=$JQ_ROOT/bench
WORK=$BENCH_DIR/work
# The committed results are those of full runs: a quick run (BENCH_QUICK=1)
# writes to bench/work-quick/ (not committed) unless BENCH_RESULTS says
# otherwise.
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	RES=${BENCH_RESULTS:-$BENCH_DIR/work-quick}
else
	RES=${BENCH_RESULTS:-$BENCH_DIR/results}
fi
PORT=${BENCH_PORT:-55432}
PAYLOAD='{"task": "send_email", "user_id": 12345, "template": "welcome"}'

# Sizes and durations; BENCH_QUICK=1 shrinks everything for a smoke run.
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_SECONDS:=2}" "${BENCH_ROUNDS:=1}" "${BENCH_CLIENTS:=1 4}"
	: "${BENCH_GROWTH_SIZES:=10000 100000}" "${BENCH_GROWTH_FINISHED:=100000}"
	: "${BENCH_LAT_CLAIMS:=200}" "${BENCH_REAP_SIZES:=10000 50000}"
	: "${BENCH_FLOW_FIRST:=20000}" "${BENCH_FLOW_TOTAL:=100000}"
	: "${BENCH_CHURN_SECONDS:=20}" "${BENCH_SAMPLE:=2}" "${BENCH_BLOAT_SETTLE:=5}"
	: "${BENCH_REAP_WAIT:=30}" "${BENCH_RT_CLIENTS:=1}" "${BENCH_RT_PRELOAD_1:=20000}" "${BENCH_RT_PRELOAD_100:=100000}"
fi
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
BENCH_REAP_WAIT=${BENCH_REAP_WAIT:-90}	# longest wait for the background worker to reap
BENCH_FLOW_FIRST=${BENCH_FLOW_FIRST:-100000}
BENCH_FLOW_TOTAL=${BENCH_FLOW_TOTAL:-1000000}
BENCH_BLOAT_SETTLE=${BENCH_BLOAT_SETTLE:-15}	# seconds before the last size snapshot
# 300 s: in 600 s runs the size was flat from the first minute on
BENCH_CHURN_SECONDS=${BENCH_CHURN_SECONDS:-300}
BENCH_CHURN_RATE=${BENCH_CHURN_RATE:-auto}	# jobs/s; auto: half the measured maximum
BENCH_CHURN_CLIENTS=${BENCH_CHURN_CLIENTS:-4}
BENCH_SAMPLE=${BENCH_SAMPLE:-5}			# seconds between churn samples
BENCH_INSTALL=${BENCH_INSTALL:-1}		# 0: use the installed extension as is
# The churn run is shortened so that the whole run ends within this many
# minutes (it runs last); 0: no limit.
BENCH_BUDGET_MIN=${BENCH_BUDGET_MIN:-65}
BENCH_T0=$(date +%s)
BENCH_LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

CLK_TCK=$(getconf CLK_TCK)

# ---------------------------------------------------------------------------
# Cluster
# ---------------------------------------------------------------------------

# psql on the cluster, as its owner.
bench_psql() { as_pguser psql -X -q -h "$JQ_PGHOST" -p "$PORT" "$@"; }
# psql on the benchmark database, unaligned, tuples only.
q() { qm "$1"; }
# Several statements in one session, each in its own transaction.
qm() {
	local args=() stmt
	for stmt in "$@"; do args+=(-c "$stmt"); done
	bench_psql -At -v ON_ERROR_STOP=1 -d "${DB:-bench}" "${args[@]}"
}
# The same against the database that collects the results.
r() { DB=benchres q "$1"; }
# Rows from standard input into a table of the results: r_copy "table
# [(columns)]" "copy options".
r_copy() { bench_psql -d benchres -c "\\copy $1 FROM STDIN WITH ($2)"; }

# pgbench as the cluster owner, in the scratch directory (transaction logs).
pgb() {
	local sync=$1
	shift
	(cd "$WORK/tmp" && as_pguser env PGHOST="$JQ_PGHOST" PGPORT="$PORT" PGDATABASE=bench \
		PGOPTIONS="-c synchronous_commit=$sync" pgbench -n -M prepared "$@" 2>&1)
}
# pgb, and stop the benchmark unless its output matches $1:
# pgb_checked pattern sync pgbench-options...
pgb_checked() {
	local pattern=$1 out
	shift
	out=$(pgb "$@")
	grep -q -E "$pattern" <<<"$out" || { echo "$out" >&2; exit 1; }
	echo "$out"
}
# The transactions per second a pgbench run reports.
pgb_tps() { sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$1"; }

start_cluster() {
	jq_stop_leftover "$WORK/data"
	rm -rf "$WORK"
	mkdir -p "$WORK/tmp" "$RES"
	# Results of an earlier run of the same parts would mix with this
	# one's; the files of the other parts (and of the scripts that are not
	# parts, such as regression.txt) stay.
	local part f
	for part in ${BENCH_RAN:-$BENCH_PARTS}; do
		for f in ${BENCH_PART_FILES[$part]:-}; do
			rm -f "$RES/$f"
		done
	done
	chown -R "$JQ_PGUSER" "$WORK"
	log "creating a throwaway cluster in $WORK/data"
	jq_cluster_init "$WORK" "$PORT" -U postgres --locale=C.UTF-8
	# Tuned for a dedicated machine; sized from its memory.
	local mem_mb sb_mb
	mem_mb=$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)
	sb_mb=$((mem_mb / 4 > 8192 ? 8192 : mem_mb / 4))
	jq_cluster_conf <<EOF

# ---- jobqueue benchmark settings ----
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
	jq_cluster_start
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
			  FROM throughput_runs GROUP BY 1, 2, 3, 4, 5;
		-- jobqueue beside the hand-written SQL, per configuration
		CREATE VIEW throughput_vs_hand AS
			SELECT e.scenario, e.batch, e.clients, e.sync_commit,
				   e.jobs_per_s AS ext_jobs_per_s, h.jobs_per_s AS hand_jobs_per_s,
				   e.jobs_per_s / h.jobs_per_s AS ratio,
				   e.wal_bytes_per_job AS ext_wal_bytes_per_job, h.wal_bytes_per_job AS hand_wal_bytes_per_job,
				   e.server_cpu_us_per_job AS ext_cpu_us_per_job, h.server_cpu_us_per_job AS hand_cpu_us_per_job,
				   e.runs
			  FROM throughput e LEFT JOIN throughput h ON h.impl = 'hand'
				   AND (h.scenario, h.batch, h.clients, h.sync_commit) = (e.scenario, e.batch, e.clients, e.sync_commit)
			 WHERE e.impl = 'ext';
		-- batched vs single-job claim + complete of jobqueue, per client count
		CREATE VIEW batch_speedup AS
			SELECT b.sync_commit, b.clients, b.batch, b.jobs_per_s, s.jobs_per_s AS single_jobs_per_s,
				   b.jobs_per_s / s.jobs_per_s AS speedup
			  FROM throughput b JOIN throughput s ON s.scenario = b.scenario AND s.impl = b.impl
				   AND s.clients = b.clients AND s.sync_commit = b.sync_commit AND s.batch = 1
			 WHERE b.scenario = 'claim' AND b.impl = 'ext' AND b.batch > 1" >/dev/null
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


# ---------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------

# Does results table $1 exist and have rows?  (diag and call_cost exist
# only once their part ran.)
has_rows() {
	[ "$(r "SELECT to_regclass('$1') IS NOT NULL")" = t ] &&
		[ "$(r "SELECT count(*) > 0 FROM $1")" = t ]
}

export_results() {
	log "writing results to $RES"
	local f part
	export_csv() {
		bench_psql -d benchres -c "\\copy ($2) TO STDOUT WITH (FORMAT csv, HEADER)" >"$RES/$1.csv"
	}
	has_rows throughput_runs && {
		export_csv throughput_runs "SELECT scenario, batch, clients, sync_commit, impl, round, jobs,
			round(seconds::numeric, 3) AS seconds, round(jobs_per_s::numeric) AS jobs_per_s,
			wal_bytes, round(wal_bytes / jobs, 1) AS wal_bytes_per_job,
			server_cpu_s, round((server_cpu_s * 1e6 / jobs)::numeric, 1) AS server_cpu_us_per_job,
			preload, pending_left FROM throughput_runs ORDER BY 1, 2, 4, 3, 6, 5"
		export_csv throughput "SELECT scenario, batch, clients, sync_commit, ext_jobs_per_s, hand_jobs_per_s,
				round(ratio, 3) AS ratio, ext_wal_bytes_per_job, hand_wal_bytes_per_job,
				ext_cpu_us_per_job, hand_cpu_us_per_job, runs
			FROM throughput_vs_hand ORDER BY scenario, sync_commit DESC, batch, clients"
		export_csv batch_speedup "SELECT sync_commit, clients, batch, jobs_per_s, single_jobs_per_s,
				round(speedup, 2) AS speedup
			FROM batch_speedup ORDER BY 1 DESC, 3, 2"
	}
	has_rows naive && export_csv naive "SELECT * FROM naive"
	has_rows call_cost &&
		export_csv call_cost "SELECT variant, count(*) AS runs,
			round(percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s)::numeric) AS calls_per_s,
			round((1e6 / percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s))::numeric, 1) AS us_per_call
			FROM call_cost GROUP BY 1 ORDER BY 3"
	has_rows diag &&
		export_csv diag_statements "SELECT impl, batch, toplevel, calls, plans, round(plan_ms::numeric, 1) AS plan_ms,
			round(total_ms::numeric, 1) AS exec_ms,
			round(us_per_call::numeric, 1) AS us_per_call, round(us_per_job::numeric, 1) AS us_per_job,
			query FROM diag"
	has_rows latency_log && {
		export_csv growth "SELECT size, pending, finished, impl, count(*) AS claims,
				percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us) AS p50_us,
				percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us) AS p99_us,
				round(avg(latency_us)) AS mean_us
			FROM latency_log GROUP BY 1, 2, 3, 4 ORDER BY finished, pending, impl"
	}
	has_rows reap &&
		export_csv reap "SELECT how, expired, reaped, batches, round(seconds::numeric, 2) AS seconds,
			round((reaped / seconds)::numeric) AS jobs_per_s FROM reap"
	has_rows bloat && export_csv bloat "SELECT * FROM bloat"
	has_rows churn && export_csv churn "SELECT * FROM churn ORDER BY t"
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
		echo "parameters: BENCH_QUICK=${BENCH_QUICK:-0} BENCH_SECONDS=$BENCH_SECONDS BENCH_ROUNDS=$BENCH_ROUNDS BENCH_CLIENTS='$BENCH_CLIENTS'" \
			"BENCH_GROWTH_SIZES='$BENCH_GROWTH_SIZES' BENCH_GROWTH_FINISHED=$BENCH_GROWTH_FINISHED" \
			"BENCH_LAT_CLAIMS=$BENCH_LAT_CLAIMS BENCH_REAP_SIZES='$BENCH_REAP_SIZES'" \
			"BENCH_FLOW_TOTAL=$BENCH_FLOW_TOTAL BENCH_CHURN_SECONDS=$BENCH_CHURN_SECONDS" \
			"BENCH_CHURN_RATE=$BENCH_CHURN_RATE"
		echo
		echo "settings that differ from the defaults:"
		q "SELECT name || ' = ' || setting || coalesce(' ' || unit, '') FROM pg_settings
			WHERE source NOT IN ('default', 'override') ORDER BY name" | sed 's/^/  /'
	} >"$(bench_run_file environment.txt)"
	cat "$(bench_run_file environment.txt)"
	for part in $BENCH_RAN; do
		for f in ${BENCH_PART_FILES[$part]:-}; do
			[[ $f == *.csv && -f $RES/$f ]] || continue
			log "$f"
			head -n 40 "$RES/$f" | column -s, -t
		done
	done
	plot_results
	summary_md >"$(bench_run_file summary.md)"
	log "summary: $(bench_run_file summary.md)"
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

# The rows of the jobqueue vs hand-written tables of summary_md for
# scenario $1, the ratio shown as $2.
vs_hand_rows() {
	echo "SELECT sync_commit, batch, clients, ext_jobs_per_s, hand_jobs_per_s, $2,
			ext_wal_bytes_per_job, hand_wal_bytes_per_job, ext_cpu_us_per_job, hand_cpu_us_per_job
	   FROM throughput_vs_hand WHERE scenario = '$1' AND hand_jobs_per_s IS NOT NULL
	  ORDER BY sync_commit DESC, batch, clients"
}

# Every result as markdown tables, for bench/README.md.
summary_md() {
	echo "## claim + complete, jobs/s (median of $BENCH_ROUNDS runs of ${BENCH_SECONDS}s)"
	echo
	md_table "synchronous_commit | batch | clients | jobqueue | hand-written | ratio | WAL B/job jobqueue | WAL B/job hand | server CPU us/job jobqueue | server CPU us/job hand" \
		"$(vs_hand_rows claim "to_char(ratio, 'FM0.00') || CASE WHEN ratio < 0.95 THEN ' (< 0.95)' ELSE '' END")"
	echo "## batched vs single-job claim + complete (jobqueue), jobs/s"
	echo
	md_table "synchronous_commit | clients | batch | jobs/s | batch of 1, jobs/s | speedup" \
		"SELECT sync_commit, clients, batch, jobs_per_s, single_jobs_per_s, to_char(speedup, 'FM990.0') || 'x'
		   FROM batch_speedup ORDER BY 1 DESC, 3, 2"
	echo "## enqueue, jobs/s"
	echo
	md_table "synchronous_commit | jobs per call | clients | jobqueue | hand-written | ratio | WAL B/job jobqueue | WAL B/job hand | server CPU us/job jobqueue | server CPU us/job hand" \
		"$(vs_hand_rows enqueue "to_char(ratio, 'FM0.00')")"
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
	if [[ " $BENCH_RAN " == *" peers "* && -s $RES/peers.txt ]]; then
		echo "## against other queues (peers.txt)"
		echo
		echo '```'
		cat "$RES/peers.txt"
		echo '```'
	fi
	if [[ " $BENCH_RAN " == *" wal "* && -s $RES/wal.txt ]]; then
		echo
		echo "## table work per job against the 1.2 baseline (wal.txt)"
		echo
		echo '```'
		cat "$RES/wal.txt"
		echo '```'
	fi
	if [[ " $BENCH_RAN " == *" clients "* && -s $RES/clients.txt ]]; then
		echo
		echo "## client libraries against the pgbench ceiling (clients.txt)"
		echo
		cat "$RES/clients.txt"
	fi
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
			r "SELECT clients, ratio FROM throughput_vs_hand WHERE scenario = 'claim'
				AND hand_jobs_per_s IS NOT NULL AND batch = $n AND sync_commit = '$sync' ORDER BY clients" \
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
	case " $BENCH_RAN " in
	*" peers "*) peers_plot_data >"$d/peers.dat" ;;
	esac
	gnuplot -e "dat='$d'; out='$RES'; finished='$(awk -v n="$BENCH_GROWTH_FINISHED" \
		'BEGIN { print (n >= 1e6 ? n / 1e6 "M" : n / 1e3 "k") }')'" "$BENCH_DIR/plots.gp"
	ls "$RES"/*.png 2>/dev/null || true
}

# ---------------------------------------------------------------------------

# On exit: stop the helpers and, unless BENCH_KEEP=1, the cluster.
cleanup() {
	[ -z "$PURGER_PID" ] || kill "$PURGER_PID" 2>/dev/null || true
	[ -z "${LOAD_PID:-}" ] || kill "$LOAD_PID" 2>/dev/null || true
	[ "${BENCH_KEEP:-0}" = 1 ] || jq_cluster_stop
}

# Install, start the cluster, run the parts named in $1 (in the order of
# BENCH_PARTS), write the results, stop.
BENCH_PARTS="throughput roundtrip diag naive growth reap bloat peers wal clients churn"
# The parts that are scripts with clusters of their own (bench/wal.sh: the
# 1.2 baseline's and this tree's; bench/clients.sh: one for the client
# libraries): run.sh runs them as they run alone, in a child process, with
# the settings of the run (part_external); the cluster of the other parts
# stays idle meanwhile.
BENCH_EXTERNAL_PARTS="wal clients"
# The files in $RES each part writes; a run replaces those of its parts
# only.
declare -A BENCH_PART_FILES=(
	[throughput]="throughput_runs.csv throughput.csv batch_speedup.csv throughput_claim.png ratio.png"
	[diag]="diag_statements.csv call_cost.csv explain_complete.txt"
	[naive]="naive.csv"
	[growth]="growth.csv growth_latency.png explain_growth.txt"
	[reap]="reap.csv"
	[bloat]="bloat.csv"
	[roundtrip]="roundtrip.csv roundtrip.txt"
	[churn]="churn.csv churn.png churn_settings.txt"
	[wal]="wal.txt wal.csv wal_records.txt wal_history.csv wal_rates.csv wal_size.csv wal_explain.txt"
	[clients]="clients.csv clients.txt"
	[peers]="$([ "${BENCH_PEERS_SEARCH:-0}" = 1 ] && echo "peers_search.csv peers_search.txt" ||
		echo "peers.csv peers.txt peers_wal.csv peers.png peers_statements.txt peers_perf.txt")"
)
# The files that describe a whole run (environment.txt, loadavg.csv,
# summary.md): a run of every part writes them under these names, a run of
# some parts with the parts' names added (environment.peers.txt), so that
# running one part does not replace the record of the full run.
bench_run_file() {
	local base=${1%.*} ext=${1##*.}
	if [ "$BENCH_RAN" = "$BENCH_PARTS" ]; then
		echo "$RES/$1"
	else
		echo "$RES/$base.$(tr ' ' '-' <<<"$BENCH_RAN").$ext"
	fi
}

# Part wal or clients: its script, as a child process, writing to $RES, the
# extension installed already (BENCH_INSTALL=0); with BENCH_PORT set, ports
# next to it (wal: BENCH_PORT+1.. and +11.., clients: +21..), else each
# script's own defaults.
part_external() {
	local part=$1 env=(BENCH_RESULTS="$RES" BENCH_INSTALL=0 PG_CONFIG="$PG_CONFIG")
	case $part in
	wal)
		# the old side: PG_CONFIG_OLD as it is (BENCH_INSTALL_OLD=1 builds
		# the baseline into it), or a copy of PG_CONFIG's installation
		# with the baseline built into it (bench/regression.sh,
		# rg_old_installation)
		env+=(BENCH_INSTALL_OLD="${BENCH_INSTALL_OLD:-0}")
		[ -z "${BENCH_PORT:-}" ] || env+=(BENCH_WAL_PORT_OLD=$((PORT + 1)) BENCH_WAL_PORT_OLD_MAX=$((PORT + 9))
			BENCH_WAL_PORT_NEW=$((PORT + 11)) BENCH_WAL_PORT_NEW_MAX=$((PORT + 19)))
		env "${env[@]}" bash "$BENCH_DIR/wal.sh"
		;;
	clients)
		if [ -n "${BENCH_PORT:-}" ]; then
			env+=(BENCH_PORT="$(jq_free_port $((PORT + 21)) $((PORT + 29)))")
			env "${env[@]}" bash "$BENCH_DIR/clients.sh"
		else
			env -u BENCH_PORT "${env[@]}" bash "$BENCH_DIR/clients.sh"
		fi
		;;
	esac
}

# Before anything runs: can the parts that need more than this tree run?
bench_preflight() {
	local ref=${BENCH_OLD_REF:-df97d69}
	case " $BENCH_RAN " in
	*" wal "*)
		if [ -n "${PG_CONFIG_OLD:-}" ]; then
			[ -x "$PG_CONFIG_OLD" ] || { echo "PG_CONFIG_OLD=$PG_CONFIG_OLD: not an executable pg_config" >&2; exit 1; }
			[ "${BENCH_INSTALL_OLD:-0}" = 1 ] || [ -f "$("$PG_CONFIG_OLD" --sharedir)/extension/jobqueue.control" ] || {
				echo "PG_CONFIG_OLD=$PG_CONFIG_OLD: no jobqueue installed there; part wal compares with $ref built" \
					"into it (BENCH_INSTALL_OLD=1 builds it), or leave PG_CONFIG_OLD unset to have a copy of" \
					"PG_CONFIG's installation made for it" >&2
				exit 1
			}
		elif ! git -C "$JQ_ROOT" rev-parse --verify -q "$ref^{commit}" >/dev/null; then
			echo "part wal: $ref (BENCH_OLD_REF) is not in this repository, and PG_CONFIG_OLD, an installation" \
				"with it built, is not given" >&2
			exit 1
		fi
		;;
	esac
}

bench_main() {
	local only=" $1 " part t
	# the parts that run, in their order
	BENCH_RAN=
	for part in $BENCH_PARTS; do
		case $only in *" $part "*) BENCH_RAN+="$part " ;; esac
	done
	BENCH_RAN=${BENCH_RAN% }
	for part in $1; do
		case " $BENCH_PARTS " in
		*" $part "*) ;;
		*) echo "no such part: $part (parts: $BENCH_PARTS)" >&2; exit 1 ;;
		esac
	done
	bench_preflight
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
	done) >"$(bench_run_file loadavg.csv)" 2>/dev/null &
	LOAD_PID=$!
	log "server: $(q 'SELECT version()')"
	have_worker && log "background worker: on" || log "background worker: absent or off"
	PART_TIMES=
	for part in $BENCH_PARTS; do
		case $only in
		*" $part "*)
			t=$(date +%s)
			echo "$part" >"$WORK/part"
			case " $BENCH_EXTERNAL_PARTS " in
			*" $part "*) part_external "$part" ;;
			*) "part_$part" ;;
			esac
			PART_TIMES+="$part $(($(date +%s) - t))s, "
			;;
		esac
	done
	kill "$LOAD_PID" 2>/dev/null || true
	export_results
	# the targets of issues 14 and 15 from the results in $RES
	bash "$BENCH_DIR/targets.sh"
}

# The end of bench/<part>.sh: run that part alone when the file is run,
# not sourced: bench_part_main part "${BASH_SOURCE[0]}".
bench_part_main() {
	if [ "$2" = "$0" ]; then
		bench_main "$1"
	fi
}

