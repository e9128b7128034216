#!/usr/bin/env bash
# jobqueue benchmark, part "regression": this build against a previous
# release, side by side in one run.
#
#   sudo PG_CONFIG=... PG_CONFIG_OLD=... bench/regression.sh
#
# Two throwaway clusters with the same settings: "new" runs this tree built
# with PG_CONFIG, "old" runs the release BENCH_OLD_REF (git ref, default
# d51139e, release 1.1) built from `git archive` with PG_CONFIG_OLD (a
# separate PostgreSQL installation: both releases install the same
# library name; without PG_CONFIG_OLD, a copy of PG_CONFIG's installation
# is made in bench/work-pg-<ref> for it, BENCH_OLD_PREFIX to put it
# elsewhere: see rg_old_installation).  The workloads are the worker's plain path, on a queue
# without any of the options of 1.2:
#
#   claim1:  jq_claim of 1 job, then jq_complete (two transactions)
#   claimN:  jq_claim of BENCH_REGRESSION_N jobs (100), then jq_complete_many
#   (with BENCH_CAC=1, the new side also runs "cac": jq_complete_and_claim
#   of batches of BENCH_REGRESSION_N, against claimN of the same side)
#
# Each (workload, clients) is run BENCH_ROUNDS times on each side, the sides
# alternating and swapping which goes first; the result is the ratio of the
# medians, new / old.  The machine's load average is printed before and
# after: other work on the machine skews single runs, the alternation and the
# median make it hit both sides alike.  Results: $RES/regression.csv (every
# run) and $RES/regression.txt (the summary).
#
# Environment: BENCH_SECONDS (per run, default 5), BENCH_ROUNDS (3),
# BENCH_REGRESSION_CLIENTS ("1 2"), BENCH_SYNC_REGRESSION (off),
# BENCH_INSTALL (1: build and install both; 0: use what is installed),
# BENCH_INSTALL_OLD (default BENCH_INSTALL; 0: the old side is installed),
# BENCH_KEEP=1 keeps the clusters running at the end; BENCH_RG_CONF, lines
# added to both sides' postgresql.conf (jobqueue.worker_enabled = off: the
# statements alone, without the background worker's passes).
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BENCH_OLD_REF=${BENCH_OLD_REF:-d51139e}
PG_CONFIG_OLD=${PG_CONFIG_OLD:-}
BENCH_INSTALL_OLD=${BENCH_INSTALL_OLD:-$BENCH_INSTALL}
BENCH_SECONDS_RG=${BENCH_SECONDS_RG:-5}
BENCH_REGRESSION_CLIENTS=${BENCH_REGRESSION_CLIENTS:-1 2}
BENCH_REGRESSION_N=${BENCH_REGRESSION_N:-100}
BENCH_SYNC_REGRESSION=${BENCH_SYNC_REGRESSION:-off}
BENCH_CAC=${BENCH_CAC:-0}

declare -A SIDE_BIN SIDE_WORK SIDE_PORT SIDE_HOST SIDE_DATA

# Point the helpers of lib.sh (q, pgb, server_cpu) at side $1.
use_side() {
	PG_BINDIR=${SIDE_BIN[$1]}
	WORK=${SIDE_WORK[$1]}
	PORT=${SIDE_PORT[$1]}
	JQ_PGHOST=${SIDE_HOST[$1]}
	JQ_PGDATA=${SIDE_DATA[$1]}
}

# Build release BENCH_OLD_REF into PG_CONFIG_OLD.
rg_install_old() {
	local dir
	dir=$(mktemp -d "${TMPDIR:-/tmp}/jobqueue-old.XXXXXX")
	git -C "$JQ_ROOT" archive "$BENCH_OLD_REF" | tar -x -C "$dir"
	chown -R "$JQ_PGUSER" "$dir"
	log "building release $BENCH_OLD_REF with $PG_CONFIG_OLD"
	as_pguser make -C "$dir" -s PG_CONFIG="$PG_CONFIG_OLD" >/dev/null
	make -C "$dir" -s PG_CONFIG="$PG_CONFIG_OLD" install >/dev/null
	rm -rf "$dir"
}

# Build release BENCH_OLD_REF into PG_CONFIG_OLD (BENCH_INSTALL_OLD=1),
# this tree into PG_CONFIG (BENCH_INSTALL=1).
rg_install() {
	local dir
	if [ "$BENCH_INSTALL_OLD" = 1 ]; then
		rg_install_old
	fi
	if [ "$BENCH_INSTALL" = 1 ]; then
		dir=$(jq_workdir regression)
		jq_build_install "$dir"
		rm -rf "$dir"
	fi
}

# PG_CONFIG_OLD when it is not given: both releases install the same
# library name, so the old one needs a PostgreSQL installation of its own.
# Make one: a copy of PG_CONFIG's installation (binaries, libraries, share
# and include directories, keeping their relative layout, which PostgreSQL
# finds its files by) in BENCH_OLD_PREFIX (bench/work-pg-<ref>, git-ignored),
# with release BENCH_OLD_REF built into it.  A copy that already has that
# commit installed (the stamp file) is used again as it is.  Sets
# PG_CONFIG_OLD, and BENCH_INSTALL_OLD=0 (built here).
rg_old_installation() {
	[ -z "${PG_CONFIG_OLD:-}" ] || return 0
	local prefix=${BENCH_OLD_PREFIX:-$BENCH_DIR/work-pg-$BENCH_OLD_REF} commit bindir sharedir incdir libdir
	local root d stamp
	commit=$(git -C "$JQ_ROOT" rev-parse --verify -q "$BENCH_OLD_REF^{commit}") ||
		{ echo "BENCH_OLD_REF=$BENCH_OLD_REF is not a commit of $JQ_ROOT; set PG_CONFIG_OLD to an installation with it" >&2; exit 1; }
	bindir=$("$PG_CONFIG" --bindir)
	sharedir=$("$PG_CONFIG" --sharedir)
	incdir=$("$PG_CONFIG" --pkgincludedir)
	libdir=$("$PG_CONFIG" --pkglibdir)
	# the deepest directory holding them all
	under() { case $2/ in "$1"/*) return 0 ;; esac; return 1; }
	root=$bindir
	while [ "$root" != / ]; do
		root=$(dirname "$root")
		under "$root" "$sharedir" && under "$root" "$incdir" && under "$root" "$libdir" && break
	done
	stamp="$commit $bindir"
	PG_CONFIG_OLD=$prefix/${bindir#"$root"/}/pg_config
	if [ "$(cat "$prefix/jobqueue-stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$PG_CONFIG_OLD" ]; then
		log "old side: $BENCH_OLD_REF already built in $prefix"
	else
		log "old side: a copy of the installation of $PG_CONFIG in $prefix, for $BENCH_OLD_REF"
		[ "$root" != / ] || { echo "cannot copy the installation of $PG_CONFIG (no common directory); set PG_CONFIG_OLD" >&2; exit 1; }
		rm -rf "$prefix"
		# bindir/..: the Debian layout keeps bin/ and lib/ (pkglibdir, pgxs) there
		d=$(dirname "$bindir")
		[ "$d" != "$root" ] || d=$bindir
		for d in "$d" "$libdir" "$sharedir" "$incdir"; do
			[ -e "$prefix/${d#"$root"/}" ] && continue
			mkdir -p "$prefix/$(dirname "${d#"$root"/}")"
			cp -a "$d" "$prefix/${d#"$root"/}"
		done
		rm -f "$prefix/${libdir#"$root"/}"/jobqueue.so "$prefix/${sharedir#"$root"/}"/extension/jobqueue*
		if [ "$("$PG_CONFIG_OLD" --pkglibdir 2>/dev/null)" != "$prefix/${libdir#"$root"/}" ]; then
			echo "the copy of the installation of $PG_CONFIG in $prefix does not find its own files;" \
				"set PG_CONFIG_OLD to a separate installation of PostgreSQL 15 (for $BENCH_OLD_REF)" >&2
			exit 1
		fi
		rg_install_old
		echo "$stamp" >"$prefix/jobqueue-stamp"
	fi
	BENCH_INSTALL_OLD=0
	export PG_CONFIG_OLD
}

# Is there a jobqueue in the installation of PG_CONFIG_OLD (or will there be)?
rg_check_old() {
	[ -x "$PG_CONFIG_OLD" ] || { echo "PG_CONFIG_OLD=$PG_CONFIG_OLD: not an executable pg_config" >&2; exit 1; }
	[ "$BENCH_INSTALL_OLD" = 1 ] || [ -f "$("$PG_CONFIG_OLD" --sharedir)/extension/jobqueue.control" ] ||
		{ echo "PG_CONFIG_OLD=$PG_CONFIG_OLD: no jobqueue installed there (BENCH_INSTALL_OLD=1 builds $BENCH_OLD_REF into it)" >&2; exit 1; }
}

# A cluster for side $1 with the settings of the throughput benchmark
# (shared_buffers fixed, so both sides get the same on any machine).
rg_start() {
	local side=$1 dir=$BENCH_DIR/work-$1
	PG_BINDIR=$2
	jq_stop_leftover "$dir/data"
	rm -rf "$dir"
	mkdir -p "$dir/tmp"
	chown -R "$JQ_PGUSER" "$dir"
	jq_cluster_init "$dir" "$3" -U postgres --locale=C.UTF-8
	jq_cluster_conf <<EOF

# ---- jobqueue regression benchmark settings (both sides alike) ----
max_connections = 50
shared_preload_libraries = 'jobqueue'
shared_buffers = 512MB
work_mem = 16MB
maintenance_work_mem = 256MB
max_wal_size = 8GB
checkpoint_timeout = 30min
random_page_cost = 1.1
jit = off
autovacuum_naptime = 10s
autovacuum_vacuum_cost_limit = 2000
${BENCH_RG_CONF:-}
EOF
	jq_cluster_start
	SIDE_BIN[$side]=$2
	SIDE_WORK[$side]=$dir
	SIDE_PORT[$side]=$3
	SIDE_HOST[$side]=$JQ_PGHOST
	SIDE_DATA[$side]=$JQ_PGDATA
	use_side "$side"
	DB=postgres q "CREATE DATABASE bench" >/dev/null
	q "CREATE EXTENSION jobqueue" >/dev/null
	q "SELECT jobqueue.jq_create_queue('bench')" >/dev/null
	q "SELECT jobqueue.jq_alter_queue('bench', notify => false)" >/dev/null
	log "side $side: jobqueue $(q "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'"), $(q 'SELECT version()' | cut -d, -f1)"
}

rg_cleanup() {
	[ "${BENCH_KEEP:-0}" = 1 ] && return 0
	local side
	for side in "${!SIDE_DATA[@]}"; do
		use_side "$side"
		jq_cluster_stop
	done
}

# One run: rg_run side workload clients round; appends to regression.csv
# and prints jobs/s.
rg_run() {
	local side=$1 wl=$2 c=$3 round=$4 script n preload
	use_side "$side"
	case $wl in
	claim1) script=ext_claim1.sql n=1 preload=150000 ;;
	claimN) script=ext_claimN.sql n=$BENCH_REGRESSION_N preload=1000000 ;;
	cac) script=ext_complete_and_claim.sql n=$BENCH_REGRESSION_N preload=400000 ;;
	esac
	NO_CHECKPOINT=1 reset_jobs "$preload"
	q "CHECKPOINT" >/dev/null
	local cpu0 cpu1 out tx tps jobs left
	cpu0=$(server_cpu)
	out=$(pgb "$BENCH_SYNC_REGRESSION" -c "$c" -j "$c" -T "$BENCH_SECONDS_RG" \
		-f "$BENCH_DIR/pgbench/$script" -D q=bench -D n="$n" -D owner=bench-worker \
		-D ids={} -D tokens={})
	sleep 0.3
	cpu1=$(server_cpu)
	tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	tps=$(pgb_tps "$out")
	if [ -z "$tx" ] || [ -z "$tps" ] || grep -q -E 'aborted|error' <<<"$out"; then
		echo "$out" >&2
		echo "pgbench failed: $side $wl $c" >&2
		exit 1
	fi
	read -r jobs left < <(q "SELECT count(*) FILTER (WHERE status = 'succeeded'),
			count(*) FILTER (WHERE status = 'pending') FROM jobqueue.jobs" | tr '|' ' ')
	if [ "$left" -eq 0 ]; then
		echo "side $side $wl: the queue ran dry; raise the preload" >&2
		exit 1
	fi
	awk -v s="$side" -v w="$wl" -v c="$c" -v r="$round" -v j="$jobs" -v t="$tx" -v p="$tps" \
		-v cpu="$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { print b - a }')" \
		-v l="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN { printf "%s,%s,%s,%s,%.0f,%.1f,%s\n", s, w, c, r, j / (t / p), cpu * 1e6 / j, l }' \
		>>"$RES/regression.csv"
	tail -n 1 "$RES/regression.csv" | awk -F, '{ printf "  %-4s %-7s c=%s round %s: %7s jobs/s, %6s us server CPU/job (load %s)\n", $1, $2, $3, $4, $5, $6, $7 }'
}

# The medians per side and the ratios, from regression.csv.
rg_summary() {
	awk -F, 'NR > 1 { k = $2 "," $3; v[$1 "," k] = v[$1 "," k] " " $5; u[$1 "," k] = u[$1 "," k] " " $6; keys[k] = 1 }
		function median(s,   a, n, i, j, t) {
			n = split(s, a, " ")
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		END {
			printf "%-8s %-7s %10s %10s %7s %12s %12s\n", "workload", "clients", "old jobs/s", "new jobs/s", "new/old", "old cpu us", "new cpu us"
			for (k in keys) {
				split(k, p, ",")
				if (("old," k) in v && ("new," k) in v) {
					o = median(v["old," k]); n = median(v["new," k])
					printf "%-8s %-7s %10.0f %10.0f %7.3f %12.1f %12.1f\n", p[1], p[2], o, n, n / o, median(u["old," k]), median(u["new," k])
				}
				if (p[1] == "cac" && ("new,claimN," p[2]) in v) {
					o = median(v["new,claimN," p[2]]); n = median(v["new," k])
					printf "%-8s %-7s %10.0f %10.0f %7.3f   (new side: complete_and_claim / claim+complete_many)\n", p[1], p[2], o, n, n / o
				}
			}
		}' "$RES/regression.csv" | { read -r header; echo "$header"; sort; }
}

part_regression() {
	local wl c round first second side
	log "regression: ${BENCH_SECONDS_RG}s per run, $BENCH_ROUNDS rounds, clients $BENCH_REGRESSION_CLIENTS, synchronous_commit = $BENCH_SYNC_REGRESSION; load $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "side,workload,clients,round,jobs_per_s,server_cpu_us_per_job,load1" >"$RES/regression.csv"
	for wl in claim1 claimN; do
		for c in $BENCH_REGRESSION_CLIENTS; do
			for round in $(seq 1 "$BENCH_ROUNDS"); do
				if ((round % 2)); then first=old second=new; else first=new second=old; fi
				for side in $first $second; do
					rg_run "$side" "$wl" "$c" "$round"
				done
				if [ "$BENCH_CAC" = 1 ] && [ "$wl" = claimN ]; then
					rg_run new cac "$c" "$round"
				fi
			done
		done
	done
	{
		echo "jobqueue $(git -C "$JQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?') (new) against $BENCH_OLD_REF (old)"
		echo "load average before: $BENCH_LOAD0, after: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs"
		echo "$BENCH_ROUNDS rounds of ${BENCH_SECONDS_RG}s, median; synchronous_commit = $BENCH_SYNC_REGRESSION"
		rg_summary
	} | tee "$RES/regression.txt"
}

regression_main() {
	jq_install_packages
	# without PG_CONFIG_OLD, an installation of its own for the old side
	rg_old_installation
	rg_check_old
	local bin_new=$PG_BINDIR bin_old
	bin_old=$("$PG_CONFIG_OLD" --bindir)
	rg_install
	mkdir -p "$RES"
	trap rg_cleanup EXIT
	rg_start old "$bin_old" "$(jq_free_port 55440 55449)"
	rg_start new "$bin_new" "$(jq_free_port 55450 55459)"
	part_regression
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	regression_main
fi
