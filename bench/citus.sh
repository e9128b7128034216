#!/usr/bin/env bash
# Per-job cost of jobqueue on Citus against one plain server, in one run:
# a loopback cluster (a coordinator and 2 workers, built as the Citus suite
# does: scripts/test_citus.sh) and a single server with the same settings.
# For each target, N jobs are enqueued (jq_enqueue), then claimed and
# completed one at a time; the calls that name their queue and, where the
# cluster has them, the id-only calls (jq_complete(id, token)) are timed
# separately.  Targets: the single server; the cluster through the
# coordinator; the cluster through the worker that holds the queue.
# Each measurement is the median of BENCH_ROUNDS runs; the ratios are
# against the single server.  The load average is printed with the
# results: the machine is shared, and scale-out is modelled from these
# per-job costs (docs/scale-out.md), not shown.
#
# Also in batches of 100 (batch_enqueue: jq_enqueue_many; batch_claim:
# jq_claim of 100 and jq_complete_many(queue, ids, tokens)), BENCH_BATCHES
# of them, per job likewise.  And jobs that wait for others (N/2 pairs:
# enqueue a job, enqueue one that depends on it, claim and complete both,
# each by its queue): dep_same with both in the queue, dep_cross with the
# dependent in a queue on the other worker.  And empty_call: the least a
# call costs (jq_job of no job, by its queue), per call.
#
# Usage: sudo bash bench/citus.sh   (BENCH_JOBS=300, BENCH_BATCHES=30, BENCH_ROUNDS=3)
# Results: bench/work-citus/citus.txt
source "$(dirname "$0")/../scripts/common.sh"
source "$(dirname "$0")/../scripts/citus_common.sh"

N=${BENCH_JOBS:-300}
BATCHES=${BENCH_BATCHES:-30}
ROUNDS=${BENCH_ROUNDS:-3}
src=$(jq_citus_source) || { echo "no Citus source (CITUS_SRC or ../shared/citus)" >&2; exit 1; }
jq_install_only "${JQ_PKGS_BUILD[@]}" "${JQ_PKGS_CITUS[@]}"
dir=$(jq_workdir bench-citus)
jq_build_install "$dir"
jq_citus_build "$src"
out=$JQ_ROOT/bench/work-citus
mkdir -p "$out"
load0=$(cut -d' ' -f1-3 /proc/loadavg)

cleanup() { jq_citus_stop; jq_cluster_stop; }
trap cleanup EXIT
jq_citus_cluster "$dir/cluster" 2 "jobqueue.worker_enabled = off"
jq_citus_psql 0 -c 'CREATE EXTENSION jobqueue' >/dev/null
jq_citus_psql 0 -c 'SELECT count(*) FROM jobqueue.jq_distribute()' >/dev/null
sport=$(jq_free_port 54600 54999)
jq_cluster_init "$dir/single" "$sport"
jq_cluster_conf <<-CONF
	shared_preload_libraries = 'jobqueue'
	jobqueue.worker_enabled = off
	fsync = off
	synchronous_commit = off
CONF
jq_cluster_start
as_pguser psql -X -q -h "$JQ_PGHOST" -p "$sport" -d postgres -c 'CREATE DATABASE jobqueue' >/dev/null
as_pguser psql -X -q -h "$JQ_PGHOST" -p "$sport" -d jobqueue -c 'CREATE EXTENSION jobqueue' >/dev/null
single_psql() { as_pguser psql -X -q -A -t -v ON_ERROR_STOP=0 -h "$JQ_PGHOST" -p "$sport" -d jobqueue "$@"; }

q=bench_q
jq_citus_psql 0 -c "SELECT jobqueue.jq_create_queue('$q')" >/dev/null
single_psql -c "SELECT jobqueue.jq_create_queue('$q')" >/dev/null
wport=$(jq_citus_psql 0 -c "SELECT node_port FROM jobqueue.jq_queue_node('$q')")
wnode=1
[ "$wport" = "${JQ_CITUS_PORTS[2]}" ] && wnode=2
# a second queue, on the other worker
for ((k = 0; ; k++)); do
	q2=bench_other_$k
	[ "$(jq_citus_psql 0 -c "SELECT node_port FROM jobqueue.jq_queue_node('$q2')")" != "$wport" ] && break
done
jq_citus_psql 0 -c "SELECT jobqueue.jq_create_queue('$q2')" >/dev/null
single_psql -c "SELECT jobqueue.jq_create_queue('$q2')" >/dev/null

# The scripts: enqueue N; claim + complete N by (queue, id) where there is
# such a call, else by id alone.
for ((k = 0; k < N; k++)); do echo "SELECT jobqueue.jq_enqueue('$q', '{\"n\": $k}');"; done >"$dir/enqueue.sql"
for ((k = 0; k < N; k++)); do
	echo "SELECT id, token FROM jobqueue.jq_claim('$q', 1, 'bench') \\gset"
	echo "SELECT jobqueue.jq_complete(:id, :token);"
done >"$dir/id_only.sql"
queue_first=$(jq_citus_psql 0 -c "SELECT count(*) FROM pg_proc WHERE proname = 'jq_complete' AND proargnames[1] = 'queue_name'")
for ((k = 0; k < N; k++)); do
	echo "SELECT id, token FROM jobqueue.jq_claim('$q', 1, 'bench') \\gset"
	echo "SELECT jobqueue.jq_complete('$q', :id, :token);"
done >"$dir/queue_first.sql"
# In batches of 100 (what a worker does; the client libraries too):
# jq_enqueue_many, then jq_claim of 100 and jq_complete_many(queue, ...).
# Each is a call Citus delegates (the whole query, values as arguments),
# the claim too: psql keeps the claimed ids with an aggregate over it, a
# form Citus delegates as the clients' own does.
NB=$((BATCHES * 100))
payloads=$(for ((k = 0; k < 100; k++)); do printf "'{\"n\": %d}', " "$k"; done)
for ((k = 0; k < BATCHES; k++)); do
	echo "SELECT * FROM jobqueue.jq_enqueue_many('$q', ARRAY[${payloads%, }]::jsonb[]);"
done >"$dir/enqueue_many.sql"
for ((k = 0; k < BATCHES; k++)); do
	echo "SELECT array_agg(id) AS ids, array_agg(token) AS tokens FROM jobqueue.jq_claim('$q', 100, 'bench') \\gset"
	echo "SELECT count(*) FROM jobqueue.jq_complete_many('$q', :'ids', :'tokens');"
done >"$dir/batch_claim.sql"
# The least a call costs: jq_job of a job that does not exist, by its
# queue (one index probe), per call; through the coordinator, the cost of
# the hop to the queue's node that every delegated call pays.
for ((k = 0; k < N; k++)); do
	echo "SELECT * FROM jobqueue.jq_job('$q', -1);"
done >"$dir/empty_call.sql"
# N/2 pairs of a job and one that waits for it, in queue $1
dependent_pairs() {
	for ((k = 0; k < N / 2; k++)); do
		echo "SELECT jobqueue.jq_enqueue('$q', '{\"n\": $k}') AS p \\gset"
		echo "SELECT jobqueue.jq_enqueue('$1', '{\"after\": $k}', depends_on => ARRAY[:p]::bigint[]);"
		echo "SELECT id, token FROM jobqueue.jq_claim('$q', 1, 'bench') \\gset"
		echo "SELECT jobqueue.jq_complete('$q', :id, :token);"
		echo "SELECT id, token FROM jobqueue.jq_claim('$1', 1, 'bench') \\gset"
		echo "SELECT jobqueue.jq_complete('$1', :id, :token);"
	done
}
dependent_pairs "$q" >"$dir/dep_same.sql"
dependent_pairs "$q2" >"$dir/dep_cross.sql"
chmod 644 "$dir"/*.sql

# ms per job of script $2 on target $1 (single, coordinator, worker), of
# $3 jobs (default N)
run_ms() {
	local t0 t1 jobs=${3:-$N}
	t0=$(date +%s%N)
	case $1 in
		single) single_psql -f "$2" >/dev/null 2>&1 ;;
		coordinator) jq_citus_psql 0 -v ON_ERROR_STOP=0 -f "$2" >/dev/null 2>&1 ;;
		worker) jq_citus_psql "$wnode" -v ON_ERROR_STOP=0 -f "$2" >/dev/null 2>&1 ;;
	esac
	t1=$(date +%s%N)
	echo "scale=4; ($t1 - $t0) / 1000000 / $jobs" | bc
}
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

declare -A ms
paths="enqueue id_only"
[ "$queue_first" -gt 0 ] && paths="$paths queue_first batch_enqueue batch_claim dep_same dep_cross empty_call"
for r in $(seq "$ROUNDS"); do
	for t in single coordinator worker; do
		for p in $paths; do
			case $p in
				enqueue) ms[$t.$p]+="$(run_ms "$t" "$dir/enqueue.sql") " ;;
				batch_enqueue) ms[$t.$p]+="$(run_ms "$t" "$dir/enqueue_many.sql" "$NB") " ;;
				batch_claim) ms[$t.$p]+="$(run_ms "$t" "$dir/batch_claim.sql" "$NB") " ;;
				dep_*) ms[$t.$p]+="$(run_ms "$t" "$dir/$p.sql" "$((N / 2 * 2))") " ;;
				empty_call) ms[$t.$p]+="$(run_ms "$t" "$dir/$p.sql") " ;;
				*)
					run_ms "$t" "$dir/enqueue.sql" >/dev/null
					ms[$t.$p]+="$(run_ms "$t" "$dir/$p.sql") "
					;;
			esac
		done
		# leave the queue empty between rounds
		case $t in
			single) single_psql -c "DELETE FROM jobqueue.job_dependencies" \
				-c "DELETE FROM jobqueue.jobs WHERE queue_name IN ('$q', '$q2')" >/dev/null ;;
			*) jq_citus_psql 0 -c "DELETE FROM jobqueue.job_dependencies" \
				-c "DELETE FROM jobqueue.jobs WHERE queue_name IN ('$q', '$q2')" >/dev/null ;;
		esac
	done
done

{
	echo "jobqueue on Citus: ms per job, median of $ROUNDS runs of $N jobs, one client"
	echo "queue $q on worker $wnode; queue-first completion: $([ "$queue_first" -gt 0 ] && echo yes || echo 'not in this build')"
	printf '%-12s %-13s %8s %8s\n' path target ms ratio
	for p in $paths; do
		base=$(tr ' ' '\n' <<<"${ms[single.$p]}" | grep . | median)
		for t in single coordinator worker; do
			m=$(tr ' ' '\n' <<<"${ms[$t.$p]}" | grep . | median)
			printf '%-12s %-13s %8s %8s\n' "$p" "$t" "$m" "$(echo "scale=2; $m / $base" | bc)"
		done
	done
	echo "load average (1, 5, 15 min) at the start: $load0, at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/citus.txt"
