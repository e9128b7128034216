#!/usr/bin/env bash
# jobqueue benchmark, part "instructions": the CPU instructions the server
# executes per job, counted by valgrind (callgrind), for this build against
# a previous release and against the hand-written statements.
#
#   sudo PG_CONFIG=... PG_CONFIG_OLD=... bench/instructions.sh
#
# Wall-clock ratios on a shared 2-CPU machine swing by 10-20 % between runs
# (bench/README.md); an instruction count does not depend on the load, so a
# difference of 1 % is visible in one run.  It is not the whole cost (cache
# misses, locks and waits are not counted), which is why the throughput
# parts stay the reference; this part shows where the work per job changed.
#
# Two clusters, as in bench/regression.sh: "new" runs this tree (PG_CONFIG),
# "old" the release BENCH_OLD_REF (default d51139e, 1.1) built into
# PG_CONFIG_OLD.  Each postmaster runs under callgrind, which writes one
# count per backend when it exits.  A workload runs as one pgbench client
# twice, T1 and T2 transactions, each from the same freshly loaded table;
# (count(T2) - count(T1)) / (T2 - T1) is the count per transaction without
# the connection's start and end, divided by the jobs per transaction.
#
#   claim1   jq_claim of 1, then jq_complete                 (both sides)
#   claimN   jq_claim of 100, then jq_complete_many          (both sides)
#   hand1    the hand-written claim of 1 and complete on jobqueue's table
#            (bench/pgbench/hand_claim1.sql)                 (new side)
#   handN    the same for 100 (hand_claimN.sql)              (new side)
#   cac1, cacN  jq_complete_and_claim of 1 and of 100, when the new side
#            has it                                          (new side)
#   enq1, enqN  jq_enqueue of 1, jq_enqueue_many of 100      (both sides)
#
# Results: $RES/instructions.csv and $RES/instructions.txt.  Needs valgrind.
# Environment: BENCH_INSTALL (1: build and install both sides).
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BENCH_OLD_REF=${BENCH_OLD_REF:-d51139e}
PG_CONFIG_OLD=${PG_CONFIG_OLD:-}

declare -A IN_BIN IN_DIR IN_PORT IN_HOST IN_DATA IN_PID

in_use() {
	PG_BINDIR=${IN_BIN[$1]}
	PORT=${IN_PORT[$1]}
	JQ_PGHOST=${IN_HOST[$1]}
	JQ_PGDATA=${IN_DATA[$1]}
	JQ_PGPID=${IN_PID[$1]}
}

# in_start side bindir port: a cluster whose postmaster runs under callgrind
in_start() {
	local side=$1 dir=$BENCH_DIR/work-instr-$1
	PG_BINDIR=$2
	jq_stop_leftover "$dir/data"
	rm -rf "$dir"
	mkdir -p "$dir/cg"
	chown -R "$JQ_PGUSER" "$dir"
	jq_cluster_init "$dir" "$3" -U postgres --locale=C.UTF-8
	jq_cluster_conf <<EOF

# ---- jobqueue instruction count settings (both sides alike) ----
shared_preload_libraries = 'jobqueue'
shared_buffers = 512MB
synchronous_commit = off
autovacuum = off
jit = off
max_wal_size = 8GB
checkpoint_timeout = 30min
EOF
	JQ_CLUSTER_TIMEOUT=180 jq_cluster_start valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$dir/cg/cg.%p"
	IN_BIN[$side]=$2
	IN_DIR[$side]=$dir
	IN_PORT[$side]=$3
	IN_HOST[$side]=$JQ_PGHOST
	IN_DATA[$side]=$JQ_PGDATA
	IN_PID[$side]=$JQ_PGPID
	in_use "$side"
	DB=postgres q "CREATE DATABASE bench" >/dev/null
	q "CREATE EXTENSION jobqueue" >/dev/null
	q "SELECT jobqueue.jq_create_queue('bench')" >/dev/null
	q "SELECT jobqueue.jq_alter_queue('bench', notify => false)" >/dev/null
	log "side $side: jobqueue $(q "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'") under callgrind"
}

in_cleanup() {
	local side
	for side in "${!IN_DATA[@]}"; do
		in_use "$side"
		jq_cluster_stop
	done
}

# The count of the pgbench backend of one run: in_count side script t n load
in_count() {
	local side=$1 script=$2 t=$3 n=$4 load=$5 before f best=0 c
	in_use "$side"
	q "TRUNCATE jobqueue.jobs" >/dev/null
	q "SELECT count(*) FROM jobqueue.jq_enqueue_many('bench',
		ARRAY(SELECT '$PAYLOAD'::jsonb FROM generate_series(1, $load)))" >/dev/null
	q "VACUUM ANALYZE jobqueue.jobs" >/dev/null
	q "CHECKPOINT" >/dev/null
	before=$(ls "${IN_DIR[$side]}/cg")
	# (the combined call's first turn completes nothing: empty arrays)
	as_pguser pgbench -h "$JQ_PGHOST" -p "$PORT" -U postgres -n -M prepared -c 1 -t "$t" \
		-f "$BENCH_DIR/pgbench/$script" -D q=bench -D n="$n" -D owner=bench-worker \
		-D ids='{}' -D tokens='{}' bench >/dev/null
	# the backend writes its count when it exits
	sleep 2
	for f in $(comm -13 <(echo "$before") <(ls "${IN_DIR[$side]}/cg")); do
		c=$(sed -n 's/^\(totals\|summary\): *\([0-9]*\).*/\2/p' "${IN_DIR[$side]}/cg/$f" | head -n 1)
		[ -n "$c" ] && [ "$c" -gt "$best" ] && best=$c
	done
	[ "$best" -gt 0 ] || { echo "instructions: no count for $script (did pgbench fail?)" >&2; return 1; }
	echo "$best"
}

# in_measure side workload: appends to instructions.csv
in_measure() {
	local side=$1 wl=$2 script n t1 t2 a b
	case $wl in
	claim1) script=ext_claim1.sql n=1 ;;
	claimN) script=ext_claimN.sql n=100 ;;
	hand1) script=hand_claim1.sql n=1 ;;
	handN) script=hand_claimN.sql n=100 ;;
	cac1) script=ext_complete_and_claim.sql n=1 ;;
	cacN) script=ext_complete_and_claim.sql n=100 ;;
	enq1) script=ext_enqueue1.sql n=1 ;;
	enqN) script=ext_enqueueN.sql n=100 ;;
	esac
	if [ "$n" = 1 ]; then t1=300 t2=900; else t1=10 t2=30; fi
	a=$(in_count "$side" "$script" "$t1" "$n" $((t2 * n + 1000)))
	b=$(in_count "$side" "$script" "$t2" "$n" $((t2 * n + 1000)))
	awk -v s="$side" -v w="$wl" -v a="$a" -v b="$b" -v t1="$t1" -v t2="$t2" -v n="$n" \
		'BEGIN { printf "%s,%s,%.0f\n", s, w, (b - a) / (t2 - t1) / n }' >>"$RES/instructions.csv"
	tail -n 1 "$RES/instructions.csv" | awk -F, '{ printf "  %-4s %-7s %12s instructions per job\n", $1, $2, $3 }'
}

in_summary() {
	awk -F, 'NR > 1 { v[$1 "," $2] = $3 }
		function row(label, a, b) {
			if ((a in v) && (b in v))
				printf "%-52s %12.0f %12.0f %7.3f\n", label, v[a], v[b], v[a] / v[b]
		}
		END {
			printf "%-52s %12s %12s %7s\n", "comparison (instructions per job)", "reference", "measured", "ref/meas"
			row("claim1: old / this build", "old,claim1", "new,claim1")
			row("claimN: old / this build", "old,claimN", "new,claimN")
			row("enq1: old / this build", "old,enq1", "new,enq1")
			row("enqN: old / this build", "old,enqN", "new,enqN")
			row("claim1: hand-written / jq_claim + jq_complete", "new,hand1", "new,claim1")
			row("claimN: hand-written / jq_claim + jq_complete_many", "new,handN", "new,claimN")
			row("1 per call: hand-written / jq_complete_and_claim", "new,hand1", "new,cac1")
			row("100 per call: hand-written / jq_complete_and_claim", "new,handN", "new,cacN")
		}' "$RES/instructions.csv"
	echo "(ref/meas above 1: the measured side executes fewer instructions per job)"
}

part_instructions() {
	local wl
	command -v valgrind >/dev/null || { echo "instructions: valgrind is not installed" >&2; return 1; }
	[ -n "$PG_CONFIG_OLD" ] || { echo "instructions: set PG_CONFIG_OLD (see bench/regression.sh)" >&2; return 1; }
	if [ "$BENCH_INSTALL" = 1 ]; then
		source "$BENCH_DIR/regression.sh"
		rg_install
	fi
	trap in_cleanup EXIT
	in_start old "$("$PG_CONFIG_OLD" --bindir)" "$(jq_free_port 55460 55469)"
	in_start new "$("$PG_CONFIG" --bindir)" "$(jq_free_port 55470 55479)"
	echo "side,workload,instructions_per_job" >"$RES/instructions.csv"
	for wl in claim1 claimN enq1 enqN; do
		in_measure old "$wl"
		in_measure new "$wl"
	done
	in_measure new hand1
	in_measure new handN
	in_use new
	if [ "$(q "SELECT to_regprocedure('jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])') IS NOT NULL")" = t ] &&
		[ -f "$BENCH_DIR/pgbench/ext_complete_and_claim.sql" ]; then
		in_measure new cac1
		in_measure new cacN
	fi
	{
		echo "jobqueue $(git -C "$JQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') (new) against $BENCH_OLD_REF (old); valgrind $(valgrind --version)"
		in_summary
	} | tee "$RES/instructions.txt"
	in_cleanup
	trap - EXIT
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	jq_install_packages
	mkdir -p "$RES"
	part_instructions
fi
