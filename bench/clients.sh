#!/usr/bin/env bash
# Throughput of the client libraries' workers against the ceiling.
#
# Each client's worker (Python, Node.js, Go), concurrency 8, batch 100,
# with a no-op handler, drains 100,000 jobs from its own queue; the
# ceiling is pgbench running the same SQL as the workers on one connection
# (the worker's one claim connection): jq_complete_and_claim of the jobs of
# the previous turn and up to 100 more, the claimed jobs fetched as one
# JSON array as the workers do, until every job is done (extended
# protocol, unnamed statements, like the clients).  The runners take
# turns, BENCH_CLIENT_ROUNDS rounds of each, so that they are measured
# side by side under the same load; the report
# gives the median jobs/s of each and its ratio to the ceiling's median,
# and the CPU time per job of the server (postmaster and its children) and
# of the runner's own process, which the load of other work on the machine
# changes less than jobs/s.
#
# Usage: sudo bash bench/clients.sh          (not part of the tests)
#   BENCH_CLIENT_JOBS (100000), BENCH_CLIENT_CONCURRENCY (8),
#   BENCH_CLIENT_BATCH (100), BENCH_CLIENT_ROUNDS (5),
#   BENCH_CLIENTS_LIST ("python node go"), BENCH_CLIENTS_BASE (a git ref:
#   its clients run too, as python-base ...), BENCH_PORT (first free port
#   from 57500), BENCH_RESULTS (bench/results: clients.csv, clients.txt),
#   BENCH_INSTALL (1: build and install the extension; 0: use the installed
#   one), BENCH_QUICK=1 (10,000 jobs, 1 round), BENCH_KEEP=1 (keep the
#   scratch directory).  Also part "clients" of bench/run.sh.
source "$(dirname "$0")/../scripts/common.sh"

if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_CLIENT_JOBS:=10000}" "${BENCH_CLIENT_ROUNDS:=1}"
fi
JOBS=${BENCH_CLIENT_JOBS:-100000}
CONC=${BENCH_CLIENT_CONCURRENCY:-8}
BATCH=${BENCH_CLIENT_BATCH:-100}
ROUNDS=${BENCH_CLIENT_ROUNDS:-5}
LIST=${BENCH_CLIENTS_LIST:-python node go}
RES=${BENCH_RESULTS:-$JQ_ROOT/bench/results}
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
CLK_TCK=$(getconf CLK_TCK)

jq_install_packages
dir=$(jq_workdir bench-clients)
if [ "${BENCH_INSTALL:-1}" = 1 ]; then
	jq_build_install "$dir"
fi
cdir=$dir/bench_clients
jq_owned_dir "$cdir"
port=${BENCH_PORT:-$(jq_free_port 57500 57999)}
jq_cluster_init "$cdir/server" "$port"
jq_cluster_conf <<CONF
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'jobqueue'
synchronous_commit = off
max_connections = 100
CONF
clients_cleanup() {
	jq_cluster_stop
	[ "${BENCH_KEEP:-0}" = 1 ] || rm -rf "$dir"
}
trap clients_cleanup EXIT
jq_cluster_start
DSN="postgresql://postgres@127.0.0.1:$port/postgres"
psql_c() { as_pguser psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -d postgres "$@"; }
psql_c -c 'CREATE EXTENSION jobqueue'

PAYLOAD='{"task": "send_email", "user_id": 12345, "template": "welcome"}'
# A fresh queue with $JOBS pending jobs; the finished jobs of the previous
# run are purged and vacuumed away first.
fill() {
	psql_c -c "SELECT jobqueue.jq_purge(queue_name, interval '0', 10000000) FROM jobqueue.queues" \
		-c "VACUUM ANALYZE jobqueue.jobs" \
		-c "SELECT jobqueue.jq_create_queue('$1', lease_duration => '5 minutes')" \
		-c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$1', ARRAY(SELECT '$PAYLOAD'::jsonb FROM generate_series(1, $JOBS)))" \
		-c "VACUUM ANALYZE jobqueue.jobs" -c CHECKPOINT >/dev/null
}
check_done() {
	local n
	n=$(psql_c -c "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = '$1' AND status = 'succeeded' AND attempt_count = 1")
	[ "$n" -eq "$JOBS" ] || { echo "queue $1: $n of $JOBS jobs succeeded at the first attempt" >&2; exit 1; }
}
# CPU seconds of the server so far: the postmaster, its live children, and
# the children that have exited (as bench/lib.sh server_cpu).
server_cpu() {
	local pm
	pm=$(head -n 1 "$JQ_PGDATA/postmaster.pid")
	{
		awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
		for c in $(ps --ppid "$pm" -o pid=); do
			awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || true
		done
	} | awk -v hz="$CLK_TCK" '{ s += $1 } END { printf "%.3f\n", s / hz }'
}

# --- the ceiling: pgbench, the same statement, one connection --------------
# The statement of the workers (jobs as one JSON array: see _JOBS_JSON in
# clients/python/jobqueue/_worker.py, jobsJson in clients/node/lib/worker.js,
# sqlJobsJSON in clients/go/worker.go), plus the ids and tokens as arrays,
# which pgbench keeps for the next turn (\gset): each transaction completes
# the jobs the previous one claimed and claims the next ones.  The last
# turn finds the queue empty and only completes.
cat >"$cdir/complete_and_claim.sql" <<'SQL'
SELECT pg_catalog.json_agg(pg_catalog.json_build_array(c.id, c.payload, c.attempt, c.token,
         c.lease_expires_at, pg_catalog.date_part('epoch',
         c.lease_expires_at - pg_catalog.clock_timestamp())) ORDER BY c.n)::text AS jobs,
       coalesce(array_agg(c.id), '{}') AS ids, coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_complete_and_claim(:queue, :ids, :tokens, :batch, 'pgbench', NULL, NULL)
       WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, traceparent, tracestate, trace_origin, n) \gset
SQL
TURNS=$(((JOBS + BATCH - 1) / BATCH + 1))
# Prints "seconds client_cpu_seconds" of one drain by pgbench.
run_pgbench() {
	local out c
	out=$(cd "$cdir" && { TIMEFORMAT='%3U %3S'; time as_pguser pgbench -n -M extended -h 127.0.0.1 -p "$port" -c 1 -t "$TURNS" \
		-D batch="$BATCH" -D queue="$1" -D ids='{}' -D tokens='{}' -f "$cdir/complete_and_claim.sql" postgres; } 2>&1)
	c=$(tail -n 1 <<<"$out" | awk '{ print $1 + $2 }')
	grep -q "^number of transactions actually processed: $TURNS/" <<<"$out" || { echo "$out" >&2; exit 1; }
	# pgbench's time without its connection (the workers' includes theirs)
	awk -v tps="$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")" \
		-v n="$TURNS" -v c="$c" 'BEGIN { printf "%.3f %.3f\n", n / tps, c }'
}

# --- the workers -----------------------------------------------------------
# Each driver runs the worker with a no-op handler until its counters say
# every job is completed, and prints the elapsed seconds and the CPU
# seconds of its own process (every thread) in that time.
cat >"$cdir/drain.py" <<'PY'
import sys, threading, time
sys.path.insert(0, sys.argv[1])
import jobqueue
dsn, queue, n, conc, batch = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
w = jobqueue.Worker(dsn, queue, lambda job: None, concurrency=conc, batch_size=batch)
t0, c0 = time.monotonic(), time.process_time()
t = threading.Thread(target=w.run)
t.start()
while w.stats["completed"] < n:
    time.sleep(0.005)
el, cpu = time.monotonic() - t0, time.process_time() - c0
w.stop()
t.join()
print(f"{el:.3f} {cpu:.3f}")
PY
cat >"$cdir/drain.js" <<'JS'
const [dir, dsn, queue, n, conc, batch] = process.argv.slice(2);
const { Worker } = require(dir);
const w = new Worker({ connectionString: dsn, queue, handler: async () => {}, concurrency: Number(conc), batchSize: Number(batch), handleSignals: false });
const t0 = process.hrtime.bigint();
const c0 = process.cpuUsage();
w.start().then(() => {
  const iv = setInterval(async () => {
    if (w.stats.completed < Number(n)) return;
    clearInterval(iv);
    const el = Number(process.hrtime.bigint() - t0) / 1e9;
    const c = process.cpuUsage(c0);
    await w.stop();
    console.log(`${el.toFixed(3)} ${((c.user + c.system) / 1e6).toFixed(3)}`);
  }, 5);
});
JS
mkdir -p "$cdir/gopath/src/jobqueue" "$cdir/gopath/src/jqbench"
cp -r "$dir/clients/go/." "$cdir/gopath/src/jobqueue/"
cat >"$cdir/gopath/src/jqbench/main.go" <<'GO'
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"syscall"
	"time"

	"jobqueue"
)

func main() {
	dsn, queue := os.Args[1], os.Args[2]
	n, _ := strconv.ParseInt(os.Args[3], 10, 64)
	conc, _ := strconv.Atoi(os.Args[4])
	batch, _ := strconv.Atoi(os.Args[5])
	w, err := jobqueue.NewWorker(dsn, jobqueue.WorkerOptions{Queue: queue, Concurrency: conc, BatchSize: batch,
		Handler: func(ctx context.Context, j *jobqueue.Job) error { return nil }, Logger: log.New(io.Discard, "", 0)})
	if err != nil {
		log.Fatal(err)
	}
	cpu := func() float64 {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	t0, c0 := time.Now(), cpu()
	done := make(chan error)
	go func() { done <- w.Run(context.Background()) }()
	for w.Stats().Completed < n {
		time.Sleep(5 * time.Millisecond)
	}
	el, c := time.Since(t0), cpu()-c0
	w.Stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.3f %.3f\n", el.Seconds(), c)
}
GO
# BENCH_CLIENTS_BASE=<git ref>: the clients of that commit run too, as
# python-base, node-base and go-base, for a before/after in the same run.
RUNNERS=$LIST
if [ -n "${BENCH_CLIENTS_BASE:-}" ]; then
	mkdir -p "$cdir/base" "$cdir/gopath-base/src/jobqueue"
	git -C "$JQ_ROOT" archive "$BENCH_CLIENTS_BASE" clients | tar -C "$cdir/base" -xf -
	cp -r "$cdir/base/clients/go/." "$cdir/gopath-base/src/jobqueue/"
	cp -r "$cdir/gopath/src/jqbench" "$cdir/gopath-base/src/"
	for lang in $LIST; do RUNNERS+=" $lang-base"; done
fi
chown -R "$JQ_PGUSER" "$cdir"
goenv=(GO111MODULE=off GOPATH="$cdir/gopath:/usr/share/gocode" GOFLAGS= GOCACHE="$cdir/gocache" HOME="$cdir")
# The directory of a runner's client library (python, node-base, ...).
client_dir() {
	case $1 in
	*-base) echo "$cdir/base/clients/${1%-base}" ;;
	*) echo "$dir/clients/$1" ;;
	esac
}
for runner in $RUNNERS; do
	case $runner in
	node*)
		(cd "$(client_dir "$runner")" && as_pguser env HOME="$cdir" npm_config_cache="$cdir/npm-cache" \
			npm ci --no-audit --no-fund --loglevel=error >/dev/null) ;;
	go) (cd "$cdir/gopath/src/jqbench" && as_pguser env "${goenv[@]}" go build -o "$cdir/jqbench" jqbench) ;;
	go-base)
		(cd "$cdir/gopath-base/src/jqbench" && as_pguser env "${goenv[@]}" GOPATH="$cdir/gopath-base:/usr/share/gocode" \
			go build -o "$cdir/jqbench-base" jqbench) ;;
	esac
done
# Prints "seconds client_cpu_seconds" of one drain by a worker.
run_worker() {
	local cmd
	case $1 in
	python*) cmd=(/usr/bin/python3 "$cdir/drain.py" "$(client_dir "$1")") ;;
	node*) cmd=(node "$cdir/drain.js" "$(client_dir "$1")") ;;
	go) cmd=("$cdir/jqbench") ;;
	go-base) cmd=("$cdir/jqbench-base") ;;
	esac
	(cd "$cdir" && as_pguser env "${goenv[@]}" "${cmd[@]}" "$DSN" "$2" "$JOBS" "$CONC" "$BATCH")
}

mkdir -p "$RES"
csv=$RES/clients.csv
echo "runner,round,jobs,seconds,jobs_per_s,server_cpu_us_per_job,client_cpu_us_per_job,load1_before" >"$csv"
for ((round = 1; round <= ROUNDS; round++)); do
	for runner in pgbench $RUNNERS; do
		q="bench_${runner//-/_}_$round"
		fill "$q"
		load1=$(cut -d' ' -f1 /proc/loadavg)
		s0=$(server_cpu)
		if [ "$runner" = pgbench ]; then
			read -r secs ccpu < <(run_pgbench "$q")
		else
			read -r secs ccpu < <(run_worker "$runner" "$q")
		fi
		sleep 0.2	# the backends of the run have exited and been counted
		s1=$(server_cpu)
		check_done "$q"
		awk -v r="$runner" -v k="$round" -v n="$JOBS" -v s="$secs" -v sc="$(awk -v a="$s0" -v b="$s1" 'BEGIN { print b - a }')" \
			-v cc="$ccpu" -v l="$load1" \
			'BEGIN { printf "%s,%d,%d,%.3f,%.0f,%.1f,%.1f,%s\n", r, k, n, s, n / s, sc * 1e6 / n, cc * 1e6 / n, l }' >>"$csv"
		tail -n 1 "$csv"
	done
done

# Medians per runner; ratios of the medians of jobs/s to the ceiling's.
summary=$(awk -F, 'NR > 1 { v[$1] = v[$1] " " $5; s[$1] = s[$1] " " $6; c[$1] = c[$1] " " $7; order[$1] = NR }
	function med(str,   a, n, i, j, t) {
		n = split(str, a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		base = med(v["pgbench"])
		for (r in order) printf "%d|%s|%.0f|%.2f|%.1f|%.1f|%s\n", order[r], r, med(v[r]), med(v[r]) / base, med(s[r]), med(c[r]), v[r]
	}' "$csv" | sort -n -t'|' -k1,1 | cut -d'|' -f2-)
{
	echo "bench/clients.sh, $(date -u '+%Y-%m-%d %H:%M UTC'): $JOBS no-op jobs per run, concurrency $CONC, batch $BATCH,"
	echo "$ROUNDS rounds of each runner taking turns (pgbench $RUNNERS); medians.${BENCH_CLIENTS_BASE:+ *-base: the clients of $(git -C "$JQ_ROOT" rev-parse --short "$BENCH_CLIENTS_BASE") ($BENCH_CLIENTS_BASE).}"
	echo
	echo "| runner | jobs/s | ratio to the ceiling | server CPU us/job | client CPU us/job | jobs/s of the runs |"
	echo "|---|---|---|---|---|---|"
	while IFS='|' read -r r v ratio sc cc runs; do
		name="$r worker"
		[ "$r" = pgbench ] && name="pgbench, same SQL, 1 connection (ceiling)"
		echo "| $name | $v | $ratio | $sc | $cc |$runs |"
	done <<<"$summary"
	echo
	echo "machine: $(nproc) CPUs ($(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)); server, runners and other work on the same CPUs"
	echo "server: $(psql_c -c 'SELECT version()'); synchronous_commit = off"
	echo "load average (1, 5, 15 min) before: $LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg); 1-min load before each run in clients.csv"
	echo "python $(/usr/bin/python3 -c 'import platform, psycopg; print(platform.python_version(), "psycopg", psycopg.__version__)'); node $(node --version) pg $(node -p "require('$dir/clients/node/node_modules/pg/package.json').version"); $(go version | cut -d' ' -f3) pgx v4 (Debian)"
} | tee "$RES/clients.txt"
