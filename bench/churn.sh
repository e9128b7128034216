#!/usr/bin/env bash
# jobqueue benchmark, part "churn": sustained churn at a steady rate.
# Runs alone (sudo bench/churn.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

part_churn() {
	local how t0 pid out max
	if [ "$BENCH_CHURN_RATE" = auto ]; then
		# Half of what the same clients manage unthrottled.
		reset_jobs 0
		out=$(pgb on -c "$BENCH_CHURN_CLIENTS" -j "$BENCH_CHURN_CLIENTS" -T 10 \
			-f "$BENCH_DIR/pgbench/ext_churn.sql" -D q=bench -D owner=w)
		max=$(sed -n 's/^tps = \([0-9]*\).*/\1/p' <<<"$out")
		BENCH_CHURN_RATE=$((max / 2))
		echo "  unthrottled: $max jobs/s; churn rate $BENCH_CHURN_RATE jobs/s"
	fi
	if ((BENCH_BUDGET_MIN > 0)); then
		local left=$((BENCH_BUDGET_MIN * 60 - ($(date +%s) - BENCH_T0) - 90))
		if ((left < BENCH_CHURN_SECONDS)); then
			BENCH_CHURN_SECONDS=$((left < 60 ? 60 : left))
			echo "  churn shortened to ${BENCH_CHURN_SECONDS}s to end within ${BENCH_BUDGET_MIN} minutes"
		fi
	fi
	log "churn: ${BENCH_CHURN_SECONDS}s of enqueue+claim+complete at $BENCH_CHURN_RATE jobs/s, $BENCH_CHURN_CLIENTS clients"
	reset_jobs 0
	how=$(start_purging '10 seconds')
	rm -f "$WORK/tmp/churn.out" "$WORK/tmp/churn.sizes"
	(cd "$WORK/tmp" && as_pguser env PGHOST="$JQ_PGHOST" PGPORT="$PORT" PGDATABASE=bench \
		pgbench -n -M prepared -c "$BENCH_CHURN_CLIENTS" -j "$BENCH_CHURN_CLIENTS" \
		-T "$BENCH_CHURN_SECONDS" -R "$BENCH_CHURN_RATE" -P "$BENCH_SAMPLE" \
		-f "$BENCH_DIR/pgbench/ext_churn.sql" -D q=bench -D owner=w >"$WORK/tmp/churn.out" 2>&1) &
	pid=$!
	t0=$(date +%s.%N)
	while kill -0 "$pid" 2>/dev/null; do
		sleep "$BENCH_SAMPLE"
		q "SELECT $(date +%s.%N) - $t0, pg_total_relation_size('jobqueue.jobs'),
				  pg_relation_size('jobqueue.jobs'), pg_indexes_size('jobqueue.jobs'),
				  s.n_live_tup, s.n_dead_tup,
				  count(*) FILTER (WHERE j.status = 'pending'),
				  count(*) FILTER (WHERE j.status = 'running'),
				  count(*) FILTER (WHERE j.status IN ('succeeded', 'cancelled', 'dead'))
			 FROM pg_stat_user_tables s, jobqueue.jobs j
			WHERE s.relid = 'jobqueue.jobs'::regclass
			GROUP BY s.n_live_tup, s.n_dead_tup" >>"$WORK/tmp/churn.sizes" || true
	done
	wait "$pid" || { cat "$WORK/tmp/churn.out" >&2; exit 1; }
	stop_purging
	# pgbench progress lines: "progress: 5.0 s, 499.8 tps, lat 1.234 ms stddev 0.5, lag 0.1 ms"
	sed -n 's/^progress: \([0-9.]*\) s, \([0-9.]*\) tps, lat \([0-9.]*\) ms.*lag \([0-9.]*\) ms.*/\1,\2,\3,\4/p' \
		"$WORK/tmp/churn.out" >"$WORK/tmp/churn.tps"
	echo "churn: ${BENCH_CHURN_SECONDS} s at $BENCH_CHURN_RATE jobs/s (half of the unthrottled ${max:-?} jobs/s), $BENCH_CHURN_CLIENTS clients, synchronous_commit on, purging by $how with retention 10 s" \
		>"$RES/churn_settings.txt"
	# Join each throughput sample with the nearest size sample.
	awk -F'|' -v OFS=, -v how="$how" 'NR == FNR { t[NR] = $0; n = NR; next }
		{ split(t[1], best, ","); bd = 1e9
		  for (i = 1; i <= n; i++) { split(t[i], a, ","); d = a[1] - $1; if (d < 0) d = -d
			if (d < bd) { bd = d; split(t[i], best, ",") } }
		  printf "%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", $1, best[2], best[3], best[4],
			$2, $3, $4, $5, $6, $7, $8, $9, how }' \
		"$WORK/tmp/churn.tps" "$WORK/tmp/churn.sizes" |
		r_copy "churn (t, tps, lat_ms, lag_ms, total_bytes, table_bytes, index_bytes, n_live_tup, n_dead_tup, pending, running, finished, purging)" "FORMAT csv"
	grep -E '^(number of transactions|latency average|tps)' "$WORK/tmp/churn.out" | sed 's/^/  /'
}

bench_part_main churn "${BASH_SOURCE[0]}"
