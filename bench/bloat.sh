#!/usr/bin/env bash
# jobqueue benchmark, part "bloat": table size after many jobs flowed through.
# Runs alone (sudo bench/bloat.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

snapshot_size() {
	local purging=$1 flowed=$2 phase=$3
	r "INSERT INTO bloat VALUES ('$purging', $flowed, '$phase', $(q "
		SELECT pg_relation_size('jobqueue.jobs') || ', ' ||
			   pg_indexes_size('jobqueue.jobs') || ', ' ||
			   pg_total_relation_size('jobqueue.jobs') || ', ' ||
			   n_live_tup || ', ' || n_dead_tup || ', ' ||
			   (SELECT count(*) FROM jobqueue.jobs)
		  FROM pg_stat_user_tables WHERE relid = 'jobqueue.jobs'::regclass"))" >/dev/null
}

# $1 more jobs through enqueue_many + claim + complete_many of 100, 4 clients.
flow() {
	pgb_checked 'actually processed' off -c 4 -j 4 -t $(($1 / 400)) -f "$BENCH_DIR/pgbench/ext_flow.sql" \
		-D q=bench -D n=100 -D owner=w >/dev/null || exit 1
}

part_bloat() {
	log "bloat: $BENCH_FLOW_FIRST then $BENCH_FLOW_TOTAL jobs through enqueue_many/claim/complete_many(100), 4 clients"
	local purging how
	for purging in off on; do
		reset_jobs 0
		how=none
		[ $purging = on ] && how=$(start_purging)
		flow "$BENCH_FLOW_FIRST"
		snapshot_size "$how" "$BENCH_FLOW_FIRST" "right after"
		flow $((BENCH_FLOW_TOTAL - BENCH_FLOW_FIRST))
		snapshot_size "$how" "$BENCH_FLOW_TOTAL" "right after"
		sleep "$BENCH_BLOAT_SETTLE"
		snapshot_size "$how" "$BENCH_FLOW_TOTAL" "$BENCH_BLOAT_SETTLE s later"
		stop_purging
	done
	r "SELECT purging, jobs_flowed, phase, pg_size_pretty(total_bytes), n_dead_tup FROM bloat" | sed 's/^/  /'
}

bench_part_main bloat "${BASH_SOURCE[0]}"
