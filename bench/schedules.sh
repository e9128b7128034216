#!/bin/bash
# Schedules and rate limits, on a running server with jobqueue preloaded
# (PGHOST, PGPORT, PGDATABASE as for psql; the extension is created in a
# scratch database jq_bench_sched, dropped at the end):
#
#  1. claim + complete on a queue whose rate limit never binds
#     (rate_limit = 1,000,000) against a queue without a limit, alternating
#     runs of SCHED_BENCH_SECONDS with SCHED_BENCH_CLIENTS clients; the
#     ratio of the medians;
#  2. SCHED_BENCH_SCHEDULES '* * * * *' schedules: how long after the minute
#     the last of their jobs was enqueued, and the CPU the worker used in
#     that minute (from /proc, so the script must run on the server's
#     machine, as a user that may read the worker's /proc entry).
#
#   PGHOST=/tmp PGPORT=5432 bash bench/schedules.sh
set -euo pipefail
SECONDS_RUN=${SCHED_BENCH_SECONDS:-5}
CLIENTS=${SCHED_BENCH_CLIENTS:-4}
ROUNDS=${SCHED_BENCH_ROUNDS:-3}
NSCHED=${SCHED_BENCH_SCHEDULES:-10000}
DB=jq_bench_sched
PSQL=(psql -X -q -At -v ON_ERROR_STOP=1)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
"${PSQL[@]}" -d $DB -c 'CREATE EXTENSION jobqueue' \
	-c "SELECT jobqueue.jq_create_queue('limited', rate_limit => 1000000, rate_burst => 1000000)" \
	-c "SELECT jobqueue.jq_create_queue('free')"

tps() {
	pgbench -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECONDS_RUN" -D q="$1" -D n=10 -D owner=bench \
		-f "$(dirname "$0")/pgbench/ext_flow.sql" $DB 2>/dev/null |
		sed -n 's/^tps = \([0-9.]*\) (without.*/\1/p'
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

echo "== claim + complete, $CLIENTS clients, $ROUNDS x ${SECONDS_RUN}s each, batches of 10"
: > "$work/free"; : > "$work/limited"
for r in $(seq "$ROUNDS"); do
	tps free >> "$work/free"
	tps limited >> "$work/limited"
done
free=$(median < "$work/free"); limited=$(median < "$work/limited")
echo "free: $(tr '\n' ' ' < "$work/free")-> median $free tps"
echo "limited (never binding): $(tr '\n' ' ' < "$work/limited")-> median $limited tps"
awk -v a="$limited" -v b="$free" 'BEGIN { printf "ratio limited / free: %.3f\n", a / b }'

echo "== $NSCHED schedules '* * * * *'"
"${PSQL[@]}" -d $DB -c "SELECT jobqueue.jq_create_queue('tick')" \
	-c "SELECT count(jobqueue.jq_schedule('s' || g, 'tick', '* * * * *', catch_up => 'none')) FROM generate_series(1, $NSCHED) g"
# wait for the start of a minute at least 5 s away, then for the worker
"${PSQL[@]}" -d $DB -c "SELECT pg_sleep_until(date_trunc('minute', now() + interval '65 seconds') - interval '3 seconds')"
pid=$("${PSQL[@]}" -d $DB -c "SELECT pid FROM jobqueue.jq_worker_status()")
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
cpu0=$(cpu "$pid")
minute=$("${PSQL[@]}" -d $DB -c "SELECT date_trunc('minute', now() + interval '1 minute')")
"${PSQL[@]}" -d $DB -c "SELECT pg_sleep_until('$minute'::timestamptz + interval '57 seconds')"
cpu1=$(cpu "$pid")
"${PSQL[@]}" -d $DB -c "
SELECT count(*) || ' jobs for the slot ' || '$minute' || ', the last enqueued '
       || round(extract(epoch FROM max(created_at) - '$minute'::timestamptz)::numeric, 3)
       || ' s after it (first ' || round(extract(epoch FROM min(created_at) - '$minute'::timestamptz)::numeric, 3) || ' s)'
FROM jobqueue.jobs WHERE queue_name = 'tick' AND payload ->> 'jq_slot' = to_char('$minute'::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
echo "worker (pid $pid) CPU in that minute: $(awk -v a="$cpu0" -v b="$cpu1" -v t="$ticks" 'BEGIN { printf "%.2f s", (b - a) / t }')"

"${PSQL[@]}" -d postgres -c "DROP DATABASE $DB"
