#!/usr/bin/env bash
# Run every jobqueue test on a fresh Debian bookworm machine:
# installs what is missing, builds with warnings as errors, installs the
# extension, then, as an unprivileged user, runs make installcheck, which
# starts its own throwaway servers for
#   pg_regress (sql/, expected/), pgTAP (test/pgtap/),
#   isolation specs (test/isolation/) and TAP tests (test/t/).
# Usage: sudo scripts/test.sh        (exits non-zero on any failure)
source "$(dirname "$0")/common.sh"

jq_install_packages
dir=$(jq_workdir test)
jq_build_install "$dir"

log "running the test suite in $dir"
status=0
as_pguser make -C "$dir" PG_CONFIG="$PG_CONFIG" installcheck 2>&1 | tee "$dir/installcheck.log" || status=$?
status=${PIPESTATUS[0]}

if [ "$status" -ne 0 ]; then
	for f in "$dir"/regression.diffs "$dir"/results_pgtap/regression.diffs "$dir"/output_iso/regression.diffs; do
		[ -s "$f" ] && { echo "---- $f"; head -c 20000 "$f"; }
	done
	for f in "$dir"/tmp_check/log/regress_log_*; do
		[ -f "$f" ] && grep -q -E "^not ok|Bail out|died" "$f" && { echo "---- $f"; tail -n 60 "$f"; }
	done
fi

# One closing line summing the harnesses: pg_regress and prove.
passed=$(grep -E -c '^(ok [0-9]+ |test .* \.\.\. ok|     [a-z_0-9]+ +\.\.\. ok)' "$dir/installcheck.log" || true)
failed=$(grep -E -c '(\.\.\. FAILED|^not ok [0-9]+ )' "$dir/installcheck.log" || true)
echo
echo "jobqueue tests: $passed passed, $failed failed"
[ "$status" -eq 0 ] && [ "$failed" -eq 0 ]
