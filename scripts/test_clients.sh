#!/usr/bin/env bash
# The tests of the client libraries in clients/ (Python: pytest, Node.js:
# node:test, Go: go test, and the cross-language test), against a real
# server: a throwaway cluster with jobqueue preloaded (reaping every
# 100 ms), and PgBouncer in transaction pooling mode in front of it (pool
# smaller than the number of clients).
#
# Usage: sudo bash scripts/test_clients.sh [WORKDIR]
#   WORKDIR: a copy made by jq_workdir where jobqueue is already built and
#   installed (scripts/test.sh passes its own); without it, this script
#   installs the packages, copies, builds and installs by itself.
# JQ_CLIENT_SUITES: the suites to run (default "python node go crosslang").
# Ends with "jobqueue client tests: N passed, M failed"; exits non-zero
# when a test failed or a suite could not run.
source "$(dirname "$0")/common.sh"

if [ $# -ge 1 ]; then
	dir=$1
	jq_install_packages
else
	jq_install_packages
	dir=$(jq_workdir clients)
	jq_build_install "$dir"
fi
cdir=$dir/clients_check
jq_owned_dir "$cdir"

# --- the server --------------------------------------------------------
port=$(jq_free_port 56400 56999)
bport=$(jq_free_port $((port + 1)) 57499)
jq_cluster_init "$cdir/server" "$port"
jq_cluster_conf <<CONF
# ---- client tests: preloaded, quick reaper, TCP on localhost ----
listen_addresses = '127.0.0.1'
shared_preload_libraries = 'jobqueue'
jobqueue.reap_interval = '100ms'
jobqueue.launcher_interval = '1s'
jobqueue.idle_visit_interval = '1s'
max_connections = 200
fsync = off
synchronous_commit = off
CONF

# The role jq_password must give its password (everyone else is trusted),
# for the clients' tests of a wrong password.
sed -i '1i host all jq_password 127.0.0.1/32 scram-sha-256' "$JQ_PGDATA/pg_hba.conf"

bouncer_runner=
cleanup() {
	if [ -s "$cdir/pgbouncer.pid" ]; then
		kill "$(cat "$cdir/pgbouncer.pid")" 2>/dev/null || true
	fi
	if [ -n "$bouncer_runner" ]; then wait "$bouncer_runner" 2>/dev/null || true; fi
	jq_cluster_stop
}
trap cleanup EXIT
jq_cluster_start

psql_c() { as_pguser psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" "$@"; }
psql_c -d postgres -c 'CREATE DATABASE jqclients'
psql_c -d jqclients -c 'CREATE EXTENSION jobqueue'
# For the clients' tests of what stops a worker at start: a database
# without the extension, and a role that must give a password.
psql_c -d postgres -c 'CREATE DATABASE jqnoext'
psql_c -d postgres -c "CREATE ROLE jq_password LOGIN PASSWORD 'right-password'"
for ((i = 0; i < 120; i++)); do
	[ "$(psql_c -d jqclients -c 'SELECT configured AND state <> $$waiting for the launcher$$ FROM jobqueue.jq_worker_status()')" = t ] && break
	sleep 0.25
done

# --- PgBouncer, transaction pooling, 3 server connections ---------------
pool=3
cat >"$cdir/pgbouncer.ini" <<INI
[databases]
jqclients = host=127.0.0.1 port=$port dbname=jqclients
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir =
auth_type = trust
auth_file = $cdir/userlist.txt
pool_mode = transaction
default_pool_size = $pool
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
logfile = $cdir/pgbouncer.log
pidfile = $cdir/pgbouncer.pid
INI
echo '"postgres" ""' >"$cdir/userlist.txt"
chown "$JQ_PGUSER" "$cdir"/pgbouncer.ini "$cdir"/userlist.txt 2>/dev/null || true
# In the foreground of a background job (not -d), so that it is reaped here.
as_pguser pgbouncer "$cdir/pgbouncer.ini" >/dev/null 2>&1 &
bouncer_runner=$!
for ((i = 0; i < 120; i++)); do
	as_pguser psql -X -At -h 127.0.0.1 -p "$bport" -d jqclients -c 'SELECT 1' >/dev/null 2>&1 && break
	sleep 0.25
done

export JQ_TEST_DSN="postgresql://postgres@127.0.0.1:$port/jqclients"
export JQ_TEST_BOUNCER_DSN="postgresql://postgres@127.0.0.1:$bport/jqclients"
export JQ_TEST_BOUNCER_POOL=$pool
# What no retry can fix: a wrong password, a database that does not
# exist, a database without the extension.
export JQ_TEST_BADPW_DSN="postgresql://jq_password:wrong-password@127.0.0.1:$port/jqclients"
export JQ_TEST_NODB_DSN="postgresql://postgres@127.0.0.1:$port/jq_no_such_database"
export JQ_TEST_NOEXT_DSN="postgresql://postgres@127.0.0.1:$port/jqnoext"
log "server $JQ_TEST_DSN, PgBouncer (transaction pooling, pool $pool) $JQ_TEST_BOUNCER_DSN"

# Run a suite as the cluster owner, in its directory, with the test DSNs.
run_as() {
	local wd=$1
	shift
	(cd "$wd" && as_pguser env JQ_TEST_DSN="$JQ_TEST_DSN" JQ_TEST_BOUNCER_DSN="$JQ_TEST_BOUNCER_DSN" \
		JQ_TEST_BOUNCER_POOL="$JQ_TEST_BOUNCER_POOL" HOME="$cdir" \
		JQ_TEST_BADPW_DSN="$JQ_TEST_BADPW_DSN" JQ_TEST_NODB_DSN="$JQ_TEST_NODB_DSN" \
		JQ_TEST_NOEXT_DSN="$JQ_TEST_NOEXT_DSN" \
		GOPATH="$cdir/gopath:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOCACHE="$cdir/gocache" \
		npm_config_cache="$cdir/npm-cache" JQ_NODE_DIR="$dir/clients/node" \
		JQ_GO_WORKER="$cdir/bin/jqworker" "$@")
}

suites=" ${JQ_CLIENT_SUITES:-python node go crosslang} "
want() { [[ $suites == *" $1 "* ]]; }
total_pass=0
total_fail=0
t0=$(date +%s)
# count NAME PASSED FAILED
count() {
	echo "--> $1: $2 passed, $3 failed"
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
}
# The numbers from a pytest log (a suite that did not get to its summary
# counts as one failure).
pytest_counts() {
	local f=$1 line p fl e
	line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|errors?)(,.*)? in [0-9.]+s' "$f" | tail -n 1 || true)
	[ -n "$line" ] || { echo "0 1"; return; }
	p=$(grep -oE '[0-9]+ passed' <<<"$line" | cut -d' ' -f1 || true)
	fl=$(grep -oE '[0-9]+ failed' <<<"$line" | cut -d' ' -f1 || true)
	e=$(grep -oE '[0-9]+ errors?' <<<"$line" | cut -d' ' -f1 || true)
	echo "${p:-0} $((${fl:-0} + ${e:-0}))"
}

# The packages of the Node.js client (npm ci, once), and the Go package in
# a GOPATH with the worker command built (once); the cross-language test
# needs both too.
node_setup() {
	[ -d "$dir/clients/node/node_modules" ] && return 0
	run_as "$dir/clients/node" npm ci --no-audit --no-fund --loglevel=error >"$cdir/npm.log" 2>&1 ||
		{ cat "$cdir/npm.log"; echo "npm ci failed"; return 1; }
}
# GOPATH mode: Debian's golang-github-jackc-pgx-v4-dev installs pgx under
# /usr/share/gocode/src, and the package is jobqueue in GOPATH
# $cdir/gopath; no network, no go.mod.
go_setup() {
	[ -x "$cdir/bin/jqworker" ] && return 0
	mkdir -p "$cdir/gopath/src" "$cdir/bin"
	rm -rf "$cdir/gopath/src/jobqueue"
	cp -r "$dir/clients/go" "$cdir/gopath/src/jobqueue"
	chown -R "$JQ_PGUSER" "$cdir/gopath" "$cdir/bin"
	run_as "$cdir/gopath/src/jobqueue" go build -o "$cdir/bin/jqworker" jobqueue/cmd/jqworker >"$cdir/gobuild.log" 2>&1 ||
		{ cat "$cdir/gobuild.log"; echo "go build failed"; return 1; }
}

# --- Python --------------------------------------------------------------
suite_python() {
	log "Python client (pytest)"
	local p f st
	set +e
	run_as "$dir/clients/python" /usr/bin/python3 -m pytest -q -p no:cacheprovider tests 2>&1 | tee "$cdir/python.log"
	st=${PIPESTATUS[0]}
	set -e
	read -r p f < <(pytest_counts "$cdir/python.log")
	[ "$st" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	count python "$p" "$f"
}

# --- Node.js -------------------------------------------------------------
suite_node() {
	log "Node.js client (node:test)"
	set +e
	local p=0 f=0 st
	if node_setup; then
		run_as "$dir/clients/node" node --test test/ 2>&1 | tee "$cdir/node.log"
		st=${PIPESTATUS[0]}
		p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$cdir/node.log" | tail -n 1)
		f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$cdir/node.log" | tail -n 1)
		p=${p:-0} f=${f:-1}
		[ "$st" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	else
		f=1
	fi
	set -e
	count node "$p" "$f"
	node_install
	node_otel
}

# The worker's OpenTelemetry spans (clients/node/test-otel), in an
# application directory of their own, as an application has them: the
# packed client and, from npm, @opentelemetry/api with the SDK's
# in-memory exporter (packages the client does not depend on).
node_otel() {
	log "Node.js client: OpenTelemetry spans (test-otel, with @opentelemetry/sdk-trace-base)"
	local app=$cdir/node-otel p=0 f=0 st
	rm -rf "$app"
	jq_owned_dir "$app"
	cp "$dir/clients/node/test-otel/package.json" "$dir/clients/node/test-otel/"*.test.js "$app/"
	chown -R "$JQ_PGUSER" "$app" 2>/dev/null || true
	set +e
	run_as "$app" bash -c '
		set -e
		npm install --prefer-offline --no-audit --no-fund --no-save --loglevel=error "$(npm pack --silent "$JQ_NODE_DIR")"
		node --test' 2>&1 | tee "$cdir/node-otel.log"
	st=${PIPESTATUS[0]}
	set -e
	p=$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$cdir/node-otel.log" | tail -n 1)
	f=$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$cdir/node-otel.log" | tail -n 1)
	p=${p:-0} f=${f:-1}
	[ "$st" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	count node-otel "$p" "$f"
}

# The install command of clients/node/README.md in a fresh application
# directory, then the README's quick start in it, against the test server.
# npm takes pg from its cache (filled by npm ci) or the registry.
node_install() {
	log "Node.js client: the README's install command in a fresh app, then its quick start"
	local app=$cdir/node-app out
	rm -rf "$app"
	jq_owned_dir "$app"
	cp "$dir/clients/node/examples/quickstart.js" "$app/"
	set +e
	out=$(run_as "$app" bash -c '
		set -e
		npm init -y >/dev/null
		npm install --prefer-offline --no-audit --no-fund --loglevel=error "$(npm pack --silent "$JQ_NODE_DIR")"
		test ! -L node_modules/jobqueue-client
		JOBQUEUE_DSN="$JQ_TEST_DSN" node quickstart.js' 2>&1)
	set -e
	echo "$out"
	if grep -q '^sent 3 e-mails$' <<<"$out"; then
		count node-install 1 0
	else
		echo "the installed package did not run the quick start"
		count node-install 0 1
	fi
}

# --- Go ------------------------------------------------------------------
suite_go() {
	log "Go client (go test)"
	set +e
	local p=0 f=0 st
	if go_setup; then
		run_as "$cdir/gopath/src/jobqueue" go test -v -count=1 -timeout 300s jobqueue jobqueue/jqotel 2>&1 | tee "$cdir/go.log"
		st=${PIPESTATUS[0]}
		p=$(grep -c -E '^--- PASS' "$cdir/go.log")
		f=$(grep -c -E '^--- FAIL' "$cdir/go.log")
		[ "$st" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	else
		f=1
	fi
	set -e
	count go "$p" "$f"
	go_module_install
}

# The README's module-mode recipe (clients/go/README.md, "Module mode"),
# without network: a local module proxy of Debian's pgx, a fresh
# application requiring the client through a replace directive, built
# with GOPROXY=file://... only, then its quick start against the server.
go_module_install() {
	log "Go client: a fresh module-mode application built offline"
	local app=$cdir/go-module-app st
	rm -rf "$app" "$cdir/goproxy"
	mkdir -p "$app"
	cp "$dir/clients/go/examples/quickstart/main.go" "$app/"
	chown -R "$JQ_PGUSER" "$app"
	set +e
	(
		set -e
		run_as "$cdir" bash "$dir/clients/go/debian-goproxy.sh" "$cdir/goproxy"
		cd "$app"
		gomod() { run_as "$app" env GO111MODULE=on GOPATH="$cdir/gomodpath" GOPROXY="file://$cdir/goproxy" GOSUMDB=off GOFLAGS=-mod=mod "$@"; }
		gomod go mod init example.com/quickstart
		gomod go mod edit -require=jobqueue@v0.0.0 -replace=jobqueue="$dir/clients/go"
		gomod go build -o quickstart .
		run_as "$app" env JOBQUEUE_DSN="$JQ_TEST_DSN" ./quickstart
	) >"$cdir/go-module.log" 2>&1
	st=$?
	set -e
	cat "$cdir/go-module.log"
	if [ "$st" -eq 0 ] && grep -q '^sent 3 e-mails$' "$cdir/go-module.log"; then
		count go-module-install 1 0
	else
		count go-module-install 0 1
	fi
}

# --- Cross-language --------------------------------------------------------
suite_crosslang() {
	log "cross-language: Python enqueues, a Node and a Go worker process the jobs (pytest)"
	local p f st
	node_setup && go_setup || { count crosslang 0 1; return; }
	set +e
	run_as "$dir/clients/python" /usr/bin/python3 -m pytest -q -p no:cacheprovider "$dir/clients/crosslang" 2>&1 | tee "$cdir/crosslang.log"
	st=${PIPESTATUS[0]}
	set -e
	read -r p f < <(pytest_counts "$cdir/crosslang.log")
	[ "$st" -ne 0 ] && [ "$f" -eq 0 ] && f=1
	count crosslang "$p" "$f"
}

for s in python node go crosslang; do
	want "$s" && [ -d "$dir/clients/$s" ] && "suite_$s"
done

echo
echo "client suites took $(($(date +%s) - t0)) s"
echo "jobqueue client tests: $total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
