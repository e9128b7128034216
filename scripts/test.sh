#!/usr/bin/env bash
# Run every jobqueue test on a fresh Debian bookworm machine:
# installs what is missing, builds with warnings as errors, installs the
# extension, then, as an unprivileged user, runs make installcheck, which
# starts its own throwaway servers for
#   pg_regress (sql/, expected/), pgTAP (test/pgtap/),
#   isolation specs (test/isolation/) and TAP tests (test/t/),
# then the client libraries' tests (scripts/test_clients.sh: Python,
# Node.js, Go, through PgBouncer too, on a throwaway cluster of their own)
# and the dashboard's (scripts/test_dashboard.sh: its API, and its pages in
# headless Chromium, on a cluster of their own) and the Citus suite
# (scripts/test_citus.sh: a 3-node Citus cluster built from ../shared/citus;
# skipped, saying why, without a Citus source).
# Usage: bash scripts/test.sh as root, or sudo bash scripts/test.sh
#   (exits non-zero on any failure)
source "$(dirname "$0")/common.sh"

log "checking META.json against jobqueue.control"
perl "$JQ_ROOT/scripts/check_meta.pl" "$JQ_ROOT"

jq_install_packages
dir=$(jq_workdir test)
jq_build_install "$dir"
jq_previous_release "$dir/previous-release"

log "running the test suite in $dir"
set +e
as_pguser make -C "$dir" PG_CONFIG="$PG_CONFIG" installcheck 2>&1 | tee "$dir/installcheck.log"
status=${PIPESTATUS[0]}
set -e

if [ "$status" -ne 0 ]; then
	for f in "$dir"/regression.diffs "$dir"/results_pgtap/regression.diffs "$dir"/output_iso/regression.diffs; do
		[ -s "$f" ] && { echo "---- $f"; head -c 20000 "$f"; }
	done
	for f in "$dir"/tmp_check/log/regress_log_*; do
		[ -f "$f" ] && grep -q -E "^not ok|Bail out|died" "$f" && { echo "---- $f"; tail -n 60 "$f"; }
	done
fi

log "running the client tests"
set +e
bash "$JQ_ROOT/scripts/test_clients.sh" "$dir" 2>&1 | tee "$dir/clients.log"
cstatus=${PIPESTATUS[0]}
set -e
read -r cpassed cfailed < <(sed -n 's/^jobqueue client tests: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$dir/clients.log" | tail -n 1)
cpassed=${cpassed:-0}
cfailed=${cfailed:-0}
# A client suite that could not even report counts as one failure.
[ "$cstatus" -ne 0 ] && [ "$cfailed" -eq 0 ] && cfailed=1

log "running the dashboard tests"
set +e
bash "$JQ_ROOT/scripts/test_dashboard.sh" "$dir" 2>&1 | tee "$dir/dashboard.log"
dstatus=${PIPESTATUS[0]}
set -e
read -r dpassed dfailed < <(sed -n 's/^jobqueue dashboard tests: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$dir/dashboard.log" | tail -n 1)
dpassed=${dpassed:-0}
dfailed=${dfailed:-0}
[ "$dstatus" -ne 0 ] && [ "$dfailed" -eq 0 ] && dfailed=1
cpassed=$((cpassed + dpassed))
cfailed=$((cfailed + dfailed))

# The Citus suite: builds Citus from ../shared/citus (or $CITUS_SRC) with
# its Debian build dependencies, or says why it is skipped.
log "running the Citus tests"
set +e
bash "$JQ_ROOT/scripts/test_citus.sh" "$dir" 2>&1 | tee "$dir/citus.log"
zstatus=${PIPESTATUS[0]}
set -e
read -r zpassed zfailed < <(sed -n 's/^jobqueue Citus tests: \([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$dir/citus.log" | tail -n 1) || true  # no line when the suite is skipped
zpassed=${zpassed:-0}
zfailed=${zfailed:-0}
[ "$zstatus" -ne 0 ] && [ "$zfailed" -eq 0 ] && zfailed=1
cpassed=$((cpassed + zpassed))
cfailed=$((cfailed + zfailed))

# One closing line summing the harnesses: pg_regress ("All N tests
# passed." / "M of N tests failed.") and prove ("Tests=N", "Failed M/N").
read -r passed failed < <(awk '
	/All [0-9]+ tests passed/ { for (i = 1; i <= NF; i++) if ($i == "All") p += $(i + 1) }
	/[0-9]+ of [0-9]+ tests failed/ { for (i = 1; i <= NF; i++) if ($i == "of") { f += $(i - 1); p += $(i + 1) - $(i - 1) } }
	/^Files=[0-9]+, Tests=[0-9]+/ { split($2, a, "="); sub(",", "", a[2]); p += a[2] }
	/Failed [0-9]+\/[0-9]+ subtests/ { split($2, b, "/"); f += b[1]; p -= b[1] }
	END { print p + 0, f + 0 }' "$dir/installcheck.log")
passed=$((passed + cpassed))
failed=$((failed + cfailed))
# a harness that stopped (a TAP file that died, pg_regress that could not
# start) fails the run even when no test said "failed"
[ "$status" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
echo
echo "jobqueue tests: $passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ] && [ "$cstatus" -eq 0 ] && [ "$dstatus" -eq 0 ] && [ "$zstatus" -eq 0 ]
