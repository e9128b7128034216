# Shared helpers of scripts/demo.sh, scripts/test.sh and bench/run.sh.
# Sourced, not run.

set -euo pipefail

JQ_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
# The unprivileged account that owns throwaway clusters: initdb and
# pg_ctl refuse to run as root.
JQ_PGUSER=${JQ_PGUSER:-postgres}

log() { printf '\n==> %s\n' "$*"; }

# Install the Debian packages jobqueue needs, when they are missing.
jq_install_packages() {
	local pkgs=(build-essential postgresql-15 postgresql-server-dev-15
		postgresql-15-pgtap postgresql-contrib libipc-run-perl "$@")
	local missing=()
	for p in "${pkgs[@]}"; do
		dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
	done
	if ((${#missing[@]})); then
		if [ "$(id -u)" -ne 0 ]; then
			echo "missing packages: ${missing[*]} (run as root, or install them)" >&2
			exit 1
		fi
		log "installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	fi
	if [ "$PG_CONFIG" = pg_config ]; then
		PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
	fi
	PG_BINDIR=$("$PG_CONFIG" --bindir)
	export PG_CONFIG PG_BINDIR
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
		--exclude=demo/work --exclude=bench/work -cf - . | tar -C "$dir" -xf -
	if [ "$(id -u)" -eq 0 ]; then
		chown -R "$JQ_PGUSER" "$dir"
		chmod 755 "$dir"
	fi
	echo "$dir"
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
