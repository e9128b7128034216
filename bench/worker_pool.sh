#!/usr/bin/env bash
# The worker pool's idle cost and reap delay with many databases.
#
# Starts a cluster with the extension preloaded (defaults otherwise:
# max_worker_processes 8, jobqueue.max_workers 2), creates N databases with
# the extension and N without, waits until the launcher has visited every
# one once, then, idle, measures for WINDOW seconds:
#   - CPU time of the whole cluster (postmaster, its children and the
#     children that exited), as a percentage of one core;
#   - worker processes started per second, and in which kind of database;
# and finally, with one expiring lease in each database with the extension,
# the worst delay between a lease's expiry and its reap.
#
# Usage: sudo bash bench/worker_pool.sh [N [WINDOW]]     (default 100, 60)
# Output: bench/results/worker_pool.txt
source "$(dirname "$0")/../scripts/common.sh"

N=${1:-100}
WINDOW=${2:-60}
out=$JQ_ROOT/bench/results/worker_pool.txt

jq_install_packages
dir=$(jq_workdir pool)
jq_build_install "$dir"

trap jq_cluster_stop EXIT
jq_cluster_init "$dir/cluster" "$(jq_free_port 55000 55999)"
jq_cluster_conf <<CONF
shared_preload_libraries = 'jobqueue'
log_min_messages = debug1
max_connections = 50
CONF
jq_cluster_start
psql_as() { as_pguser psql -XAtq -h "$JQ_PGHOST" -p "$JQ_PGPORT" -v ON_ERROR_STOP=1 "$@"; }

log "creating $N databases with jobqueue and $N without"
psql_as -d postgres -c 'CREATE DATABASE tpl'
psql_as -d tpl -c "CREATE EXTENSION jobqueue" \
	-c "SELECT jobqueue.jq_create_queue('q', lease_duration => '2 seconds', backoff_base => '10 milliseconds', backoff_max => '10 milliseconds')"
psql_as -d postgres -c 'ALTER DATABASE tpl IS_TEMPLATE true'
for i in $(seq -w 1 "$N"); do
	psql_as -d postgres -c "CREATE DATABASE w_$i TEMPLATE tpl"
	psql_as -d postgres -c "CREATE DATABASE n_$i"
done

log "waiting until every database was visited once"
total=$((2 * N))
for _ in $(seq 1 600); do
	seen=$({ grep -o 'jobqueue worker attached for database [0-9]*' "$JQ_PGLOG" || true; } | sort -u | wc -l)
	((seen >= total)) && break
	sleep 1
done
echo "databases visited: $seen of $total"
# let the first round of visits (activity from CREATE EXTENSION) settle
sleep 5

# CPU ticks of the cluster: the postmaster with its reaped children, plus
# every live child
cluster_ticks() {
	local pm t=0 pid
	pm=$(head -1 "$JQ_PGDATA/postmaster.pid")
	read -r -a f <"/proc/$pm/stat"
	t=$((f[13] + f[14] + f[15] + f[16]))
	for pid in $(pgrep -P "$pm"); do
		read -r -a f <"/proc/$pid/stat" 2>/dev/null || continue
		t=$((t + f[13] + f[14]))
	done
	echo "$t"
}
hz=$(getconf CLK_TCK)
log_before=$(wc -c <"$JQ_PGLOG")
t0=$(cluster_ticks)
start=$(date +%s.%N)
sleep "$WINDOW"
t1=$(cluster_ticks)
end=$(date +%s.%N)
attached() { grep -oE "$1" || true; }
starts_w=$(tail -c +"$log_before" "$JQ_PGLOG" | attached 'jobqueue worker attached for database [0-9]+' | wc -l)
n_oids=$(psql_as -d postgres -c "SELECT string_agg(oid::text, '|') FROM pg_database WHERE datname LIKE 'n\_%'")
starts_n=$(tail -c +"$log_before" "$JQ_PGLOG" | attached "jobqueue worker attached for database ($n_oids)\$" | wc -l)
cpu=$(echo "($t1 - $t0) / $hz / ($end - $start) * 100" | bc -l)

log "one expiring lease in each database with jobqueue"
for i in $(seq -w 1 "$N"); do
	psql_as -d "w_$i" -c "SELECT jobqueue.jq_enqueue('q', '{}')" \
		-c "SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'gone')" >/dev/null
done
worst=0
for i in $(seq -w 1 "$N"); do
	until [ "$(psql_as -d "w_$i" -c "SELECT count(*) FROM jobqueue.jobs WHERE status = 'running'")" = 0 ]; do
		sleep 0.05
	done
	d=$(psql_as -d "w_$i" -c "SELECT extract(epoch FROM (j.errors->0->>'at')::timestamptz - (j.started_at + interval '2 seconds')) FROM jobqueue.jobs j")
	worst=$(echo "if ($d > $worst) $d else $worst" | bc -l)
done

{
	echo "worker pool, $(date -u +%F), $(nproc) cores, load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "databases: $N with jobqueue, $N without; max_worker_processes 8, jobqueue.max_workers 2"
	printf 'idle CPU of the whole cluster over %s s: %.2f %% of one core\n' "$WINDOW" "$cpu"
	printf 'worker starts: %.2f per second (%s in databases with jobqueue, %s in databases without)\n' \
		"$(echo "$starts_w / ($end - $start)" | bc -l)" "$((starts_w - starts_n))" "$starts_n"
	printf 'worst delay from lease expiry to reap, %s databases at once: %.2f s\n' "$N" "$worst"
} | tee "$out"
