#!/usr/bin/env bash
# Run the pg_regress, pgTAP and isolation suites once against a server that
# runs under valgrind memcheck, and report every memory error that involves
# jobqueue.so.  Slow (tens of minutes on two cores) and not part of
# scripts/test.sh; run it after changes to the C code.
#
# Usage: sudo scripts/valgrind.sh        (or as the cluster owner, with the
#        extension already buildable; PG_CONFIG=... picks the installation)
#        JQ_VALGRIND_PARTS="regress pgtap isolation worker" (the default)
#        picks the parts to run; JQ_VALGRIND_PORT the server's port.
#
# How it works: the extension is built (-O2 -g, warnings as errors) and
# installed; a throwaway cluster with test/regress.conf is started with the
# postmaster under "valgrind --trace-children=yes", so every backend and
# background worker it forks runs under memcheck too; the suites run against
# it (pg_regress in installcheck mode); the server is stopped and the logs are
# read.  An error counts as ours when a frame of jobqueue.so appears anywhere
# in its report, including the origin of an uninitialised value
# (--track-origins).
# Errors without a jobqueue frame are counted and listed by kind.
#
# Limits: Debian's postgres is not built with USE_VALGRIND, so memcheck sees
# palloc's blocks, not its chunks: reads and writes of uninitialised memory
# and of memory outside any block are caught, an overrun into the next chunk
# of the same block is not.  Leak checking is off (memory contexts free by
# the block).  Expected-output differences under valgrind are reported, but
# some tests depend on timing and may differ only because of the slowdown.
#
# Exit status: 0 when no error involves jobqueue.so, 1 otherwise.
source "$(dirname "$0")/common.sh"

jq_install_packages valgrind
dir=$(jq_workdir valgrind)
jq_build_install "$dir"

port=${JQ_VALGRIND_PORT:-54329}
logs=$dir/valgrind_logs
pgxs=$(dirname "$("$PG_CONFIG" --pgxs)")/..
pg_regress=$pgxs/test/regress/pg_regress
pg_isolation_regress=$pgxs/test/isolation/pg_isolation_regress

log "starting a cluster under valgrind in $dir/data (port $port)"
as_pguser mkdir -p "$logs"
jq_cluster_init "$dir" "$port" --no-locale
jq_cluster_conf <"$dir/test/regress.conf"
jq_cluster_conf <<EOF
huge_pages = off
fsync = off
# valgrind makes everything 20-50 times slower
statement_timeout = 0
log_min_messages = warning
# JIT compilation under valgrind takes minutes and only checks LLVM
jit = off
EOF

# valgrind is slow to start and to stop
JQ_CLUSTER_TIMEOUT=600
trap jq_cluster_stop EXIT
jq_cluster_start valgrind --quiet --trace-children=yes --leak-check=no \
	--track-origins=yes --num-callers=40 --read-inline-info=yes \
	--suppressions="$dir/scripts/valgrind.supp" \
	--error-markers=VALGRINDERROR-BEGIN,VALGRINDERROR-END \
	--log-file="$logs/%p.log"

regress_tests=$(cd "$dir/sql" && ls [0-9]*.sql 2>/dev/null | sed 's/\.sql$//' | tr '\n' ' ')
pgtap_tests=$(cd "$dir/test/pgtap/sql" 2>/dev/null && ls *.sql 2>/dev/null | sed 's/\.sql$//' | tr '\n' ' ' || true)
isolation_tests=$(cd "$dir/test/isolation/specs" 2>/dev/null && ls *.spec 2>/dev/null | sed 's/\.spec$//' | tr '\n' ' ' || true)
common_opts=(--host="$JQ_PGHOST" --port="$port" --bindir="$PG_BINDIR")

suites=0
suite_failures=0
run_suite() {
	local name=$1
	shift
	log "$name under valgrind"
	suites=$((suites + 1))
	if ! as_pguser "$@" 2>&1 | tee -a "$dir/valgrind_suites.log"; then
		suite_failures=$((suite_failures + 1))
	fi
}
cd "$dir"
parts=" ${JQ_VALGRIND_PARTS:-regress pgtap isolation worker} "
[[ $parts == *" regress "* ]] || regress_tests=
[[ $parts == *" pgtap "* ]] || pgtap_tests=
[[ $parts == *" isolation "* ]] || isolation_tests=
if [ -n "$regress_tests" ]; then
	run_suite "pg_regress" "$pg_regress" "${common_opts[@]}" --inputdir=. \
		--outputdir=valgrind_regress --dbname=contrib_regression \
		--load-extension=jobqueue $regress_tests
fi
if [ -n "$pgtap_tests" ]; then
	run_suite "pgTAP" "$pg_regress" "${common_opts[@]}" --inputdir=test/pgtap \
		--outputdir=valgrind_pgtap --dbname=jobqueue_pgtap $pgtap_tests
fi
if [ -n "$isolation_tests" ]; then
	run_suite "isolation" "$pg_isolation_regress" "${common_opts[@]}" \
		--inputdir=test/isolation --outputdir=valgrind_isolation \
		--dbname=isolation_regression --load-extension=jobqueue $isolation_tests
fi

# The background worker and launcher, which the suites run with
# worker_enabled = off: a database whose worker reaps expired leases, wakes
# queues and purges, then is dropped (the utility hook stops its worker).
psql_vg() {
	as_pguser psql -X -q -v ON_ERROR_STOP=1 -h "$JQ_PGHOST" -p "$port" "$@"
}
worker_smoke() {
	local db=jobqueue_valgrind_worker reaped purged i
	psql_vg -d postgres -c "ALTER SYSTEM SET jobqueue.worker_enabled = on" \
		-c "ALTER SYSTEM SET jobqueue.launcher_interval = '500ms'" \
		-c "ALTER SYSTEM SET jobqueue.reap_interval = '200ms'" \
		-c "SELECT pg_reload_conf()" -c "CREATE DATABASE $db" >/dev/null
	psql_vg -d "$db" >/dev/null <<-'EOF'
		CREATE EXTENSION jobqueue;
		SELECT jobqueue.jq_create_queue('vg', max_attempts => 2,
			lease_duration => '1 second', backoff_base => '1 second',
			retention => '1 second');
		SELECT count(*) FROM jobqueue.jq_enqueue_many('vg',
			(SELECT array_agg(jsonb_build_object('i', g)) FROM generate_series(1, 50) g));
		-- a worker that takes 20 jobs and dies: its leases expire
		SELECT count(*) FROM jobqueue.jq_claim('vg', 20, 'lost');
		-- a worker that finishes 10: purged once the retention has passed
		SELECT count(*) FROM jobqueue.jq_claim('vg', 10, 'good', '1 hour') c,
			LATERAL jobqueue.jq_complete(c.id, c.token) ok WHERE ok;
	EOF
	reaped=0
	purged=0
	for i in $(seq 300); do
		read -r reaped purged < <(psql_vg -d "$db" -A -t -F ' ' -c \
			"SELECT COALESCE(reaped, 0), COALESCE(purged, 0) FROM jobqueue.jq_worker_status()")
		[ "${reaped:-0}" -ge 20 ] && [ "${purged:-0}" -ge 10 ] && break
		sleep 1
	done
	echo "worker: reaped $reaped and purged $purged jobs (expected 20 and 10)"
	psql_vg -d postgres -c "DROP DATABASE $db" >/dev/null
	[ "${reaped:-0}" -ge 20 ] && [ "${purged:-0}" -ge 10 ]
}
if [[ $parts == *" worker "* ]]; then
	log "background worker under valgrind"
	suites=$((suites + 1))
	worker_smoke 2>&1 | tee -a "$dir/valgrind_suites.log" || suite_failures=$((suite_failures + 1))
fi

log "stopping the server"
jq_cluster_stop

# Split the logs into one report per error; keep those that mention us.
ours=$dir/valgrind_jobqueue_errors.txt
others=$dir/valgrind_other_errors.txt
kinds=$dir/valgrind_other_kinds.txt
: >"$ours"
: >"$others"
: >"$kinds"
# Frames of ours read "jq_claim (lifecycle.c:321)" (the library has debug
# information) or "(in .../jobqueue.so)".  Passed through the environment:
# awk -v would eat the backslashes.
our_files=$(cd "$dir/src" && ls *.c | sed 's/\./\\./' | paste -sd '|')
export JQ_OUR_FRAME='jobqueue\.so|: (jq_[a-z0-9_]+|_PG_init) \(|\(('"$our_files"'):[0-9]+\)'
awk -v ours="$ours" -v others="$others" -v kinds="$kinds" '
	BEGIN { our_frame = ENVIRON["JQ_OUR_FRAME"] }
	/VALGRINDERROR-BEGIN/ { inblock = 1; block = "log " FILENAME "\n"; kind = ""; next }
	/VALGRINDERROR-END/ {
		inblock = 0
		if (block ~ our_frame) print block >> ours
		else { print block >> others; print kind >> kinds }
		next
	}
	inblock {
		block = block $0 "\n"
		if (kind == "") { kind = $0; sub(/^==[0-9]+== /, "", kind) }
	}
' "$logs"/*.log || true
n_ours=$(grep -c '^log ' "$ours" || true)
n_others=$(grep -c '^log ' "$others" || true)
processes=$(ls "$logs" | wc -l)

echo
if [ "$n_others" -gt 0 ]; then
	echo "valgrind errors without a jobqueue.so frame, by kind (see $others):"
	sort "$kinds" | uniq -c | sort -rn | head -n 20
fi
if [ "$n_ours" -gt 0 ]; then
	echo "---- valgrind errors involving jobqueue.so:"
	head -c 30000 "$ours"
fi
echo
echo "valgrind: $processes processes, $n_ours errors involving jobqueue.so, $n_others other errors;" \
	"$suites suites run, $suite_failures with differences (see $dir/valgrind_*/regression.diffs)"
[ "$n_ours" -eq 0 ]
