#!/usr/bin/env bash
# jobqueue benchmark, part "wal": the table work per job (issue 14), this
# build against an earlier one, side by side in one run.
#
#   sudo PG_CONFIG=... PG_CONFIG_OLD=... bench/wal.sh
#
# The sides are those of bench/regression.sh: "old" is BENCH_OLD_REF (here
# by default df97d69, the start of 1.3, before the changes measured) built
# with PG_CONFIG_OLD, "new" is this tree built with PG_CONFIG, each on a
# throwaway cluster of its own with the same settings.  "new-ret0" is the
# new side with the queue's retention at zero (a job is deleted when it
# succeeds), which the old side refuses.  Parts (BENCH_WAL_PARTS,
# default all of them):
#
#   wal      WAL bytes per job (pg_current_wal_insert_lsn() before and after,
#            divided by the jobs) for jq_enqueue + jq_claim(1) + jq_complete
#            one call each ("single", BENCH_WAL_JOBS jobs) and for
#            jq_enqueue_many + jq_claim + jq_complete_many of 100
#            ("batch"), one client, autovacuum off, after a CHECKPOINT on
#            an empty table (so no full-page images: every page is new).
#            Then the WAL of a VACUUM afterwards, and of jq_purge of
#            everything plus a VACUUM (what the kept history costs later).
#            WAL records by type for one run of each: wal_records.txt.
#   history  claim latency (p50 of BENCH_HIST_CLAIMS claims of 1 job by one
#            client, BENCH_ROUNDS rounds) with BENCH_HIST_FINISHED finished
#            jobs beside 10,000 pending, against the same 10,000 pending
#            alone: two databases of one cluster, measured alternately, so
#            that the load of the machine hits both alike; and the buffers
#            the claim touches in each (EXPLAIN (ANALYZE, BUFFERS)).
#   rates    jobs/s of jq_enqueue (1 per transaction), jq_enqueue_many
#            (100), claim + complete of 1 and of 100 (as regression.sh),
#            BENCH_SECONDS_RG seconds each, 1 client; and the time to reap
#            BENCH_WAL_REAP expired leases and to purge as many finished
#            jobs with jq_reap(10000) / jq_purge(q, NULL, 10000) in a loop
#            with a commit per batch (background worker off).  The sides
#            alternate, BENCH_ROUNDS rounds, median.
#   size     table + index size after BENCH_FLOW_FIRST and BENCH_FLOW_TOTAL
#            jobs through enqueue_many + claim + complete_many of 100 (4
#            clients) with the background worker purging (retention 1
#            second), and with retention 0 on the new side.
#
# Results: $RES/wal.txt (the summary, with the load average before and
# after) and wal.csv, wal_records.txt, wal_history.csv, wal_rates.csv,
# wal_size.csv, wal_explain.txt.  BENCH_KEEP=1 keeps the clusters.
BENCH_OLD_REF=${BENCH_OLD_REF:-df97d69}
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# Quick mode (BENCH_QUICK=1): every part, small and short.
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	: "${BENCH_WAL_JOBS:=2000}" "${BENCH_HIST_FINISHED:=100000}" "${BENCH_HIST_CLAIMS:=200}"
	: "${BENCH_WAL_REAP:=10000}" "${BENCH_SECONDS_RG:=2}" "${BENCH_WAL_SETTLE:=5}"
	: "${BENCH_WAL_FLOW_FIRST:=10000}" "${BENCH_WAL_FLOW_TOTAL:=100000}"
	: "${BENCH_WAL_PRELOAD_1:=20000}" "${BENCH_WAL_PRELOAD_100:=150000}"
fi
source "$BENCH_DIR/regression.sh"

BENCH_WAL_PARTS=${BENCH_WAL_PARTS:-wal history rates size}
BENCH_WAL_JOBS=${BENCH_WAL_JOBS:-10000}
BENCH_HIST_FINISHED=${BENCH_HIST_FINISHED:-1000000}
BENCH_HIST_CLAIMS=${BENCH_HIST_CLAIMS:-300}
BENCH_WAL_REAP=${BENCH_WAL_REAP:-100000}
BENCH_SECONDS_RG=${BENCH_SECONDS_RG:-5}
BENCH_WAL_FLOW_FIRST=${BENCH_WAL_FLOW_FIRST:-100000}
BENCH_WAL_FLOW_TOTAL=${BENCH_WAL_FLOW_TOTAL:-1000000}
BENCH_WAL_SETTLE=${BENCH_WAL_SETTLE:-15}	# seconds before the last size snapshot
BENCH_WAL_PRELOAD_1=${BENCH_WAL_PRELOAD_1:-60000}	# pending jobs before a run of claim1
BENCH_WAL_PRELOAD_100=${BENCH_WAL_PRELOAD_100:-400000}	# and of claim100

lsn() { q "SELECT pg_current_wal_insert_lsn()"; }
lsn_diff() { q "SELECT pg_wal_lsn_diff('$1', '$2')"; }
median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# Settings of a side for the measurements: no autovacuum, no worker (the
# size part switches the worker on).
wal_settings() {
	use_side "$1"
	q "ALTER SYSTEM SET autovacuum = off" >/dev/null
	q "ALTER SYSTEM SET jobqueue.worker_enabled = off" >/dev/null
	q "SELECT pg_reload_conf()" >/dev/null
	q "SET client_min_messages = warning; CREATE EXTENSION IF NOT EXISTS pg_walinspect" >/dev/null
}

# One WAL measurement: wal_run side retention mode round
wal_run() {
	local side=$1 ret=$2 mode=$3 round=$4 script n tx l0 l1 l2 l3 left label
	use_side "$side"
	label=$side
	[ "$ret" = 0 ] && label="$side-ret0"
	case $mode in
	single) script=ext_life1.sql n=1 ;;
	batch) script=ext_flow.sql n=100 ;;
	esac
	tx=$((BENCH_WAL_JOBS / n))
	q "SELECT jobqueue.jq_alter_queue('bench', retention => '$ret')" >/dev/null
	qm "TRUNCATE jobqueue.jobs" "CHECKPOINT" >/dev/null
	l0=$(lsn)
	pgb_checked "actually processed: $tx" off -c 1 -j 1 -t "$tx" -f "$BENCH_DIR/pgbench/$script" \
		-D q=bench -D n="$n" -D owner=w >/dev/null || exit 1
	l1=$(lsn)
	if [ "$round" = 1 ]; then
		# a synchronous commit flushes the WAL, so that it can be read
		q "SET client_min_messages = warning; SET synchronous_commit = on; CREATE TABLE IF NOT EXISTS public.bench_wal_flush (x int);
			INSERT INTO public.bench_wal_flush VALUES (1)" >/dev/null
		{
			echo "==== $label, $mode: WAL records of the statements, bytes per job"
			q "SELECT rpad(\"resource_manager/record_type\", 24) || lpad(count::text, 8) || ' records ' ||
					lpad(round(combined_size::numeric / $BENCH_WAL_JOBS, 1)::text, 7) || ' bytes/job'
				 FROM pg_get_wal_stats('$l0', '$l1', true) WHERE count > 0 ORDER BY combined_size DESC"
		} >>"$RES/wal_records.txt"
	fi
	left=$(q "SELECT count(*) FROM jobqueue.jobs WHERE status IN ('pending', 'running')")
	[ "$left" = 0 ] || { echo "wal: $left jobs not completed ($label $mode)" >&2; exit 1; }
	q "VACUUM jobqueue.jobs" >/dev/null
	l2=$(lsn)
	q "SELECT jobqueue.jq_purge('bench', '0', 100000000)" >/dev/null
	q "VACUUM jobqueue.jobs" >/dev/null
	l3=$(lsn)
	echo "$label,$mode,$round,$(lsn_diff "$l1" "$l0"),$(lsn_diff "$l2" "$l1"),$(lsn_diff "$l3" "$l2"),$BENCH_WAL_JOBS" >>"$RES/wal.csv"
	tail -n 1 "$RES/wal.csv" | awk -F, '{ printf "  %-20s %-6s round %s: %6.0f bytes/job, vacuum %4.0f, purge + vacuum %4.0f\n", $1, $2, $3, $4 / $7, $5 / $7, $6 / $7 }'
}

part_wal() {
	local round mode side
	log "wal: $BENCH_WAL_JOBS jobs per run, $BENCH_ROUNDS rounds"
	echo "side,mode,round,stmt_bytes,vacuum_bytes,purge_vacuum_bytes,jobs" >"$RES/wal.csv"
	: >"$RES/wal_records.txt"
	for round in $(seq 1 "$BENCH_ROUNDS"); do
		for mode in single batch; do
			wal_run old '7 days' "$mode" "$round"
			wal_run new '7 days' "$mode" "$round"
			wal_run new 0 "$mode" "$round"
		done
	done
	for side in old new; do
		use_side "$side"
		q "SELECT jobqueue.jq_alter_queue('bench', retention => '7 days')" >/dev/null
	done
}

wal_summary() {
	echo "WAL bytes per job (median of $BENCH_ROUNDS runs; ratio to old):"
	awk -F, 'NR > 1 { k = $1 "|" $2; s[k] = s[k] " " $4 / $7; v[k] = v[k] " " $5 / $7; p[k] = p[k] " " $6 / $7; keys[k] = 1 }
		function median(str,   a, n, i, j, t) {
			n = split(str, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		END {
			printf "%-20s %-7s %10s %7s %10s %18s %7s\n", "side", "mode", "statements", "ratio", "+ vacuum", "+ purge + vacuum", "ratio"
			n = split("old|single new|single new-ret0|single old|batch new|batch new-ret0|batch", order, " ")
			for (i = 1; i <= n; i++) {
				k = order[i]
				if (!(k in keys)) continue
				split(k, kk, "|")
				o = "old|" kk[2]
				all = median(s[k]) + median(v[k]) + median(p[k])
				oall = median(s[o]) + median(v[o]) + median(p[o])
				printf "%-20s %-7s %10.0f %7.2f %10.0f %18.0f %7.2f\n", kk[1], kk[2], median(s[k]), median(s[k]) / median(s[o]),
					median(v[k]), all, all / oall
			}
		}' "$RES/wal.csv"
}

# The history part: databases h0 (10,000 pending) and h1 (the same beside
# BENCH_HIST_FINISHED finished jobs) on side $1.
hist_load() {
	local side=$1 db
	use_side "$side"
	for db in h0 h1; do
		DB=postgres q "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1
		DB=postgres q "CREATE DATABASE $db" >/dev/null
		DB=$db qm "CREATE EXTENSION jobqueue" "SELECT jobqueue.jq_create_queue('bench')" \
			"SELECT jobqueue.jq_alter_queue('bench', notify => false)" >/dev/null
		if [ $db = h1 ]; then
			DB=$db q "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts,
					status, available_at, attempt_count, lease_owner, lease_token, started_at, finished_at)
				SELECT 'bench', '$PAYLOAD', 8, 'succeeded',
					   now() - interval '2 hours' + g * interval '1 microsecond', 1, 'w', 1,
					   now() - interval '2 hours', now() - interval '90 minutes'
				  FROM generate_series(1, $BENCH_HIST_FINISHED) AS g" >/dev/null
		fi
		DB=$db qm "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, available_at)
				SELECT 'bench', '$PAYLOAD', 8, now() - interval '1 hour' + g * interval '1 microsecond'
				  FROM generate_series(1, 10000) AS g" "VACUUM ANALYZE jobqueue.jobs" >/dev/null
	done
	q "CHECKPOINT" >/dev/null
}

hist_p50() {
	local side=$1 db=$2 round=$3 p50
	use_side "$side"
	rm -f "$WORK"/tmp/lat.*
	(cd "$WORK/tmp" && as_pguser env PGHOST="$JQ_PGHOST" PGPORT="$PORT" PGDATABASE="$db" \
		PGOPTIONS="-c synchronous_commit=off" pgbench -n -M prepared -c 1 -j 1 -t "$BENCH_HIST_CLAIMS" \
		-f "$BENCH_DIR/pgbench/ext_claim1_only.sql" -D q=bench -D owner=w -l --log-prefix=lat >/dev/null 2>&1) ||
		{ echo "history: pgbench failed" >&2; exit 1; }
	p50=$(awk '{ print $3 }' "$WORK"/tmp/lat.* | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	echo "$side,$db,$round,$p50,$(cut -d' ' -f1 /proc/loadavg)" >>"$RES/wal_history.csv"
	printf '  %-4s %s round %s: claim p50 %5d us\n' "$side" "$db" "$round" "$p50"
}

hist_explain() {
	local side=$1 db
	use_side "$side"
	for db in h0 h1; do
		echo "==== $side, $db: hand-written claim of 1 job, EXPLAIN (ANALYZE, BUFFERS), rolled back"
		DB=$db qm "BEGIN" "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
			WITH c AS (SELECT j.id FROM jobqueue.jobs j
						WHERE j.queue_name = 'bench' AND j.status = 'pending' AND j.available_at <= now()
						ORDER BY j.priority DESC, j.available_at, j.id
						LIMIT 1 FOR UPDATE SKIP LOCKED)
			UPDATE jobqueue.jobs j SET status = 'running', lease_token = j.lease_token + 1,
				lease_expires_at = now() + interval '1 minute'
			  FROM c WHERE j.id = c.id RETURNING j.id" "ROLLBACK"
		echo "==== $side, $db: index sizes (pages)"
		DB=$db q "SELECT c.relname || ' ' || pg_relation_size(c.oid) / 8192 FROM pg_class c
			JOIN pg_index i ON i.indexrelid = c.oid WHERE i.indrelid = 'jobqueue.jobs'::regclass ORDER BY 1"
	done >>"$RES/wal_explain.txt"
}

part_history() {
	local side round db
	log "history: claim p50 with $BENCH_HIST_FINISHED finished jobs beside 10,000 pending / without"
	echo "side,db,round,p50_us,load1" >"$RES/wal_history.csv"
	: >"$RES/wal_explain.txt"
	for side in old new; do
		hist_load "$side"
	done
	for round in $(seq 1 "$BENCH_ROUNDS"); do
		for side in old new; do
			for db in h0 h1; do
				hist_p50 "$side" "$db" "$round"
			done
		done
	done
	for side in old new; do
		hist_explain "$side"
		use_side "$side"
		DB=postgres qm "DROP DATABASE h0" "DROP DATABASE h1" >/dev/null
	done
}

history_summary() {
	echo "Claim p50 with $BENCH_HIST_FINISHED finished jobs beside 10,000 pending (h1) / 10,000 pending alone (h0), median of $BENCH_ROUNDS alternating rounds:"
	awk -F, 'NR > 1 { v[$1 "," $2] = v[$1 "," $2] " " $4 }
		function median(str,   a, n, i, j, t) {
			n = split(str, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		END {
			for (s = 1; s <= 2; s++) {
				side = s == 1 ? "old" : "new"
				if ((side ",h0") in v)
					printf "  %-4s h0 %5.0f us, h1 %5.0f us: %.2fx\n", side, median(v[side ",h0"]), median(v[side ",h1"]),
						median(v[side ",h1"]) / median(v[side ",h0"])
			}
		}' "$RES/wal_history.csv"
}

# One throughput run of the rates part: jobs/s
rate_run() {
	local side=$1 ret=$2 wl=$3 round=$4 script n preload out tx tps label=$1
	use_side "$side"
	[ "$ret" = 0 ] && label="$side-ret0"
	q "SELECT jobqueue.jq_alter_queue('bench', retention => '$ret')" >/dev/null
	case $wl in
	enqueue1) script=ext_enqueue1.sql n=1 preload=0 ;;
	enqueue100) script=ext_enqueueN.sql n=100 preload=0 ;;
	claim1) script=ext_claim1.sql n=1 preload=$BENCH_WAL_PRELOAD_1 ;;
	claim100) script=ext_claimN.sql n=100 preload=$BENCH_WAL_PRELOAD_100 ;;
	esac
	NO_CHECKPOINT=1 reset_jobs "$preload"
	q "CHECKPOINT" >/dev/null
	out=$(pgb off -c 1 -j 1 -T "$BENCH_SECONDS_RG" -f "$BENCH_DIR/pgbench/$script" \
		-D q=bench -D n="$n" -D owner=w)
	tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	tps=$(pgb_tps "$out")
	[ -n "$tx" ] && [ -n "$tps" ] || { echo "$out" >&2; exit 1; }
	echo "$label,$wl,$round,$(awk -v t="$tps" -v n="$n" 'BEGIN { printf "%.0f", t * n }'),$(cut -d' ' -f1 /proc/loadavg)" >>"$RES/wal_rates.csv"
	tail -n 1 "$RES/wal_rates.csv" | awk -F, '{ printf "  %-20s %-10s round %s: %8s jobs/s\n", $1, $2, $3, $4 }'
}

# Reap and purge: seconds for BENCH_WAL_REAP jobs, as jobs/s
maint_run() {
	local side=$1 what=$2 round=$3 t0 t1 left
	use_side "$side"
	q "SELECT jobqueue.jq_alter_queue('bench', retention => '7 days')" >/dev/null
	if [ "$what" = reap ]; then
		reset_jobs 0 "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, status,
				available_at, attempt_count, lease_owner, lease_token, started_at, lease_expires_at)
			SELECT 'bench', '$PAYLOAD', 8, 'running', now() - interval '1 hour', 1,
				   'crashed-worker', 1, now() - interval '2 minutes',
				   now() - interval '1 minute' - g * interval '1 microsecond'
			  FROM generate_series(1, $BENCH_WAL_REAP) AS g"
		t0=$(date +%s.%N)
		q "DO \$\$ BEGIN LOOP EXIT WHEN jobqueue.jq_reap(10000) = 0; COMMIT; END LOOP; END \$\$" >/dev/null
		t1=$(date +%s.%N)
		left=$(q "SELECT count(*) FROM jobqueue.jobs WHERE status = 'running'")
	else
		reset_jobs 0 "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts,
				status, available_at, attempt_count, lease_owner, lease_token, started_at, finished_at)
			SELECT 'bench', '$PAYLOAD', 8, 'succeeded',
				   now() - interval '30 days' + g * interval '1 microsecond', 1, 'w', 1,
				   now() - interval '30 days', now() - interval '30 days' + g * interval '1 microsecond'
			  FROM generate_series(1, $BENCH_WAL_REAP) AS g"
		t0=$(date +%s.%N)
		q "DO \$\$ BEGIN LOOP EXIT WHEN jobqueue.jq_purge('bench', NULL, 10000) = 0; COMMIT; END LOOP; END \$\$" >/dev/null
		t1=$(date +%s.%N)
		left=$(q "SELECT count(*) FROM jobqueue.jobs")
	fi
	[ "$left" = 0 ] || { echo "$what: $left jobs left on $side" >&2; exit 1; }
	echo "$side,$what,$round,$(awk -v a="$t0" -v b="$t1" -v n="$BENCH_WAL_REAP" 'BEGIN { printf "%.0f", n / (b - a) }'),$(cut -d' ' -f1 /proc/loadavg)" >>"$RES/wal_rates.csv"
	tail -n 1 "$RES/wal_rates.csv" | awk -F, '{ printf "  %-20s %-10s round %s: %8s jobs/s\n", $1, $2, $3, $4 }'
}

part_rates() {
	local round wl first second side
	log "rates: ${BENCH_SECONDS_RG}s per run, 1 client, $BENCH_ROUNDS rounds; reap and purge of $BENCH_WAL_REAP jobs"
	echo "side,workload,round,jobs_per_s,load1" >"$RES/wal_rates.csv"
	for round in $(seq 1 "$BENCH_ROUNDS"); do
		if ((round % 2)); then first=old second=new; else first=new second=old; fi
		for wl in enqueue1 enqueue100 claim1 claim100; do
			for side in $first $second; do
				rate_run "$side" '7 days' "$wl" "$round"
			done
			case $wl in claim*) rate_run new 0 "$wl" "$round" ;; esac
		done
		for wl in reap purge; do
			for side in $first $second; do
				maint_run "$side" "$wl" "$round"
			done
		done
	done
}

rates_summary() {
	echo "Rates, jobs/s (median of $BENCH_ROUNDS rounds, sides alternating; ratio to old):"
	awk -F, 'NR > 1 { k = $1 "|" $2; v[k] = v[k] " " $4; keys[k] = 1; wls[$2] = 1 }
		function median(str,   a, n, i, j, t) {
			n = split(str, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		END {
			n = split("enqueue1 enqueue100 claim1 claim100 reap purge", order, " ")
			for (i = 1; i <= n; i++) {
				w = order[i]
				if (!(("old|" w) in v)) continue
				o = median(v["old|" w])
				printf "  %-10s old %8.0f  new %8.0f (%.2fx)", w, o, median(v["new|" w]), median(v["new|" w]) / o
				if (("new-ret0|" w) in v)
					printf "  new-ret0 %8.0f (%.2fx)", median(v["new-ret0|" w]), median(v["new-ret0|" w]) / o
				printf "\n"
			}
		}' "$RES/wal_rates.csv"
}

# Size after many jobs flowed through, the worker purging.
size_snapshot() {
	local label=$1 flowed=$2 phase=$3
	echo "$label,$flowed,$phase,$(q "SELECT pg_relation_size('jobqueue.jobs') || ',' ||
			pg_indexes_size('jobqueue.jobs') || ',' || pg_total_relation_size('jobqueue.jobs') || ',' ||
			(SELECT count(*) FROM jobqueue.jobs)")" >>"$RES/wal_size.csv"
	tail -n 1 "$RES/wal_size.csv" | awk -F, '{ printf "  %-20s %8d jobs, %-11s: total %6.1f MB (table %6.1f, indexes %6.1f), %d rows\n", $1, $2, $3, $6 / 1048576, $4 / 1048576, $5 / 1048576, $7 }'
}

size_run() {
	local side=$1 ret=$2 label=$1
	use_side "$side"
	[ "$ret" = 0 ] && label="$side-ret0"
	reset_jobs 0
	qm "ALTER SYSTEM RESET autovacuum" "ALTER SYSTEM RESET jobqueue.worker_enabled" "SELECT pg_reload_conf()" >/dev/null
	q "SELECT jobqueue.jq_alter_queue('bench', retention => '$ret')" >/dev/null
	sleep 2
	pgb_checked 'actually processed' off -c 4 -j 4 -t $((BENCH_WAL_FLOW_FIRST / 400)) \
		-f "$BENCH_DIR/pgbench/ext_flow.sql" -D q=bench -D n=100 -D owner=w >/dev/null || exit 1
	size_snapshot "$label" "$BENCH_WAL_FLOW_FIRST" "right after"
	pgb_checked 'actually processed' off -c 4 -j 4 -t $(((BENCH_WAL_FLOW_TOTAL - BENCH_WAL_FLOW_FIRST) / 400)) \
		-f "$BENCH_DIR/pgbench/ext_flow.sql" -D q=bench -D n=100 -D owner=w >/dev/null || exit 1
	size_snapshot "$label" "$BENCH_WAL_FLOW_TOTAL" "right after"
	sleep "$BENCH_WAL_SETTLE"
	size_snapshot "$label" "$BENCH_WAL_FLOW_TOTAL" "$BENCH_WAL_SETTLE s later"
	wal_settings "$side"
	q "SELECT jobqueue.jq_alter_queue('bench', retention => '7 days')" >/dev/null
}

part_size() {
	log "size: $BENCH_WAL_FLOW_FIRST then $BENCH_WAL_FLOW_TOTAL jobs through enqueue_many/claim/complete_many(100), 4 clients, the worker purging"
	echo "side,jobs_flowed,phase,table_bytes,index_bytes,total_bytes,rows" >"$RES/wal_size.csv"
	size_run old '1 second'
	size_run new '1 second'
	size_run new 0
}

size_summary() {
	echo "Size (table + indexes) after $BENCH_WAL_FLOW_TOTAL jobs / after $BENCH_WAL_FLOW_FIRST, the worker purging:"
	awk -F, 'NR > 1 && $3 == "right after" { if (!($1 in first)) first[$1] = $6; else last[$1] = $6; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
		NR > 1 && $3 ~ / s later$/ { later[$1] = $6; settle = $3 }
		END {
			for (i = 1; i <= n; i++) {
				s = order[i]
				printf "  %-20s %7.1f MB -> %7.1f MB (%.2fx); %s %7.1f MB (%.2fx)\n", s, first[s] / 1048576, last[s] / 1048576,
					last[s] / first[s], settle, later[s] / 1048576, later[s] / first[s]
			}
		}' "$RES/wal_size.csv"
}

wal_main() {
	jq_install_packages
	# without PG_CONFIG_OLD, an installation of its own for the old side
	rg_old_installation
	rg_check_old
	local bin_new=$PG_BINDIR bin_old part
	bin_old=$("$PG_CONFIG_OLD" --bindir)
	rg_install
	mkdir -p "$RES"
	trap rg_cleanup EXIT
	rg_start old "$bin_old" "$(jq_free_port "${BENCH_WAL_PORT_OLD:-55581}" "${BENCH_WAL_PORT_OLD_MAX:-55589}")"
	rg_start new "$bin_new" "$(jq_free_port "${BENCH_WAL_PORT_NEW:-55591}" "${BENCH_WAL_PORT_NEW_MAX:-55599}")"
	wal_settings old
	wal_settings new
	for part in $BENCH_WAL_PARTS; do
		"part_$part"
	done
	{
		echo "jobqueue $(git -C "$JQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') (new) against $BENCH_OLD_REF (old)"
		echo "load average before: $BENCH_LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
		for part in $BENCH_WAL_PARTS; do
			echo
			"${part}_summary"
		done
	} | tee "$RES/wal.txt"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	wal_main
fi
