#!/usr/bin/env bash
# jobqueue benchmark, part "throughput": claim+complete and enqueue throughput, jobqueue vs hand-written SQL.
# Runs alone (sudo bench/throughput.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

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
	tps=$(pgb_tps "$out")
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

bench_part_main throughput "${BASH_SOURCE[0]}"
