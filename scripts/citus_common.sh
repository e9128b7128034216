# Shared helpers of scripts/test_citus.sh and bench/citus.sh: building
# Citus from its source tarball and a loopback cluster of a coordinator
# and worker nodes.  Sourced after common.sh, not run.

# The Debian packages Citus's build needs beside JQ_PKGS_BUILD.
JQ_PKGS_CITUS=(liblz4-dev libzstd-dev libkrb5-dev)
JQ_CITUS_VERSION=13.2.2

# The Citus source: $CITUS_SRC (a tarball or an unpacked tree), else the
# tarball in ../shared/citus next to the repository.  Prints its path, or
# nothing (and returns 1) when there is none.
jq_citus_source() {
	local t
	if [ -n "${CITUS_SRC:-}" ]; then
		[ -e "$CITUS_SRC" ] || { echo "CITUS_SRC=$CITUS_SRC does not exist" >&2; return 1; }
		echo "$CITUS_SRC"
		return 0
	fi
	for t in "$JQ_ROOT"/../shared/citus/citus-"$JQ_CITUS_VERSION"*.tar.gz; do
		[ -f "$t" ] && { (cd "$(dirname "$t")" && echo "$PWD/$(basename "$t")"); return 0; }
	done
	return 1
}

# Whether Citus $JQ_CITUS_VERSION is installed in $PG_CONFIG's server.
jq_citus_installed() {
	local so
	so=$("$PG_CONFIG" --pkglibdir)/citus.so
	[ -f "$so" ] && grep -aq "Citus $JQ_CITUS_VERSION" "$so"
}

# Build and install Citus from source $1 into $PG_CONFIG's server, unless
# the same version is installed there already.  Builds in a temporary
# directory, without LLVM bitcode (JIT inlining only) and libcurl.
jq_citus_build() {
	local src=$1 build
	if jq_citus_installed; then
		log "Citus $JQ_CITUS_VERSION is installed in $("$PG_CONFIG" --pkglibdir), not building it"
		return 0
	fi
	jq_install_only "${JQ_PKGS_BUILD[@]}" "${JQ_PKGS_CITUS[@]}"
	build=$(mktemp -d "${TMPDIR:-/tmp}/citus-build.XXXXXX")
	if [ -d "$src" ]; then
		cp -a "$src/." "$build/"
	else
		tar -C "$build" --strip-components=1 -xzf "$src"
	fi
	# PostgreSQL 15.20 exports have_createdb_privilege(); Citus 13.2.2 keeps
	# a static copy for 15, which no longer compiles against those headers.
	if grep -q 'extern bool have_createdb_privilege' "$("$PG_CONFIG" --includedir-server)/commands/dbcommands.h" 2>/dev/null; then
		perl -0pi -e 's/static inline bool\nhave_createdb_privilege\(void\)\n\{.*?\n\}\n/extern bool have_createdb_privilege(void);\n/s' \
			"$build/src/include/pg_version_compat.h"
	fi
	log "building Citus $JQ_CITUS_VERSION in $build (about 90 s)"
	(cd "$build" && ./configure -q --without-libcurl PG_CONFIG="$PG_CONFIG" >configure.log 2>&1) ||
		{ tail -n 30 "$build/configure.log" >&2; return 1; }
	make -C "$build" -s -j"$(nproc)" with_llvm=no >"$build/make.log" 2>&1 ||
		{ grep -E 'error|Error' "$build/make.log" | head -n 30 >&2; return 1; }
	make -C "$build" -s with_llvm=no install >"$build/install.log" 2>&1 ||
		{ tail -n 30 "$build/install.log" >&2; return 1; }
	rm -rf "$build"
	jq_citus_installed
}

# ---------------------------------------------------------------------------
# A loopback Citus cluster: a coordinator and worker nodes
# ---------------------------------------------------------------------------
#   jq_citus_cluster DIR NWORKERS [postgresql.conf lines]
#       one PostgreSQL server per node under DIR/node0 (the coordinator),
#       DIR/node1 ..., each on its own port on 127.0.0.1 (and a Unix socket
#       in its directory), Citus and jobqueue preloaded, database
#       "jobqueue" with both extensions, the workers added to the
#       coordinator.  Sets JQ_CITUS_PORTS (an array, coordinator first) and
#       JQ_CITUS_DIRS.
#       The ports are the first free ones from $JQ_CITUS_PORT_MIN (54400)
#       to $JQ_CITUS_PORT_MAX (54999), so that runs beside other servers
#       can be kept to a range of their own.
#   jq_citus_psql N [psql arguments]    psql on node N, database jobqueue
#   jq_citus_stop                       stops every node; for an EXIT trap
JQ_CITUS_PORTS=()
JQ_CITUS_DIRS=()
JQ_CITUS_PORT_MIN=${JQ_CITUS_PORT_MIN:-54400}
JQ_CITUS_PORT_MAX=${JQ_CITUS_PORT_MAX:-54999}

jq_citus_cluster() {
	local dir=$1 n=$2 extra=${3:-} i port tries
	jq_owned_dir "$dir"
	port=$JQ_CITUS_PORT_MIN
	for ((i = 0; i <= n; i++)); do
		port=$(jq_free_port "$port" "$JQ_CITUS_PORT_MAX")
		jq_cluster_init "$dir/node$i" "$port"
		jq_cluster_conf <<-CONF
			listen_addresses = '127.0.0.1'
			shared_preload_libraries = 'citus, jobqueue'
			max_prepared_transactions = 100
			max_connections = 200
			max_worker_processes = 32
			wal_level = logical
			fsync = off
			synchronous_commit = off
			citus.max_adaptive_executor_pool_size = 8
			log_line_prefix = '%m [%p] node$i '
			$extra
		CONF
		tries=0
		until jq_cluster_start 2>"$dir/node$i.start.err"; do
			# a port jq_free_port saw free may be taken since by the local
			# end of some connection (an ephemeral port): take the next one
			if ! grep -q 'could not bind' "$dir/node$i.start.err" || ((++tries >= 10)); then
				cat "$dir/node$i.start.err" >&2
				return 1
			fi
			port=$(jq_free_port $((port + 1)) "$JQ_CITUS_PORT_MAX")
			JQ_PGPORT=$port
			mv "$JQ_PGLOG" "$JQ_PGLOG.$tries"
			echo "port = $port" | jq_cluster_conf
		done
		JQ_CITUS_PORTS+=("$port")
		JQ_CITUS_DIRS+=("$dir/node$i")
		as_pguser psql -X -q -h "$dir/node$i" -p "$port" -d postgres -v ON_ERROR_STOP=1 \
			-c 'CREATE DATABASE jobqueue' >/dev/null
		jq_citus_psql "$i" -c 'CREATE EXTENSION citus' >/dev/null
		port=$((port + 1))
	done
	jq_citus_psql 0 -c "SELECT citus_set_coordinator_host('127.0.0.1', ${JQ_CITUS_PORTS[0]})" >/dev/null
	for ((i = 1; i <= n; i++)); do
		jq_citus_psql 0 -c "SELECT citus_add_node('127.0.0.1', ${JQ_CITUS_PORTS[i]})" >/dev/null
	done
}

jq_citus_psql() {
	local i=$1
	shift
	as_pguser psql -X -q -A -t -v ON_ERROR_STOP=1 -h "${JQ_CITUS_DIRS[i]}" -p "${JQ_CITUS_PORTS[i]}" -d jobqueue "$@"
}

jq_citus_stop() {
	local d
	for d in "${JQ_CITUS_DIRS[@]}"; do
		if [ -f "$d/data/postmaster.pid" ]; then
			as_pguser pg_ctl -D "$d/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
				as_pguser pg_ctl -D "$d/data" -m immediate -w stop >/dev/null 2>&1 || true
		fi
	done
}
