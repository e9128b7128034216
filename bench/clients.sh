#!/usr/bin/env bash
# Throughput of the client libraries' workers against the ceiling.
#
# Each client's worker (Python, Node.js, Go), concurrency 8, batch 100,
# with a no-op handler, drains 100,000 jobs from its own queue; the
# ceiling is pgbench running the same SQL as the workers on one connection
# (jq_claim of 100, then jq_complete_many of them) until the same number
# of jobs is done (extended protocol, unnamed statements, like the clients).  Prints jobs/s and each client's ratio to the ceiling.
#
# Usage: sudo bash bench/clients.sh          (not part of the tests)
#   BENCH_CLIENT_JOBS (100000), BENCH_CLIENT_CONCURRENCY (8),
#   BENCH_CLIENT_BATCH (100), BENCH_CLIENTS_LIST ("python node go").
source "$(dirname "$0")/../scripts/common.sh"

JOBS=${BENCH_CLIENT_JOBS:-100000}
CONC=${BENCH_CLIENT_CONCURRENCY:-8}
BATCH=${BENCH_CLIENT_BATCH:-100}
LIST=${BENCH_CLIENTS_LIST:-python node go}

jq_install_packages
dir=$(jq_workdir bench-clients)
jq_build_install "$dir"
cdir=$dir/bench_clients
jq_owned_dir "$cdir"
port=$(jq_free_port 57500 57999)
jq_cluster_init "$cdir/server" "$port"
jq_cluster_conf <<CONF
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'jobqueue'
synchronous_commit = off
max_connections = 100
CONF
trap jq_cluster_stop EXIT
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
		-c "VACUUM ANALYZE jobqueue.jobs" >/dev/null
}
check_done() {
	local n
	n=$(psql_c -c "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = '$1' AND status = 'succeeded' AND attempt_count = 1")
	[ "$n" -eq "$JOBS" ] || { echo "queue $1: $n of $JOBS jobs succeeded at the first attempt" >&2; exit 1; }
}

declare -A rate

# --- the ceiling: pgbench, the same statements, one connection -----------
fill bench_pgbench
cat >"$cdir/claim_complete.sql" <<'SQL'
SELECT coalesce(array_agg(c.id), '{}') AS ids, coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_claim('bench_pgbench', :batch, 'pgbench') c \gset
SELECT count(*) FROM jobqueue.jq_complete_many(:ids, :tokens);
SQL
chown "$JQ_PGUSER" "$cdir/claim_complete.sql"
out=$(cd "$cdir" && as_pguser pgbench -n -M extended -h 127.0.0.1 -p "$port" -c 1 -t $((JOBS / BATCH)) -D batch="$BATCH" \
	-f "$cdir/claim_complete.sql" postgres 2>&1)
tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | tail -n 1)
rate[pgbench]=$(awk -v t="$tps" -v b="$BATCH" 'BEGIN { printf "%.0f", t * b }')
check_done bench_pgbench
echo "pgbench (1 connection, claim $BATCH + jq_complete_many): ${rate[pgbench]} jobs/s"

# --- the workers -----------------------------------------------------------
# Each driver runs the worker with a no-op handler until its counters say
# every job is completed, and prints the elapsed seconds.
cat >"$cdir/drain.py" <<'PY'
import sys, threading, time
sys.path.insert(0, sys.argv[1])
import jobqueue
dsn, queue, n, conc, batch = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
w = jobqueue.Worker(dsn, queue, lambda job: None, concurrency=conc, batch_size=batch)
t0 = time.monotonic()
t = threading.Thread(target=w.run)
t.start()
while w.stats["completed"] < n:
    time.sleep(0.005)
el = time.monotonic() - t0
w.stop()
t.join()
print(f"{el:.3f}")
PY
cat >"$cdir/drain.js" <<'JS'
const [dir, dsn, queue, n, conc, batch] = process.argv.slice(2);
const { Worker } = require(dir);
const w = new Worker({ connectionString: dsn, queue, handler: async () => {}, concurrency: Number(conc), batchSize: Number(batch), handleSignals: false });
const t0 = process.hrtime.bigint();
w.start().then(() => {
  const iv = setInterval(async () => {
    if (w.stats.completed < Number(n)) return;
    clearInterval(iv);
    const el = Number(process.hrtime.bigint() - t0) / 1e9;
    await w.stop();
    console.log(el.toFixed(3));
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
	t0 := time.Now()
	done := make(chan error)
	go func() { done <- w.Run(context.Background()) }()
	for w.Stats().Completed < n {
		time.Sleep(5 * time.Millisecond)
	}
	el := time.Since(t0)
	w.Stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.3f\n", el.Seconds())
}
GO
chown -R "$JQ_PGUSER" "$cdir"
goenv=(GO111MODULE=off GOPATH="$cdir/gopath:/usr/share/gocode" GOFLAGS= GOCACHE="$cdir/gocache" HOME="$cdir")
for lang in $LIST; do
	fill "bench_$lang"
	case $lang in
	python) cmd=(/usr/bin/python3 "$cdir/drain.py" "$dir/clients/python") ;;
	node)
		(cd "$dir/clients/node" && as_pguser env HOME="$cdir" npm_config_cache="$cdir/npm-cache" \
			npm ci --no-audit --no-fund --loglevel=error >/dev/null)
		cmd=(node "$cdir/drain.js" "$dir/clients/node") ;;
	go)
		(cd "$cdir/gopath/src/jqbench" && as_pguser env "${goenv[@]}" go build -o "$cdir/jqbench" jqbench)
		cmd=("$cdir/jqbench") ;;
	esac
	secs=$(cd "$cdir" && as_pguser env "${goenv[@]}" "${cmd[@]}" "$DSN" "bench_$lang" "$JOBS" "$CONC" "$BATCH")
	rate[$lang]=$(awk -v s="$secs" -v n="$JOBS" 'BEGIN { printf "%.0f", n / s }')
	check_done "bench_$lang"
	echo "$lang worker (concurrency $CONC, batch $BATCH): ${rate[$lang]} jobs/s"
done

echo
echo "| runner | jobs/s | ratio to pgbench |"
echo "|---|---|---|"
echo "| pgbench, same SQL, 1 connection (ceiling) | ${rate[pgbench]} | 1.00 |"
for lang in $LIST; do
	echo "| $lang worker | ${rate[$lang]} | $(awk -v a="${rate[$lang]}" -v b="${rate[pgbench]}" 'BEGIN { printf "%.2f", a / b }') |"
done
echo
echo "$JOBS no-op jobs each; $(nproc) CPUs; load average before: $(cut -d' ' -f1-3 /proc/loadavg); synchronous_commit = off"
