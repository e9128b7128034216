#!/usr/bin/env bash
# What results, progress and dependencies cost (bench/README.md, "Results
# and dependencies").  In one run, on a throwaway cluster of its own:
#   1. claim + complete of one job per call, without results or
#      dependencies: the library of BASE (default: the commit before this
#      feature) against the current one;
#   2. jq_complete with a 1 kB result against a plain jq_complete;
#   3. claim p50 of one job from 10,000 ready ones, with none and with
#      WAITING (default 1,000,000) waiting jobs beside them;
#   4. the jq_complete that releases 10,000 dependents.
# Usage (as root): bash bench/results.sh [BASE]
#   PG_CONFIG=... BENCH_SECONDS=10 WAITING=1000000
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$($PG_CONFIG --bindir)
BASE=${1:-92b726b}
SECONDS_EACH=${BENCH_SECONDS:-10}
WAITING=${WAITING:-1000000}
PORT=${BENCH_PORT:-55499}
WORK=$(mktemp -d /tmp/jq-bench-results.XXXXXX)
chown postgres "$WORK"
as_pg() { su postgres -c "$*"; }
sql() {		# run the SQL text $1 (psql syntax); prints its output
	printf '%s\n' "$1" > "$WORK/q.sql"
	chown postgres "$WORK/q.sql"
	as_pg "$BIN/psql -X -q -A -t -h $WORK -p $PORT -d postgres -v ON_ERROR_STOP=1 -f $WORK/q.sql"
}
many() {	# 10,000 jobs in queue $1; $2: more arguments of jq_enqueue_many
	sql "SELECT count(*) FROM jobqueue.jq_enqueue_many('$1', (SELECT array_agg('{}'::jsonb) FROM generate_series(1, 10000))$2)" >/dev/null
}
install_from() {	# $1: directory with the sources
	make -s -C "$1" PG_CONFIG="$PG_CONFIG" >/dev/null
	make -s -C "$1" PG_CONFIG="$PG_CONFIG" install >/dev/null
}
fresh_cluster() {
	as_pg "$BIN/pg_ctl -D $WORK/data -m fast stop" >/dev/null 2>&1 || true
	rm -rf "$WORK/data"
	as_pg "$BIN/initdb -D $WORK/data -A trust --no-locale -E UTF8" >/dev/null
	cat >> "$WORK/data/postgresql.conf" <<CONF
port = $PORT
unix_socket_directories = '$WORK'
listen_addresses = ''
shared_preload_libraries = 'jobqueue'
synchronous_commit = off
shared_buffers = 256MB
max_wal_size = 4GB
CONF
	as_pg "$BIN/pg_ctl -D $WORK/data -l $WORK/log -w start" >/dev/null
	sql 'CREATE EXTENSION jobqueue'
}
tps() {		# $1: script file, $2: clients; prints jobs per second
	as_pg "$BIN/pgbench -n -h $WORK -p $PORT -c $2 -j $2 -T $SECONDS_EACH -f $1 postgres" |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p' | cut -d. -f1
}
p50() {		# $1: script file, $2: transactions; prints the median latency in µs
	rm -f "$WORK"/pgbench_log.*
	(cd "$WORK" && as_pg "$BIN/pgbench -n -h $WORK -p $PORT -c 1 -t $2 -l -f $1 postgres" >/dev/null)
	awk '{print $3}' "$WORK"/pgbench_log.* | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
fill() {	# 500,000 jobs to claim
	sql "SELECT jobqueue.jq_create_queue('bench')" >/dev/null
	for i in $(seq 1 50); do many bench ''; done
	sql 'VACUUM ANALYZE jobqueue.jobs'
}

cat > "$WORK/cycle.sql" <<'SQL'
SELECT jobqueue.jq_complete(c.id, c.token) FROM jobqueue.jq_claim('bench', 1, 'w') c;
SQL
cat > "$WORK/cycle_result.sql" <<'SQL'
SELECT jobqueue.jq_complete(c.id, c.token, jsonb_build_object('r', repeat('x', 1000))) FROM jobqueue.jq_claim('bench', 1, 'w') c;
SQL
cat > "$WORK/claim.sql" <<'SQL'
SELECT count(*) FROM jobqueue.jq_claim('ready', 1, 'w');
SQL
chown postgres "$WORK"/*.sql

# 1. before and after
mkdir "$WORK/base"
git -C "$ROOT" archive "$BASE" | tar x -C "$WORK/base"
install_from "$WORK/base"
fresh_cluster; fill
before=$(tps "$WORK/cycle.sql" 2)
install_from "$ROOT"
fresh_cluster; fill
after=$(tps "$WORK/cycle.sql" 2)
# 2. with a 1 kB result
with_result=$(tps "$WORK/cycle_result.sql" 2)

# 3. claim p50 with none and with WAITING waiting jobs beside 10,000 ready
sql "SELECT jobqueue.jq_create_queue('ready'), jobqueue.jq_create_queue('blocker')" >/dev/null
many ready ''
sql 'VACUUM ANALYZE jobqueue.jobs'
p50_none=$(p50 "$WORK/claim.sql" 3000)
root=$(sql "SELECT jobqueue.jq_enqueue('blocker', '{}')")
start=$(date +%s)
for i in $(seq 1 $((WAITING / 10000))); do many ready ", depends_on => ARRAY[$root::bigint]"; done
enqueue_s=$(( $(date +%s) - start ))
sql "DELETE FROM jobqueue.jobs WHERE queue_name = 'ready' AND status <> 'waiting'" >/dev/null
many ready ''
sql 'VACUUM ANALYZE jobqueue.jobs'
p50_waiting=$(p50 "$WORK/claim.sql" 3000)

# 4. one jq_complete that releases 10,000 dependents
sql "SELECT jobqueue.jq_create_queue('fan')" >/dev/null
fanroot=$(sql "SELECT jobqueue.jq_enqueue('fan', '{}')")
many fan ", depends_on => ARRAY[$fanroot::bigint]"
release_ms=$(sql '\timing on
SELECT jobqueue.jq_complete(c.id, c.token) FROM jobqueue.jq_claim('"'fan'"', 1, '"'w'"') c' |
	sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
ready_after=$(sql "SELECT ready FROM jobqueue.queue_stats WHERE queue_name = 'fan'")

as_pg "$BIN/pg_ctl -D $WORK/data -m fast stop" >/dev/null
cat <<OUT
claim+complete, 1 job per call, 2 clients, ${SECONDS_EACH}s each:
  before ($BASE): $before jobs/s, after: $after jobs/s, ratio $(awk "BEGIN {printf \"%.3f\", $after / $before}")
jq_complete with a 1 kB result: $with_result jobs/s, $(awk "BEGIN {printf \"%.3f\", $with_result / $after}") x plain
claim p50 (1 job of 10,000 ready): none waiting $p50_none us, $WAITING waiting $p50_waiting us, $(awk "BEGIN {printf \"%.2f\", $p50_waiting / $p50_none}") x (enqueueing them: ${enqueue_s} s)
jq_complete releasing 10,000 dependents: ${release_ms} ms; ready afterwards: $ready_after
OUT
rm -rf "$WORK"
