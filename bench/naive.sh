#!/usr/bin/env bash
# jobqueue benchmark, part "naive": the classic double-claim experiment.
# Runs alone (sudo bench/naive.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

part_naive() {
	log "naive claim vs jq_claim: 8 clients x 1250 claims on 10,000 jobs"
	local impl script t0 t1
	for impl in naive ext hand; do
		script=${impl}_claim1.sql
		reset_jobs 10000
		t0=$(date +%s.%N)
		pgb_checked 'number of transactions actually processed: 10000' \
			on -c 8 -j 8 -t 1250 -f "$BENCH_DIR/pgbench/$script" -D q=bench -D owner=w >/dev/null || exit 1
		t1=$(date +%s.%N)
		r "INSERT INTO naive SELECT '$impl', 8, 1250, $(q "SELECT count(*) || ', ' ||
				count(*) FILTER (WHERE status = 'succeeded') || ', ' ||
				count(*) FILTER (WHERE status = 'pending') || ', ' ||
				max(attempt_count) || ', ' ||
				count(*) FILTER (WHERE attempt_count > 1)
			FROM jobqueue.jobs"), $t1 - $t0" >/dev/null
	done
	r "SELECT impl, distinct_succeeded, max_attempts FROM naive" | sed 's/^/  /'
}

bench_part_main naive "${BASH_SOURCE[0]}"
