#!/usr/bin/env bash
# jobqueue benchmark, part "peers": jobqueue against the queues people would
# use instead, each draining the same backlog of no-op jobs on the same
# cluster (bench/README.md, "Against other queues").
# Runs alone (sudo bench/peers.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh (the cluster of lib.sh, its settings),
# in a database of its own, "peers", with synchronous_commit = off.
#
# Contenders, each draining PEERS_JOBS (100,000) pending jobs enqueued in
# bulk before the clock starts (with each system's own batch API):
#   ext       jobqueue: 8 pgbench clients (-M prepared), jq_claim of 100 then
#             jq_complete_many (bench/pgbench/peers_ext_drain.sql)
#   cac       jobqueue: 8 clients, jq_complete_and_claim of 100 per call
#             (peers_cac_drain.sql), when the installed build has it
#   ext0, cac0  the same on a queue with retention 0: a job is deleted when
#             it succeeds (no history kept, as graphile-worker does)
#   hand      hand-written SQL on a minimal table (bench/peers/minimal.sql):
#             8 clients, one SKIP LOCKED claim of 100, one UPDATE completing
#             them by id (peers_hand_drain.sql)
#   pgboss    pg-boss 10.4.2, PEERS_PGBOSS (workers=4 batch=5000 poll=0.5)
#   graphile  graphile-worker 0.17.3, PEERS_GRAPHILE (concurrency=16
#             local=2000 delay=0: localQueue size, completeJobBatchDelay)
#   jqnode    jobqueue's Node.js client (clients/node), PEERS_JQNODE (workers=2
#             concurrency=8 batch=500: two Worker instances in one process)
#   jqnode0   the same on the queue with retention 0
# The drivers of the last three are bench/peers/drive.js (npm ci when
# bench/peers/node_modules is missing); they need Node.js 20 or later
# (pg-boss 10; checked first, Debian bookworm has 18) and the npm registry.  PEERS_ROUNDS rounds (3), the order
# of the contenders rotating from round to round; per contender the median,
# min and max jobs/s, server CPU per job and WAL per job of the drain.
#
# Then WAL bytes per job of enqueue + claim + complete, jobqueue against the
# minimal table, batched (100 per call) and one job per call, PEERS_WAL_JOBS
# jobs (20,000), autovacuum off on the two tables during these runs.
#
# BENCH_PEERS_SEARCH=1: instead, the settings search: each peer's grid on
# PEERS_SEARCH_JOBS (50,000) jobs, PEERS_SEARCH_ROUNDS runs each (3; the
# settings with batches of 100 of pg-boss once: a run stops after
# PEERS_SEARCH_LIMIT seconds, 30, and counts what was done), the medians
# and the best.
#
# Last, unless BENCH_PEERS_DIAG=0, where the server's time goes in the
# drains of jobqueue and of the minimal table: pg_stat_statements of one
# more drain each (nested statements tracked), and a perf profile of the
# server backends during another (PEERS_PERF_JOBS jobs, 3 x PEERS_JOBS),
# the top symbols.
#
# Results: $RES/peers.csv (every run), $RES/peers.txt (summary), peers.png,
# peers_wal.csv, peers_statements.txt, peers_perf.txt; the search: $RES/peers_search.csv and
# peers_search.txt.
# Quick mode (BENCH_QUICK=1): 10,000 jobs, one round, results in
# bench/work-quick/ (lib.sh) unless BENCH_RESULTS is set.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${PEERS_JOBS:=10000}" "${PEERS_ROUNDS:=1}" "${PEERS_WAL_JOBS:=5000}"
	: "${PEERS_SEARCH_JOBS:=5000}" "${PEERS_SEARCH_ROUNDS:=1}"
fi
PEERS_JOBS=${PEERS_JOBS:-100000}
PEERS_ROUNDS=${PEERS_ROUNDS:-3}
PEERS_CLIENTS=${PEERS_CLIENTS:-8}
PEERS_CONTENDERS=${PEERS_CONTENDERS:-ext cac ext0 cac0 hand pgboss graphile jqnode jqnode0}
PEERS_PGBOSS=${PEERS_PGBOSS:-workers=4 batch=5000 poll=0.5}
PEERS_GRAPHILE=${PEERS_GRAPHILE:-concurrency=16 local=2000 delay=0}
PEERS_JQNODE=${PEERS_JQNODE:-workers=2 concurrency=8 batch=500}
PEERS_WAL_JOBS=${PEERS_WAL_JOBS:-20000}
PEERS_SEARCH_JOBS=${PEERS_SEARCH_JOBS:-50000}
PEERS_SEARCH_LIMIT=${PEERS_SEARCH_LIMIT:-30}
PEERS_SEARCH_ROUNDS=${PEERS_SEARCH_ROUNDS:-3}
PEERS_PERF_JOBS=${PEERS_PERF_JOBS:-$((PEERS_JOBS * 3))}
PEERS_DIR=$BENCH_DIR/peers
# every run goes there; the search has files of its own
if [ "${BENCH_PEERS_SEARCH:-0}" = 1 ]; then
	PEERS_CSV=$RES/peers_search.csv
else
	PEERS_CSV=$RES/peers.csv
fi

# psql on the peers database
pq() { DB=peers q "$1"; }
pqm() { DB=peers qm "$@"; }

# The CPU seconds of this shell's children that have exited (pgbench,
# node: the drivers), into variable $1.  Not in a subshell: `times` there
# would count the subshell's children only.
client_cpu() {
	times >"$WORK/tmp/times"
	printf -v "$1" '%s' "$(tail -n 1 "$WORK/tmp/times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/)
		printf "%.2f\n", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')"
}
# pgbench on the peers database, as the cluster owner.
ppgb() {
	(cd "$WORK/tmp" && as_pguser env PGHOST="$JQ_PGHOST" PGPORT="$PORT" PGDATABASE=peers \
		pgbench -n -M prepared "$@" 2>&1)
}

# pg-boss 10 needs Node.js 20 or later (Debian bookworm's nodejs is 18):
# the minimum is the engines.node of bench/peers/package.json.  Stop with
# what to do when the Node.js on the PATH is older or missing.
peers_check_node() {
	local need have
	need=$(sed -n 's/^ *"node": *">= *\([0-9][0-9]*\).*/\1/p' "$PEERS_DIR/package.json")
	have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
	if [ "${have:-0}" -lt "${need:-20}" ]; then
		echo "bench/peers.sh needs Node.js ${need:-20} or later (pg-boss 10 requires it);" \
			"found: $(node --version 2>/dev/null || echo none)." >&2
		echo "Install Node.js ${need:-20}+ (Debian bookworm's nodejs package is 18), or leave" \
			"the part out: bench/run.sh with BENCH_ONLY=\"...\" naming the other parts." >&2
		exit 1
	fi
}

peers_setup() {
	log "peers: database peers (synchronous_commit = off), minimal table, pg-boss and graphile-worker schemas"
	DB=postgres qm "SET client_min_messages = warning" "DROP DATABASE IF EXISTS peers" >/dev/null
	DB=postgres q "CREATE DATABASE peers" >/dev/null
	DB=postgres q "ALTER DATABASE peers SET synchronous_commit = off" >/dev/null
	pqm "CREATE EXTENSION jobqueue" "SELECT jobqueue.jq_create_queue('peers')" >/dev/null
	# ext0, cac0: a queue that keeps no history (a job is deleted when it succeeds)
	pq "SELECT jobqueue.jq_create_queue('peers0', retention => '0')" >/dev/null
	bench_psql -v ON_ERROR_STOP=1 -d peers -c "SET client_min_messages = warning" -f - <"$PEERS_DIR/minimal.sql" >/dev/null
	peers_check_node
	if [ ! -d "$PEERS_DIR/node_modules" ]; then
		log "npm ci in $PEERS_DIR"
		(cd "$PEERS_DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	fi
	drive pgboss setup >/dev/null
	drive graphile setup >/dev/null
	PEERS_HAVE_CAC=$(pq "SELECT count(*) FROM pg_proc
		WHERE oid = to_regproc('jobqueue.jq_complete_and_claim')
		  AND proargtypes[0:4]::oid[] = ARRAY['text', 'bigint[]', 'bigint[]', 'int', 'text']::regtype[]::oid[]" 2>/dev/null || echo 0)
	PEERS_NOTES=
	if [ "$PEERS_HAVE_CAC" != 1 ]; then
		PEERS_NOTES+="cac skipped: jobqueue.jq_complete_and_claim(text, bigint[], bigint[], int, text, ...) is not in the installed build"$'\n'
	fi
	echo "contender,round,order,jobs,seconds,jobs_per_s,server_cpu_us_per_job,client_cpu_us_per_job,wal_bytes_per_job,load1,settings" \
		>"$PEERS_CSV"
}

# A driver of bench/peers/drive.js: drive system command [queue n options...]
# jobqueue's client finds its only dependency, pg, through NODE_PATH.
drive() {
	(cd "$PEERS_DIR" && env PGHOST="$JQ_PGHOST" PGPORT="$PORT" PGDATABASE=peers PGUSER=postgres \
		NODE_PATH="$PEERS_DIR/node_modules" JQ_CLIENT="$JQ_ROOT/clients/node" node drive.js "$@")
}

# Empty every contender's tables: the finished jobs of one round must not
# weigh on the next, nor on the others.
peers_empty() {
	# (pg-boss: its driver drops and creates the queue, and with it the
	# queue's partition of pgboss.job)
	pqm "TRUNCATE jobqueue.jobs, peers_hand.jobs, graphile_worker._private_jobs" >/dev/null
}

# Load $2 pending jobs for contender $1 with its own batch API.
peers_enqueue() {
	local who=$1 n=$2
	peers_empty
	case $who in
	ext | cac | ext0 | cac0)
		pq "DO \$\$ BEGIN FOR i IN 1..$n / 1000 LOOP
				PERFORM count(*) FROM jobqueue.jq_enqueue_many('$(peers_queue "$who")',
					array_fill('$PAYLOAD'::jsonb, ARRAY[1000]));
			END LOOP; END \$\$" >/dev/null ;;
	hand)
		pq "INSERT INTO peers_hand.jobs (queue_name, payload)
			SELECT 'peers', '$PAYLOAD' FROM generate_series(1, $n)" >/dev/null ;;
	pgboss | graphile) drive "$who" enqueue peers "$n" >/dev/null ;;
	jqnode | jqnode0) drive jqnode enqueue "$(peers_queue "$who")" "$n" >/dev/null ;;
	esac
	# the same state for everyone: statistics, no dead rows, a fresh checkpoint
	pqm "VACUUM ANALYZE" "CHECKPOINT" >/dev/null
}

# The queue of a jobqueue contender: ext0, cac0 and jqnode0 keep no history.
peers_queue() {
	case $1 in
	ext0 | cac0 | jqnode0) echo peers0 ;;
	*) echo peers ;;
	esac
}

# pgbench draining queue $1 with script $2 (8 clients); prints the seconds.
peers_pgbench() {
	local queue=$1 script=$2 t0 t1 out
	shift 2
	t0=$(date +%s.%N)
	out=$(ppgb -c "$PEERS_CLIENTS" -j "$PEERS_CLIENTS" -t 10000000 \
		-f "$BENCH_DIR/pgbench/$script" -D q="$queue" -D owner=peers-bench "$@") || true
	t1=$(date +%s.%N)
	# every client must have stopped at the empty queue (division by zero
	# in its \set), not at an SQL error
	if grep -q -E 'ERROR|FATAL' <<<"$out" || [ "$(grep -c 'aborted in command' <<<"$out")" != "$PEERS_CLIENTS" ]; then
		echo "$out" >&2
		echo "pgbench with $script did not drain the queue cleanly" >&2
		return 1
	fi
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f\n", b - a }'
}

# Are all $2 jobs of contender $1 done, each once?
peers_check() {
	local who=$1 n=$2 got
	case $who in
	ext | cac | jqnode) got=$(pq "SELECT count(*) FROM jobqueue.jobs
			WHERE queue_name = 'peers' AND status = 'succeeded' AND attempt_count = 1") ;;
	# deleted when they succeed: none may be left, and every completion counted
	ext0 | cac0 | jqnode0) got=$((n - $(pq "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'peers0'"))) ;;
	hand) got=$(pq "SELECT count(*) FROM peers_hand.jobs WHERE status = 'succeeded' AND attempt_count = 1") ;;
	pgboss) got=$(pq "SELECT count(*) FROM pgboss.job WHERE name = 'peers' AND state = 'completed' AND retry_count = 0") ;;
	# completed jobs are deleted
	graphile) got=$((n - $(pq "SELECT count(*) FROM graphile_worker._private_jobs"))) ;;
	esac
	[ "$got" = "$n" ] || { echo "$who: $got of $n jobs done once" >&2; return 1; }
}

# One drain: peers_drain contender round order n [options]; appends a line
# to $PEERS_CSV and prints it.
peers_drain() {
	local who=$1 round=$2 order=$3 n=$4 opts=${5:-} secs done=$4 json
	local lsn0 lsn1 cpu0 cpu1 ccpu0 ccpu1
	peers_enqueue "$who" "$n"
	lsn0=$(pq "SELECT pg_current_wal_insert_lsn()")
	cpu0=$(server_cpu)
	client_cpu ccpu0
	case $who in
	ext | ext0) secs=$(peers_pgbench "$(peers_queue "$who")" peers_ext_drain.sql) ;;
	cac | cac0) secs=$(peers_pgbench "$(peers_queue "$who")" peers_cac_drain.sql -D ids='{}' -D tokens='{}') ;;
	hand) secs=$(peers_pgbench peers peers_hand_drain.sql) ;;
	pgboss | graphile | jqnode | jqnode0)
		# shellcheck disable=SC2086
		json=$(drive "${who%0}" drain "$(peers_queue "$who")" "$n" $opts)
		secs=$(sed -n 's/.*"seconds":\([0-9.e-]*\).*/\1/p' <<<"$json")
		done=$(sed -n 's/.*"done":\([0-9]*\).*/\1/p' <<<"$json")
		;;
	esac
	client_cpu ccpu1
	sleep 0.3	# let the postmaster reap the exited backends (CPU time)
	cpu1=$(server_cpu)
	lsn1=$(pq "SELECT pg_current_wal_insert_lsn()")
	[ "$done" != "$n" ] || peers_check "$who" "$n"
	awk -v w="$who" -v r="$round" -v o="$order" -v n="$done" -v s="$secs" \
		-v c="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }')" \
		-v cc="$(awk -v a="$ccpu0" -v b="$ccpu1" 'BEGIN { print b - a }')" \
		-v wal="$(pq "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')")" \
		-v l="$(cut -d' ' -f1 /proc/loadavg)" -v opt="$opts" \
		'BEGIN { printf "%s,%s,%s,%d,%.3f,%.0f,%.1f,%.1f,%.0f,%s,%s\n", w, r, o, n, s, n / s,
			c * 1e6 / n, cc * 1e6 / n, wal / n, l, opt }' | tee -a "$PEERS_CSV" |
		awk -F, '{ printf "  %-8s round %s: %7s jobs/s (%s jobs in %s s), server %s / client %s us CPU per job, %s WAL B/job, load %s %s\n",
			$1, $2, $6, $4, $5, $7, $8, $9, $10, $11 }'
}

# The settings of a contender's driver.
peers_opts() {
	case $1 in
	pgboss) echo "$PEERS_PGBOSS" ;;
	graphile) echo "$PEERS_GRAPHILE" ;;
	jqnode | jqnode0) echo "$PEERS_JQNODE" ;;
	*) echo "clients=$PEERS_CLIENTS batch=100" ;;
	esac
}

# WAL bytes per job of enqueue + claim + complete: jobqueue and the minimal
# table, batched and one job per call.
peers_wal() {
	local impl mode n=$PEERS_WAL_JOBS lsn0 lsn1 lsn2 enq drain tbl
	log "peers: WAL per job, $n jobs, enqueue + claim + complete"
	echo "impl,mode,jobs,enqueue_wal_bytes_per_job,claim_complete_wal_bytes_per_job,total_wal_bytes_per_job" \
		>"$RES/peers_wal.csv"
	pqm "ALTER TABLE jobqueue.jobs SET (autovacuum_enabled = false)" \
		"ALTER TABLE peers_hand.jobs SET (autovacuum_enabled = false)" >/dev/null
	for mode in batched single; do
		for impl in ext hand; do
			peers_empty
			pqm "VACUUM ANALYZE" "CHECKPOINT" >/dev/null
			lsn0=$(pq "SELECT pg_current_wal_insert_lsn()")
			if [ $mode = batched ]; then
				enq=$([ $impl = ext ] && echo ext_enqueueN.sql || echo peers_hand_enqueueN.sql)
				ppgb -c 1 -t $((n / 100)) -f "$BENCH_DIR/pgbench/$enq" -D q=peers -D n=100 >/dev/null
			else
				enq=$([ $impl = ext ] && echo ext_enqueue1.sql || echo peers_hand_enqueue1.sql)
				ppgb -c "$PEERS_CLIENTS" -j "$PEERS_CLIENTS" -t $((n / PEERS_CLIENTS)) \
					-f "$BENCH_DIR/pgbench/$enq" -D q=peers >/dev/null
			fi
			lsn1=$(pq "SELECT pg_current_wal_insert_lsn()")
			if [ $mode = batched ]; then
				peers_pgbench peers "peers_${impl}_drain.sql" >/dev/null
			else
				peers_pgbench peers "peers_${impl}_one.sql" >/dev/null
			fi
			lsn2=$(pq "SELECT pg_current_wal_insert_lsn()")
			tbl=$([ $impl = ext ] && echo jobqueue.jobs || echo peers_hand.jobs)
			[ "$(pq "SELECT count(*) FROM $tbl WHERE status = 'succeeded' AND attempt_count = 1")" = "$n" ] ||
				{ echo "WAL run $impl $mode: not every job done once" >&2; exit 1; }
			pq "SELECT '$impl', '$mode', $n,
					round(pg_wal_lsn_diff('$lsn1', '$lsn0') / $n),
					round(pg_wal_lsn_diff('$lsn2', '$lsn1') / $n),
					round(pg_wal_lsn_diff('$lsn2', '$lsn0') / $n)" | tr '|' ',' | tee -a "$RES/peers_wal.csv" | sed 's/^/  /'
		done
	done
	pqm "ALTER TABLE jobqueue.jobs RESET (autovacuum_enabled)" \
		"ALTER TABLE peers_hand.jobs RESET (autovacuum_enabled)" >/dev/null
}

# Median, min and max jobs/s, CPU and WAL per job of each contender, from
# peers.csv: contender median min max server_cpu client_cpu wal runs
peers_stats() {
	awk -F, 'NR > 1 { v[$1] = v[$1] " " $6; c[$1] = c[$1] " " $7; k[$1] = k[$1] " " $8; w[$1] = w[$1] " " $9; o[$1] = $11 }
		function median(s,   a, n, i, j, t) {
			n = split(s, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			lo = a[1]; hi = a[n]; cnt = n
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		END {
			for (x in v) {
				m = median(v[x]); l = lo; h = hi; r = cnt
				printf "%s %.0f %.0f %.0f %.1f %.1f %.0f %d\n", x, m, l, h, median(c[x]), median(k[x]), median(w[x]), r
			}
		}' "$RES/peers.csv"
}

peers_summary() {
	local -A med lo hi scpu ccpu wal runs
	local who m l h s c w n
	while read -r who m l h s c w n; do
		med[$who]=$m lo[$who]=$l hi[$who]=$h scpu[$who]=$s ccpu[$who]=$c wal[$who]=$w runs[$who]=$n
	done < <(peers_stats)
	ratio() {
		[ -n "${med[$1]:-}" ] && [ -n "${med[$2]:-}" ] || { echo "n/a"; return; }
		awk -v a="${med[$1]}" -v b="${med[$2]}" -v t="$3" 'BEGIN { r = a / b
			printf "%.2f (target >= %s: %s)", r, t, (r >= t ? "met" : "MISSED") }'
	}
	echo "jobqueue peer benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$JQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo) RAM; $(pq 'SELECT version()' | cut -d, -f1); node $(node --version)"
	echo "load average (1, 5, 15 min) at the start: $PEERS_LOAD0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "$PEERS_JOBS no-op jobs drained per run, $PEERS_ROUNDS rounds, contenders rotating; jobs/s = jobs / seconds of the drain only"
	[ -z "$PEERS_NOTES" ] || printf '%s' "$PEERS_NOTES"
	echo
	printf '%-9s %9s %9s %9s %5s %11s %11s %9s  %s\n' contender "median" min max runs "server us" "client us" "WAL B" settings
	for who in ext cac ext0 cac0 hand pgboss graphile jqnode jqnode0; do
		[ -n "${med[$who]:-}" ] || continue
		printf '%-9s %9s %9s %9s %5s %11s %11s %9s  %s\n' "$who" "${med[$who]}" "${lo[$who]}" "${hi[$who]}" \
			"${runs[$who]}" "${scpu[$who]}" "${ccpu[$who]}" "${wal[$who]}" "$(peers_opts "$who")"
	done
	echo "(jobs/s; server us, client us: CPU per job of the server and of the driver process; WAL B: WAL bytes per job of the drain)"
	echo
	echo "ratios of the medians:"
	echo "  jobqueue (ext) / minimal hand-written:    $(ratio ext hand 1.5)"
	echo "  jobqueue (ext) / pg-boss:                 $(ratio ext pgboss 2.5)"
	echo "  jobqueue (ext) / graphile-worker:         $(ratio ext graphile 2.5)"
	if [ -n "${med[cac]:-}" ]; then
		echo "  jobqueue (cac) / minimal hand-written:    $(ratio cac hand 1.5)"
		echo "  jobqueue (cac) / pg-boss:                 $(ratio cac pgboss 2.5)"
		echo "  jobqueue (cac) / graphile-worker:         $(ratio cac graphile 2.5)"
		echo "  cac / ext:                                $(ratio cac ext 1)"
	fi
	if [ -n "${med[ext0]:-}" ]; then
		echo "  jobqueue, retention 0 (ext0) / minimal:   $(ratio ext0 hand 1.5)"
		echo "  jobqueue, retention 0 (ext0) / pg-boss:   $(ratio ext0 pgboss 2.5)"
		echo "  jobqueue, retention 0 (ext0) / graphile:  $(ratio ext0 graphile 2.5)"
	fi
	if [ -n "${med[cac0]:-}" ]; then
		echo "  jobqueue, retention 0 (cac0) / minimal:   $(ratio cac0 hand 1.5)"
		echo "  jobqueue, retention 0 (cac0) / pg-boss:   $(ratio cac0 pgboss 2.5)"
		echo "  jobqueue, retention 0 (cac0) / graphile:  $(ratio cac0 graphile 2.5)"
	fi
	echo "  Node client / pg-boss:                    $(ratio jqnode pgboss 1.5)"
	echo "  Node client / graphile-worker:            $(ratio jqnode graphile 1.5)"
	if [ -n "${med[jqnode0]:-}" ]; then
		echo "  Node client, retention 0 / pg-boss:       $(ratio jqnode0 pgboss 1.5)"
		echo "  Node client, retention 0 / graphile:      $(ratio jqnode0 graphile 1.5)"
	fi
	if [ -s "$RES/peers_wal.csv" ]; then
		echo
		echo "WAL bytes per job, enqueue + claim + complete ($PEERS_WAL_JOBS jobs, autovacuum off on the two tables):"
		column -s, -t "$RES/peers_wal.csv" | sed 's/^/  /'
	fi
	echo
	echo "settings of database peers that differ from the defaults:"
	pq "SELECT name || ' = ' || setting || coalesce(' ' || unit, '') || ' (' || source || ')' FROM pg_settings
		WHERE source NOT IN ('default', 'override') AND name NOT IN ('application_name') ORDER BY name" | sed 's/^/  /'
}

peers_search() {
	local n=$PEERS_SEARCH_JOBS w b c l round
	log "peers: settings search on $n jobs, $PEERS_SEARCH_ROUNDS rounds (a run stops after ${PEERS_SEARCH_LIMIT}s)"
	for round in $(seq 1 "$PEERS_SEARCH_ROUNDS"); do
		for w in 1 2 4 8 16; do
			for b in 100 1000 5000; do
				# pg-boss fetches a batch per worker every poll interval: many
				# small-batch workers only add polling
				[ "$w" -le 4 ] || [ "$b" = 5000 ] || continue
				# the slow settings once: 30 s tell their rate
				[ "$round" = 1 ] || [ "$b" != 100 ] || continue
				peers_drain pgboss "$round" 0 "$n" "workers=$w batch=$b poll=0.5 limit=$PEERS_SEARCH_LIMIT"
			done
		done
		for c in 8 16 32; do
			for l in 100 500 1000 2000; do
				peers_drain graphile "$round" 0 "$n" "concurrency=$c local=$l delay=0 limit=$PEERS_SEARCH_LIMIT"
			done
		done
		for w in 1 2 3; do
			for b in 100 500 1000; do
				peers_drain jqnode "$round" 0 "$n" "workers=$w concurrency=8 batch=$b"
			done
		done
	done
	{
		echo "jobqueue peer benchmark, settings search, $(date -u '+%Y-%m-%d %H:%M UTC'); $n jobs per run"
		echo "load average (1, 5, 15 min) at the start: $PEERS_LOAD0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
		echo
		printf '%8s  %-22s  %-8s  %s\n' median "(runs)" system settings
		awk -F, 'NR > 1 { k = $1 "," $11; v[k] = v[k] " " $6 }
			END {
				for (k in v) {
					n = split(v[k], a, " ")
					for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
					m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
					split(k, p, ",")
					printf "%s|%.0f|%s|%s\n", p[1], m, substr(v[k], 2), p[2]
				}
			}' "$PEERS_CSV" | sort -t'|' -k1,1 -k2,2nr | awk -F'|' '{ printf "%8s  %-22s  %-8s  %s\n", $2, "(" $3 ")", $1, $4 }
				$1 != last { best[$1] = $4 " (" $2 " jobs/s)"; order[++k] = $1; last = $1 }
				END { print ""; for (i = 1; i <= k; i++) print "best " order[i] ": " best[order[i]] }'
	} | tee "$RES/peers_search.txt"
}

# Where the server's time goes in a drain of jobqueue (ext) and of the
# minimal table (hand): perf record -g of the 8 backends, at 999 Hz, through
# a drain of PEERS_PERF_JOBS jobs; the top symbols, self time, into
# peers_perf.txt.
peers_perf() {
	local who n=$PEERS_PERF_JOBS pids pgpid perfpid i
	command -v perf >/dev/null || { echo "perf is not installed: no profile" >&2; return 0; }
	: >"$RES/peers_perf.txt"
	for who in ext hand; do
		log "peers: perf profile of the $who drain, $n jobs"
		peers_enqueue "$who" "$n"
		ppgb -c "$PEERS_CLIENTS" -j "$PEERS_CLIENTS" -t 10000000 -f "$BENCH_DIR/pgbench/peers_${who}_drain.sql" \
			-D q=peers -D owner=peers-bench >/dev/null &
		pgpid=$!
		for ((i = 0; i < 200; i++)); do
			pids=$(pq "SELECT string_agg(pid::text, ',') FROM pg_stat_activity
				WHERE datname = 'peers' AND application_name = 'pgbench' HAVING count(*) = $PEERS_CLIENTS")
			[ -z "$pids" ] || break
			sleep 0.02
		done
		if [ -z "$pids" ]; then
			wait "$pgpid" || true
			echo "== $who: the drain ended before its backends were found: no profile (raise PEERS_PERF_JOBS)" \
				>>"$RES/peers_perf.txt"
			continue
		fi
		perf record -q -g -F 999 -p "$pids" -o "$WORK/tmp/perf.data" >/dev/null 2>&1 &
		perfpid=$!
		wait "$pgpid" || true
		kill -INT "$perfpid" 2>/dev/null || true
		wait "$perfpid" || true
		{
			echo "== $who: $(pq "SELECT count(*) FROM $([ $who = ext ] && echo jobqueue.jobs || echo peers_hand.jobs)
				WHERE status = 'succeeded'") jobs; perf record -g -F 999 of its $PEERS_CLIENTS backends; self time by symbol"
			# (awk, not head: perf must not die of SIGPIPE)
			perf report -i "$WORK/tmp/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
				awk '/^ +[0-9.]+%/ && ++n <= 30 { sub(/[ -]+$/, ""); print }' || true
			echo
			echo "== $who: by shared object"
			perf report -i "$WORK/tmp/perf.data" --no-children --sort dso --stdio 2>/dev/null |
				awk '/^ +[0-9.]+%/ && ++n <= 8 { sub(/[ -]+$/, ""); print }' || true
			echo
		} >>"$RES/peers_perf.txt"
		rm -f "$WORK/tmp/perf.data"
	done
	cat "$RES/peers_perf.txt"
}

# Where the time of each statement goes: pg_stat_statements (loaded by
# lib.sh, tracking off) with nested statements tracked, for a drain of
# PEERS_JOBS jobs by one client, jobqueue (ext) and the minimal table (hand);
# execution time per job and calls of the top statements, into
# peers_statements.txt.  Tracking costs time itself: these drains are not
# counted anywhere else.
peers_statements() {
	local who n=$PEERS_JOBS
	[ "$(pq "SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'")" = 1 ] ||
		pq "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null 2>&1 || return 0
	: >"$RES/peers_statements.txt"
	for who in ext hand; do
		log "peers: pg_stat_statements of the $who drain, $n jobs"
		peers_enqueue "$who" "$n"
		DB=postgres q "ALTER DATABASE peers SET pg_stat_statements.track = 'all'" >/dev/null
		pq "SELECT pg_stat_statements_reset()" >/dev/null
		# one client: the times are the statements' own, not waits for a CPU
		PEERS_CLIENTS=1 peers_pgbench peers "peers_${who}_drain.sql" >/dev/null
		{
			echo "== $who: $n jobs drained by 1 client; execution time per job (us), top-level and nested statements"
			pq "SELECT to_char(total_exec_time * 1000 / $n, '9990.00') || ' us/job  ' ||
					lpad(calls::text, 7) || ' calls  ' || lpad(rows::text, 7) || ' rows  ' ||
					CASE WHEN toplevel THEN 'top    ' ELSE 'nested ' END ||
					left(regexp_replace(query, '\s+', ' ', 'g'), 110)
				  FROM pg_stat_statements
				 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = 'peers')
				   AND query !~* 'pg_stat_statements_reset'
				 ORDER BY total_exec_time DESC LIMIT 8"
			echo
		} >>"$RES/peers_statements.txt"
		DB=postgres q "ALTER DATABASE peers RESET pg_stat_statements.track" >/dev/null
	done
	cat "$RES/peers_statements.txt"
}

part_peers() {
	local round i k who list
	PEERS_LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
	peers_setup
	if [ "${BENCH_PEERS_SEARCH:-0}" = 1 ]; then
		peers_search
		return
	fi
	log "peers: drain $PEERS_JOBS jobs, $PEERS_ROUNDS rounds; load $PEERS_LOAD0"
	list=()
	for who in $PEERS_CONTENDERS; do
		case $who in cac | cac0) [ "$PEERS_HAVE_CAC" = 1 ] || continue ;; esac
		list+=("$who")
	done
	for round in $(seq 1 "$PEERS_ROUNDS"); do
		# each round starts with the next contender
		for i in "${!list[@]}"; do
			k=$(((i + round - 1) % ${#list[@]}))
			peers_drain "${list[$k]}" "$round" "$((i + 1))" "$PEERS_JOBS" "$(peers_opts "${list[$k]}")"
		done
	done
	peers_wal
	if [ "${BENCH_PEERS_DIAG:-1}" = 1 ]; then
		peers_statements
		peers_perf
	fi
	peers_summary | tee "$RES/peers.txt"
}

# Data of peers.png (bench/plots.gp): one line per contender, median min max.
peers_plot_data() {
	[ "${BENCH_PEERS_SEARCH:-0}" != 1 ] && [ -s "$RES/peers.csv" ] || return 0
	peers_stats | awk '{ o["ext"] = 1; o["cac"] = 2; o["ext0"] = 2.3; o["cac0"] = 2.6; o["hand"] = 3; o["pgboss"] = 4; o["graphile"] = 5; o["jqnode"] = 6; o["jqnode0"] = 6.5
			n["ext"] = "jobqueue"; n["cac"] = "jobqueue, cac"
			n["ext0"] = "jobqueue, no history"; n["cac0"] = "jobqueue, cac, no history"
			n["hand"] = "minimal table"; n["pgboss"] = "pg-boss"; n["graphile"] = "graphile-worker"
			n["jqnode"] = "jobqueue Node"; n["jqnode0"] = "jobqueue Node, no history"
			printf "%s \"%s\" %s %s %s\n", o[$1], n[$1], $2, $3, $4 }' | sort -n | awk '{ $1 = NR; print }'
}

bench_part_main peers "${BASH_SOURCE[0]}"
