#!/usr/bin/env bash
# The dashboard's tests (dashboard/test: the JSON API with node:test, the
# pages in headless Chromium with playwright-core), against a real server:
# a throwaway cluster with jobqueue preloaded, listening on 127.0.0.1 with
# password authentication (scram-sha-256) for TCP, so that a login really
# checks the password.
#
# Usage: sudo bash scripts/test_dashboard.sh [WORKDIR]
#   WORKDIR: a copy made by jq_workdir where jobqueue is already built and
#   installed (scripts/test.sh passes its own); without it, this script
#   installs the packages, copies, builds and installs by itself.
# Installs Debian's chromium when it is missing, and the npm packages of
# dashboard/ with npm ci.  Screenshots of every page are kept in
# WORKDIR/dashboard_check/screenshots.
# Ends with "jobqueue dashboard tests: N passed, M failed"; exits non-zero
# when a test failed or the suite could not run.
source "$(dirname "$0")/common.sh"

if [ $# -ge 1 ]; then
	dir=$1
	jq_install_packages chromium
else
	jq_install_packages chromium
	dir=$(jq_workdir dashboard)
	jq_build_install "$dir"
fi
cdir=$dir/dashboard_check
jq_owned_dir "$cdir"
shots=$cdir/screenshots
jq_owned_dir "$shots"

port=$(jq_free_port 57500 57999)
jq_cluster_init "$cdir/server" "$port"
jq_cluster_conf <<CONF
# ---- dashboard tests: preloaded, TCP on localhost with passwords ----
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'jobqueue'
jobqueue.reap_interval = '100ms'
jobqueue.launcher_interval = '1s'
jobqueue.idle_visit_interval = '1s'
password_encryption = 'scram-sha-256'
max_connections = 100
fsync = off
synchronous_commit = off
CONF
cat >"$JQ_PGDATA/pg_hba.conf" <<HBA
local all all trust
host all all 127.0.0.1/32 scram-sha-256
HBA
trap jq_cluster_stop EXIT
jq_cluster_start

psql_c() { as_pguser psql -X -q -At -v ON_ERROR_STOP=1 -h "$JQ_PGHOST" -p "$port" "$@"; }
psql_c -d postgres -c 'CREATE DATABASE jqdash'
psql_c -d jqdash -c 'CREATE EXTENSION jobqueue'
for ((i = 0; i < 120; i++)); do
	[ "$(psql_c -d jqdash -c 'SELECT configured AND state <> $$waiting for the launcher$$ FROM jobqueue.jq_worker_status()')" = t ] && break
	sleep 0.25
done

run_as() {
	(cd "$dir/dashboard" && as_pguser env HOME="$cdir" npm_config_cache="$cdir/npm-cache" \
		JQD_SUPER_DSN="postgresql:///jqdash?host=$JQ_PGHOST&port=$port&user=$JQ_PGUSER" \
		JQD_DSN="postgresql://127.0.0.1:$port/jqdash" JQD_SCREENSHOTS="$shots" "$@")
}

log "dashboard: npm ci"
passed=0
failed=0
if run_as npm ci --no-audit --no-fund --loglevel=error >"$cdir/npm.log" 2>&1; then
	log "dashboard tests (API and headless Chromium)"
	set +e
	run_as node --test --test-concurrency=1 test/ 2>&1 | tee "$cdir/dashboard.log"
	st=${PIPESTATUS[0]}
	set -e
	passed=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$cdir/dashboard.log" | tail -n 1)
	failed=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$cdir/dashboard.log" | tail -n 1)
	passed=${passed:-0}
	failed=${failed:-1}
	skipped=$(sed -n 's/^# skipped \([0-9]*\)$/\1/p' "$cdir/dashboard.log" | tail -n 1)
	# a skipped test here means the server or Chromium was missing: a failure
	failed=$((failed + ${skipped:-0}))
	[ "$st" -ne 0 ] && [ "$failed" -eq 0 ] && failed=1
else
	cat "$cdir/npm.log"
	echo "npm ci failed"
	failed=1
fi

echo
echo "screenshots of every page: $shots"
echo "jobqueue dashboard tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
