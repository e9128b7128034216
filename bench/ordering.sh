#!/usr/bin/env bash
# What ordering and fairness cost (bench/README.md, "Ordering and
# fairness").  On a throwaway cluster of its own (synchronous_commit = off,
# the background worker off), this build against itself:
#   1. claim + complete of batches of 10, 2 clients: a queue created
#      without options, a queue whose group policy was set and removed
#      again, and a queue without a policy whose jobs have group keys; the
#      ratios to the first (target: >= 0.97);
#   2. group_concurrency = 1, one group at its limit holding N pending jobs
#      beside 100 groups with 10 ready each: claim p50 of one job against a
#      queue without a policy holding the same jobs (N in ORD_SIZES);
#   3. group_ordered, ORD_GROUPS groups x ORD_PER_GROUP jobs (10,000 x
#      100, the issue's numbers), 8 clients claiming batches of 100 and
#      completing them: jobs/s against the same number of jobs without
#      groups (target: >= 0.5);
#   4. round_robin, one tenant with ORD_BIG jobs and 100 tenants with 100:
#      claim p50 of 1 and of 10 jobs against the same queue with
#      fairness = 'priority'.
# Every measure is the median of ORD_ROUNDS runs, the runs of the two sides
# alternating; the claim latencies are taken in a transaction that is
# rolled back, so every claim sees the same jobs.  The load average is
# printed before and after: the machine may be shared.
# Usage (as root): PG_CONFIG=... bash bench/ordering.sh
#   ORD_SECONDS=5 ORD_SECONDS3=5 ORD_ROUNDS=3 ORD_SIZES='10000 100000 1000000' ORD_BIG=1000000
#   ORD_GROUPS=10000 ORD_PER_GROUP=100 ORD_CLAIMS=500
#   ORD_PARTS='1 2 3 4' (the parts to run)
#   BENCH_INSTALL=0 (use the installed extension as is)
#   ORD_OUT=file (default bench/results/ordering.txt)
# ORD_QUICK=1: a smoke run (1,000 groups x 100, sizes up to 100,000, 1
# round); its ratios are not the ones to report.
source "$(dirname "$0")/lib.sh"

if [ "${ORD_QUICK:-0}" = 1 ]; then
	: "${ORD_ROUNDS:=1}" "${ORD_SIZES:=10000 100000}" "${ORD_BIG:=100000}"
	: "${ORD_GROUPS:=1000}" "${ORD_CLAIMS:=200}" "${ORD_SECONDS:=2}" "${ORD_SECONDS3:=2}"
fi
ORD_SECONDS=${ORD_SECONDS:-5}
# part 3: long enough to pass the full-page writes after the CHECKPOINT of
# settle (a strictly ordered claim dirties a page per group), short enough
# not to use up the jobs of a group (about 15 per group at 30,000 jobs/s)
ORD_SECONDS3=${ORD_SECONDS3:-5}
ORD_GROUPS=${ORD_GROUPS:-10000}
ORD_PER_GROUP=${ORD_PER_GROUP:-100}
ORD_PARTS=${ORD_PARTS:-1 2 3 4}
ORD_ROUNDS=${ORD_ROUNDS:-3}
ORD_SIZES=${ORD_SIZES:-10000 100000 1000000}
ORD_BIG=${ORD_BIG:-1000000}
ORD_CLAIMS=${ORD_CLAIMS:-500}
ORD_OUT=${ORD_OUT:-$RES/ordering.txt}
PG_BINDIR=$("$PG_CONFIG" --bindir)
export PG_CONFIG PG_BINDIR
WORK=$(mktemp -d /tmp/jq-bench-ordering.XXXXXX)
PORT=${BENCH_PORT:-$(jq_free_port 55470 55499)}
DB=bench

trap 'jq_cluster_stop; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/tmp"
chown -R "$JQ_PGUSER" "$WORK"

if [ "$BENCH_INSTALL" = 1 ]; then
	src=$(jq_workdir bench-ordering)
	jq_build_install "$src"
	rm -rf "$src"
fi

jq_cluster_init "$WORK" "$PORT" -U postgres --locale=C.UTF-8
jq_cluster_conf <<EOF
shared_preload_libraries = 'jobqueue'
jobqueue.worker_enabled = off
synchronous_commit = off
shared_buffers = 512MB
max_wal_size = 8GB
checkpoint_timeout = 30min
jit = off
autovacuum = off
EOF
jq_cluster_start
DB=postgres q "CREATE DATABASE bench" >/dev/null
q "CREATE EXTENSION jobqueue" >/dev/null

out() { echo "$*" | tee -a "$ORD_OUT"; }
: >"$ORD_OUT"
median() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }

out "jobqueue ordering benchmark, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$JQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
out "machine: $(nproc) CPUs, $(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo) RAM; $(q 'SELECT version()' | cut -d, -f1)"
out "load average (1, 5, 15 min) at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
out "uptime: $(uptime)"
out "parameters: ORD_SECONDS=$ORD_SECONDS ORD_SECONDS3=$ORD_SECONDS3 ORD_ROUNDS=$ORD_ROUNDS ORD_SIZES='$ORD_SIZES' ORD_BIG=$ORD_BIG ORD_CLAIMS=$ORD_CLAIMS ORD_GROUPS=$ORD_GROUPS ORD_PER_GROUP=$ORD_PER_GROUP ORD_PARTS='$ORD_PARTS'"
out ""

# pgbench scripts
cat >"$WORK/claimN.sql" <<'SQL'
SELECT coalesce(array_agg(c.id), '{}') AS ids, coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_claim(:q, :n, 'bench' || :client_id) c \gset
SELECT count(*) FROM jobqueue.jq_complete_many(:ids, :tokens);
SQL
cat >"$WORK/claim_only.sql" <<'SQL'
BEGIN;
SELECT count(*) FROM jobqueue.jq_claim(:q, :n, 'bench');
ROLLBACK;
SQL
chown "$JQ_PGUSER" "$WORK"/*.sql

# Start from nothing: no jobs, no groups, no queues.
wipe() {
	qm "TRUNCATE jobqueue.jobs, jobqueue.groups" \
		"SELECT count(jobqueue.jq_drop_queue(queue_name)) FROM jobqueue.queues" >/dev/null
}
# Insert $2 pending jobs into queue $1, oldest first, group key $3 (an SQL
# expression of g, the row number; NULL for none).  Through the table, as
# a bulk load: the group triggers fire as for any insert.
load() {
	q "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, available_at, group_key)
	   SELECT '$1', '$PAYLOAD', 8, now() - interval '1 hour' + g * interval '1 microsecond', ${3:-NULL}
	   FROM generate_series(1, $2) g" >/dev/null
}
settle() { qm "VACUUM ANALYZE jobqueue.jobs" "VACUUM ANALYZE jobqueue.groups" "CHECKPOINT" >/dev/null; }
# jobs/s of claim + complete: pgbench_jobs queue batch clients [seconds];
# the jobs that succeeded over the wall time of the pgbench run.  The queue
# must not run dry: that is noted in the results.
pgbench_jobs() {
	local before after t0 t1
	before=$(q "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = '$1' AND status = 'succeeded'")
	t0=$(date +%s.%N)
	pgb off -c "$3" -j "$3" -T "${4:-$ORD_SECONDS}" -D q="$1" -D n="$2" -f "$WORK/claimN.sql" >/dev/null
	t1=$(date +%s.%N)
	after=$(q "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = '$1' AND status = 'succeeded'")
	[ "$(q "SELECT count(*) > 0 FROM jobqueue.jobs WHERE queue_name = '$1' AND status = 'pending'")" = t ] ||
		echo "   warning: queue $1 ran dry during a run: its jobs/s is too low" >>"$ORD_OUT"
	awk -v n="$((after - before))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", n / (b - a) }'
}
# p50 in microseconds of a claim of $2 jobs of queue $1 (rolled back)
claim_p50() {
	rm -f "$WORK"/tmp/pgbench_log.*
	pgb off -c 1 -t "$ORD_CLAIMS" -l -D q="$1" -D n="$2" -f "$WORK/claim_only.sql" >/dev/null
	awk '{ print $3 }' "$WORK"/tmp/pgbench_log.* | median
}
explain() {
	out "EXPLAIN of the kept claim plan of '$1', n = $2 (jq_explain_claim):"
	q "SELECT * FROM jobqueue.jq_explain_claim('$1', $2)" | sed 's/^/    /' | tee -a "$ORD_OUT"
	out ""
}

part() { [[ " $ORD_PARTS " == *" $1 "* ]]; }

# ---------------------------------------------------------------------------
if part 1; then
log "1. no policy: claim + complete, batches of 10, 2 clients"
wipe
q "SELECT jobqueue.jq_create_queue('none')" >/dev/null
q "SELECT jobqueue.jq_create_queue('off', group_concurrency => 2, fairness => 'round_robin')" >/dev/null
q "SELECT jobqueue.jq_alter_queue('off', group_concurrency => 0, fairness => 'priority')" >/dev/null
q "SELECT jobqueue.jq_create_queue('keys')" >/dev/null
declare -A runs=()
order=(none off keys)
for r in $(seq "$ORD_ROUNDS"); do
	# each round starts with another variant
	for i in 0 1 2; do
		v=${order[$(((i + r) % 3))]}
		q "DELETE FROM jobqueue.jobs WHERE queue_name = '$v'" >/dev/null
		if [ $v = keys ]; then load $v 300000 "'g' || (g % 100)"; else load $v 300000; fi
		settle
		runs[$v]+="$(pgbench_jobs $v 10 2) "
	done
done
out "1. claim + complete, batches of 10, 2 clients, jobs/s (${ORD_ROUNDS} x ${ORD_SECONDS}s, alternating, 300,000 jobs loaded before each run):"
none=$(tr ' ' '\n' <<<"${runs[none]}" | grep . | median)
for v in none off keys; do
	m=$(tr ' ' '\n' <<<"${runs[$v]}" | grep . | median)
	case $v in
	none) what="queue created without options" ;;
	off) what="group policy set, then removed" ;;
	keys) what="no policy, jobs with group keys (100 groups)" ;;
	esac
	out "   $what: runs ${runs[$v]}-> median $m, ratio to no options $(ratio "$m" "$none")"
done
out "   (the previous release is not measured here: see bench/README.md)"
out ""
explain off 10
fi

# ---------------------------------------------------------------------------
if part 2; then
log "2. group_concurrency = 1, one group at its limit with N pending"
out "2. claim of 1 job, p50 us ($ORD_ROUNDS x $ORD_CLAIMS claims, rolled back): group_concurrency = 1, one group"
out "   at its limit holding N pending beside 100 groups with 10 ready; against a queue without a policy"
out "   holding the same N + 1,000 jobs"
for n in $ORD_SIZES; do
	wipe
	q "SELECT jobqueue.jq_create_queue('gc', group_concurrency => 1)" >/dev/null
	q "SELECT jobqueue.jq_create_queue('plain')" >/dev/null
	t0=$(date +%s)
	load gc "$((n + 1))" "'hot'"
	q "SELECT count(*) FROM jobqueue.jq_claim('gc', 1, 'holder', '1 day')" >/dev/null
	load gc 1000 "'g' || (g % 100)"
	load plain "$((n + 1000))"
	settle
	t1=$(date +%s)
	[ "$(q "SELECT running FROM jobqueue.groups WHERE queue_name = 'gc' AND group_key = 'hot'")" = 1 ] ||
		{ echo "the hot group is not at its limit" >&2; exit 1; }
	g=() p=()
	for r in $(seq "$ORD_ROUNDS"); do
		g+=("$(claim_p50 gc 1)")
		p+=("$(claim_p50 plain 1)")
	done
	gm=$(printf '%s\n' "${g[@]}" | median)
	pm=$(printf '%s\n' "${p[@]}" | median)
	out "   N = $n (loaded in $((t1 - t0)) s): group_concurrency ${g[*]} -> $gm; plain ${p[*]} -> $pm; ratio $(ratio "$gm" "$pm")"
done
out ""
explain gc 1
fi

# ---------------------------------------------------------------------------
if part 3; then
njobs=$((ORD_GROUPS * ORD_PER_GROUP))
log "3. group_ordered, $ORD_GROUPS groups x $ORD_PER_GROUP jobs, 8 clients, batches of 100"
wipe
q "SELECT jobqueue.jq_create_queue('ordered', group_ordered => true)" >/dev/null
q "SELECT jobqueue.jq_create_queue('ungrouped')" >/dev/null
o=() u=()
for r in $(seq "$ORD_ROUNDS"); do
	# each round starts with the other side; both load the same jobs
	for v in $([ $((r % 2)) = 1 ] && echo ordered ungrouped || echo ungrouped ordered); do
		q "DELETE FROM jobqueue.jobs WHERE queue_name = '$v'" >/dev/null
		if [ $v = ordered ]; then
			load ordered "$njobs" "'g' || (g % $ORD_GROUPS)"
		else
			load ungrouped "$njobs"
		fi
		settle
		if [ $v = ordered ]; then
			o+=("$(pgbench_jobs ordered 100 8 "$ORD_SECONDS3")")
		else
			u+=("$(pgbench_jobs ungrouped 100 8 "$ORD_SECONDS3")")
		fi
	done
done
om=$(printf '%s\n' "${o[@]}" | median)
um=$(printf '%s\n' "${u[@]}" | median)
out "3. claim + complete, batches of 100, 8 clients, jobs/s ($ORD_ROUNDS x ${ORD_SECONDS3}s, alternating, $njobs jobs loaded before each run):"
out "   group_ordered, $ORD_GROUPS groups x $ORD_PER_GROUP jobs: ${o[*]} -> $om"
out "   the same jobs without groups: ${u[*]} -> $um"
out "   ratio $(ratio "$om" "$um") (target >= 0.5)"
out "   load average (1, 5, 15 min) after part 3: $(cut -d' ' -f1-3 /proc/loadavg)"
out ""
explain ordered 100
fi

# ---------------------------------------------------------------------------
if part 4; then
log "4. round_robin, one tenant with $ORD_BIG jobs and 100 tenants with 100"
wipe
q "SELECT jobqueue.jq_create_queue('rr', fairness => 'round_robin')" >/dev/null
q "SELECT jobqueue.jq_create_queue('pr', fairness => 'priority')" >/dev/null
t0=$(date +%s)
for v in rr pr; do
	load $v "$ORD_BIG" "'big'"
	load $v 10000 "'t' || (g % 100)"
done
settle
t1=$(date +%s)
out "4. claim p50 us ($ORD_ROUNDS x $ORD_CLAIMS claims, rolled back), one tenant with $ORD_BIG jobs and 100 with 100"
out "   (loaded in $((t1 - t0)) s):"
for n in 1 10; do
	a=() b=()
	for r in $(seq "$ORD_ROUNDS"); do
		a+=("$(claim_p50 rr $n)")
		b+=("$(claim_p50 pr $n)")
	done
	am=$(printf '%s\n' "${a[@]}" | median)
	bm=$(printf '%s\n' "${b[@]}" | median)
	out "   claim of $n: round_robin ${a[*]} -> $am; priority ${b[*]} -> $bm; ratio $(ratio "$am" "$bm")"
done
out ""
explain rr 10
explain pr 10
fi

out "load average (1, 5, 15 min) at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
log "results in $ORD_OUT"
