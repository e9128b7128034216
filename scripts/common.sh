# Shared helpers of the scripts in scripts/ and bench/.
# Sourced, not run.

set -euo pipefail

JQ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
# The unprivileged account that owns throwaway clusters: initdb and
# pg_ctl refuse to run as root.
JQ_PGUSER=${JQ_PGUSER:-postgres}

log() { printf '\n==> %s\n' "$*"; }

# The Debian packages of each use: building and installing the extension
# (all that scripts/demo.sh needs), its test harnesses (pgTAP, the TAP
# tests' IPC::Run, pg_stat_statements and the other contrib modules,
# promtool and postgres_exporter for the monitoring recipe), and
# the client libraries' tests (scripts/test_clients.sh: Python, Go,
# Node.js, PgBouncer).  The README lists them per command.
JQ_PKGS_BUILD=(build-essential postgresql-15 postgresql-server-dev-15)
JQ_PKGS_TESTS=(postgresql-15-pgtap postgresql-contrib libipc-run-perl
	prometheus prometheus-postgres-exporter)
JQ_PKGS_CLIENTS=(python3-psycopg python3-pytest golang-go golang-github-jackc-pgx-v4-dev golang-opentelemetry-otel-dev
	nodejs npm pgbouncer)

# Install the Debian packages the tests and benchmarks need (and those
# given as arguments), when they are missing.
jq_install_packages() {
	jq_install_only "${JQ_PKGS_BUILD[@]}" "${JQ_PKGS_TESTS[@]}" "${JQ_PKGS_CLIENTS[@]}" "$@"
}

# Install the given Debian packages when they are missing (as root; as
# another user, name the missing ones and stop), and set PG_CONFIG and
# PG_BINDIR.
jq_install_only() {
	local pkgs=("$@")
	local missing=()
	for p in "${pkgs[@]}"; do
		dpkg -s "$p" >/dev/null 2>&1 && continue
		# A Node.js installed from another source brings its own npm,
		# and Debian's npm package would conflict with it.
		[ "$p" = npm ] && command -v npm >/dev/null 2>&1 && continue
		missing+=("$p")
	done
	if ((${#missing[@]})); then
		if [ "$(id -u)" -ne 0 ]; then
			echo "missing packages: ${missing[*]} (run as root, with sudo or without, or install them)" >&2
			exit 1
		fi
		log "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		jq_without_services apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
		jq_disable_services "${missing[@]}"
	fi
	if [ "$PG_CONFIG" = pg_config ]; then
		PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	fi
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	export PG_CONFIG PG_BINDIR
}

# The packages whose Debian services the tests do not want running: the
# monitoring test starts promtool and the exporter itself.
JQ_NO_SERVICE_PKGS=(prometheus prometheus-postgres-exporter)

# Run a command (apt-get install) with the start of services refused
# (policy-rc.d, exit 101), unless the machine has a policy of its own.
jq_without_services() {
	local policy=/usr/sbin/policy-rc.d rc=0
	if [ -e "$policy" ]; then
		"$@" || rc=$?
		return "$rc"
	fi
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	"$@" || rc=$?
	rm -f "$policy"
	return "$rc"
}

# Do not start at boot the services of those of the given packages that
# are in JQ_NO_SERVICE_PKGS (just installed: nobody enabled them on purpose).
jq_disable_services() {
	local p q
	command -v systemctl >/dev/null 2>&1 || return 0
	for p in "$@"; do
		for q in "${JQ_NO_SERVICE_PKGS[@]}"; do
			[ "$p" = "$q" ] && systemctl disable --quiet "$p" 2>/dev/null || true
		done
	done
}

# Run a command as the cluster owner (directly when we are not root).
as_pguser() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u "$JQ_PGUSER" -- env PATH="$PG_BINDIR:$PATH" "$@"
	else
		env PATH="$PG_BINDIR:$PATH" "$@"
	fi
}

# Copy the source tree to a fresh directory the cluster owner can write
# (test and demo output go there), and print its path.
jq_workdir() {
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/jobqueue-$1.XXXXXX")
	tar -C "$JQ_ROOT" --exclude=.git --exclude='*.o' --exclude='*.so' \
		--exclude=tmp_check --exclude='tmp_check_*' --exclude=results \
		--exclude=demo/work --exclude=bench/work --exclude='bench/work-*' --exclude=node_modules -cf - . | tar -C "$dir" -xf -
	if [ "$(id -u)" -eq 0 ]; then
		chown -R "$JQ_PGUSER" "$dir"
		chmod 755 "$dir"
	fi
	echo "$dir"
}

# The source of the release before the current version, into DIR, for the
# test of updates run against the previous library
# (test/t/028_library_version.pl): the tag v<previous> when there is one,
# else the parent of the commit that set default_version to the current
# one.  Without the git history it says so and extracts nothing (the test
# then skips, saying why).
jq_previous_release() {
	local dest=$1 current rev prev
	local version_re="s/^default_version[[:space:]]*=[[:space:]]*'\\([^']*\\)'.*/\\1/p"
	if ! git -C "$JQ_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		log "no git history: the test against the previous release's library will skip"
		return 0
	fi
	current=$(sed -n "$version_re" "$JQ_ROOT/jobqueue.control")
	rev=$(git -C "$JQ_ROOT" log --format=%H -1 -G"^default_version = '$current'" -- jobqueue.control)
	if [ -z "$rev" ] || ! git -C "$JQ_ROOT" rev-parse -q --verify "$rev^" >/dev/null; then
		log "no release before $current in the git history: the test against its library will skip"
		return 0
	fi
	prev=$(git -C "$JQ_ROOT" show "$rev^:jobqueue.control" | sed -n "$version_re")
	if git -C "$JQ_ROOT" rev-parse -q --verify "refs/tags/v$prev" >/dev/null; then
		rev="v$prev"
	else
		rev="$rev^"
	fi
	log "extracting release $prev ($rev) for the update tests"
	mkdir -p "$dest"
	git -C "$JQ_ROOT" archive "$rev" | tar -C "$dest" -xf -
	if [ "$(id -u)" -eq 0 ]; then
		chown -R "$JQ_PGUSER" "$dest"
	fi
}

# Build with warnings as errors and install the extension.
jq_build_install() {
	local dir=$1
	log "building jobqueue (warnings are errors)"
	as_pguser make -C "$dir" -s PG_CONFIG="$PG_CONFIG" clean >/dev/null
	as_pguser make -C "$dir" -s PG_CONFIG="$PG_CONFIG"
	log "installing jobqueue into $("$PG_CONFIG" --pkglibdir)"
	make -C "$dir" -s PG_CONFIG="$PG_CONFIG" install >/dev/null
}

# ---------------------------------------------------------------------------
# A throwaway cluster, owned by the unprivileged account
# ---------------------------------------------------------------------------
#   jq_cluster_init DIR PORT [initdb options]   data in DIR/data, log in
#       DIR/server.log, listening only on a Unix socket (in DIR, or in a
#       short temporary directory when DIR is too long for a socket path)
#   jq_cluster_conf <<EOF ... EOF               more postgresql.conf lines
#   jq_cluster_start [COMMAND ...]              start and wait until it
#       accepts connections; with a COMMAND (valgrind ...) the postmaster
#       runs under it
#   jq_cluster_stop                             stop it if it runs; for the
#       caller's EXIT trap
# They set JQ_PGDATA, JQ_PGLOG, JQ_PGHOST (the socket directory) and
# JQ_PGPORT.  JQ_CLUSTER_TIMEOUT: seconds to wait for a start or a fast
# stop (default 60).
JQ_PGDATA=
JQ_PGPID=

# The first port from $1 to $2 that nothing listens on.
jq_free_port() {
	local p
	for p in $(seq "$1" "$2"); do
		if [ ! -e "/tmp/.s.PGSQL.$p" ] && [ ! -e "/var/run/postgresql/.s.PGSQL.$p" ] &&
			! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	echo "no free port between $1 and $2" >&2
	return 1
}

# Stop a cluster in data directory $1 that an interrupted earlier run left
# running.
jq_stop_leftover() {
	if [ -f "$1/postmaster.pid" ]; then
		as_pguser pg_ctl -D "$1" -m immediate -w stop >/dev/null 2>&1 || true
	fi
}

# A directory the cluster owner may write.
jq_owned_dir() {
	mkdir -p "$1"
	if [ "$(id -u)" -eq 0 ]; then
		chown "$JQ_PGUSER" "$1"
	fi
}

jq_cluster_init() {
	local dir=$1 port=$2
	shift 2
	JQ_PGDATA=$dir/data
	JQ_PGLOG=$dir/server.log
	JQ_PGPORT=$port
	JQ_PGHOST=$dir
	jq_stop_leftover "$JQ_PGDATA"
	rm -rf "$JQ_PGDATA"
	jq_owned_dir "$dir"
	if ((${#JQ_PGHOST} > 80)); then
		JQ_PGHOST=$(mktemp -d /tmp/jqsock.XXXXXX)
		jq_owned_dir "$JQ_PGHOST"
	fi
	as_pguser initdb -D "$JQ_PGDATA" -A trust -E UTF8 --no-sync "$@" >"$dir/initdb.log" 2>&1 ||
		{ cat "$dir/initdb.log" >&2; echo "initdb failed" >&2; return 1; }
	jq_cluster_conf <<-CONF

		# ---- a throwaway cluster: only a Unix socket ----
		listen_addresses = ''
		port = $JQ_PGPORT
		unix_socket_directories = '$JQ_PGHOST'
	CONF
}

jq_cluster_conf() {
	cat >>"$JQ_PGDATA/postgresql.conf"
}

jq_cluster_start() {
	local timeout=${JQ_CLUSTER_TIMEOUT:-60} i
	if (($# == 0)); then
		as_pguser pg_ctl -D "$JQ_PGDATA" -l "$JQ_PGLOG" -w -t "$timeout" start >/dev/null ||
			{ tail -n 30 "$JQ_PGLOG" >&2; echo "the server did not start" >&2; return 1; }
		return 0
	fi
	as_pguser "$@" postgres -D "$JQ_PGDATA" >"$JQ_PGLOG" 2>&1 &
	JQ_PGPID=$!
	for ((i = 0; i < timeout * 4; i++)); do
		as_pguser pg_isready -q -h "$JQ_PGHOST" -p "$JQ_PGPORT" && return 0
		kill -0 "$JQ_PGPID" 2>/dev/null || break
		sleep 0.25
	done
	tail -n 30 "$JQ_PGLOG" >&2
	echo "the server did not start under $1 (see $JQ_PGLOG)" >&2
	return 1
}

jq_cluster_stop() {
	[ -n "$JQ_PGDATA" ] || return 0
	if [ -f "$JQ_PGDATA/postmaster.pid" ]; then
		as_pguser pg_ctl -D "$JQ_PGDATA" -m fast -t "${JQ_CLUSTER_TIMEOUT:-60}" -w stop >/dev/null 2>&1 ||
			as_pguser pg_ctl -D "$JQ_PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
	fi
	if [ -n "$JQ_PGPID" ]; then
		wait "$JQ_PGPID" 2>/dev/null || true
		JQ_PGPID=
	fi
}
