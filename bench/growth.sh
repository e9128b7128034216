#!/usr/bin/env bash
# jobqueue benchmark, part "growth": claim latency against backlog size.
# Runs alone (sudo bench/growth.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Claim latency at the current table contents: BENCH_ROUNDS rounds of
# BENCH_LAT_CLAIMS claims by one client, jobqueue and hand-written alternating.
latency_rounds() {
	local size=$1 pending=$2 finished=$3 round impl
	for round in $(seq 1 "$BENCH_ROUNDS"); do
		for impl in ext hand; do
			rm -f "$WORK"/tmp/lat.*
			pgb_checked "actually processed: $BENCH_LAT_CLAIMS" off -c 1 -j 1 -t "$BENCH_LAT_CLAIMS" \
				-f "$BENCH_DIR/pgbench/${impl}_claim1_only.sql" -D q=bench -D owner=w -l --log-prefix=lat \
				>/dev/null || exit 1
			awk -v s="$size" -v p="$pending" -v f="$finished" -v i="$impl" -v r="$round" \
				'{ print s "," p "," f "," i "," r "," $3 }' "$WORK"/tmp/lat.* |
				r_copy latency_log "FORMAT csv"
		done
	done
	# The plans, with the buffers they touch, at this size.
	{
		echo "==== $size: jq_explain_claim('bench', 1)"
		q "SELECT jobqueue.jq_explain_claim('bench', 1)"
		echo "==== $size: hand-written claim of 1 job, EXPLAIN (ANALYZE, BUFFERS), rolled back"
		qm "BEGIN" "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
			WITH c AS (SELECT j.id FROM jobqueue.jobs j
						WHERE j.queue_name = 'bench' AND j.status = 'pending' AND j.available_at <= now()
						ORDER BY j.priority DESC, j.available_at, j.id
						LIMIT 1 FOR UPDATE SKIP LOCKED)
			UPDATE jobqueue.jobs j SET status = 'running', lease_token = j.lease_token + 1
			  FROM c WHERE j.id = c.id RETURNING j.id" "ROLLBACK"
		echo
	} >>"$RES/explain_growth.txt"
	r "SELECT impl, percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_us),
			percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_us)
		 FROM latency_log WHERE size = '$size' GROUP BY impl" |
		awk -F'|' -v s="$size" '{ printf "  %-22s %-4s p50 %6d us  p99 %6d us\n", s, $1, $2, $3 }'
}

part_growth() {
	log "growth: claim latency with ${BENCH_GROWTH_SIZES// /, } pending jobs"
	local n t0 t1
	for n in $BENCH_GROWTH_SIZES; do
		t0=$(date +%s)
		reset_jobs "$n"
		t1=$(date +%s)
		echo "  loaded $n pending jobs in $((t1 - t0)) s"
		latency_rounds "${n} pending" "$n" 0
	done
	n=$BENCH_GROWTH_FINISHED
	t0=$(date +%s)
	reset_jobs "$BENCH_GROWTH_PENDING" "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts,
			status, available_at, attempt_count, lease_owner, lease_token, started_at, finished_at)
		SELECT 'bench', '$PAYLOAD', 8, 'succeeded',
			   now() - interval '2 hours' + g * interval '1 microsecond', 1, 'w', 1,
			   now() - interval '2 hours', now() - interval '90 minutes'
		  FROM generate_series(1, $n) AS g"
	t1=$(date +%s)
	echo "  loaded $n finished + $BENCH_GROWTH_PENDING pending jobs in $((t1 - t0)) s"
	latency_rounds "${BENCH_GROWTH_PENDING} pending + ${n} finished" "$BENCH_GROWTH_PENDING" "$n"
}

bench_part_main growth "${BASH_SOURCE[0]}"
