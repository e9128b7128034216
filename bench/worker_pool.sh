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

load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
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
attached() { grep -oE "$1" || true; }
n_oids=$(psql_as -d postgres -c "SELECT string_agg(oid::text, '|') FROM pg_database WHERE datname LIKE 'n\_%'")

# measure_window: sets cpu (% of one core), starts (worker starts per
# second) and starts_n (worker starts in databases without jobqueue)
measure_window() {
	local log_before t0 t1 start end starts_all
	log_before=$(wc -c <"$JQ_PGLOG")
	t0=$(cluster_ticks)
	start=$(date +%s.%N)
	sleep "$WINDOW"
	t1=$(cluster_ticks)
	end=$(date +%s.%N)
	starts_all=$(tail -c +"$log_before" "$JQ_PGLOG" | attached 'jobqueue worker attached for database [0-9]+' | wc -l)
	starts_n=$(tail -c +"$log_before" "$JQ_PGLOG" | attached "jobqueue worker attached for database ($n_oids)\$" | wc -l)
	cpu=$(echo "($t1 - $t0) / $hz / ($end - $start) * 100" | bc -l)
	starts=$(echo "$starts_all / ($end - $start)" | bc -l)
}

log "idle, with the worker pool, for $WINDOW s"
measure_window
cpu_on=$cpu starts_on=$starts starts_n_on=$starts_n

log "idle, the same cluster with jobqueue.worker_enabled = off, for $WINDOW s"
psql_as -d postgres -c "ALTER SYSTEM SET jobqueue.worker_enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
until [ "$(psql_as -d postgres -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jobqueue worker'")" = 0 ]; do
	sleep 0.1
done
measure_window
cpu_off=$cpu
psql_as -d postgres -c "ALTER SYSTEM RESET jobqueue.worker_enabled" -c "SELECT pg_reload_conf()" >/dev/null
# the launcher registers and visits every database again
for _ in $(seq 1 600); do
	[ "$(psql_as -d w_001 -c "SELECT state <> 'waiting for the launcher' FROM jobqueue.jq_worker_status()" 2>/dev/null)" = t ] && break
	sleep 0.5
done
sleep 5

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
	echo "worker pool, $(date -u +%F), $(nproc) cores, load at start: $load_at_start"
	echo "databases: $N with jobqueue, $N without; max_worker_processes 8, jobqueue.max_workers 2, defaults otherwise"
	printf 'idle CPU of the whole cluster over %s s: %.2f %% of one core with the pool, %.2f %% with jobqueue.worker_enabled = off (PostgreSQL itself: autovacuum visits every database too); jobqueue: %.2f %%\n' \
		"$WINDOW" "$cpu_on" "$cpu_off" "$(echo "$cpu_on - $cpu_off" | bc -l)"
	printf 'worker starts: %.2f per second, %s of them in databases without jobqueue\n' "$starts_on" "$starts_n_on"
	printf 'worst delay from lease expiry to reap, %s databases at once: %.2f s\n' "$N" "$worst"
} | tee "$out"
