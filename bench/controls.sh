#!/usr/bin/env bash
# What the controls of docs/controls.md cost, this build against itself,
# on a throwaway cluster of its own (synchronous_commit = off, the worker
# off).  Measured inside the server, one session, the sides alternating in
# every round, median of CTL_ROUNDS rounds; each ratio is taken from one
# run, and the load average is printed before and after (the machine may
# be shared):
#   1. enqueue: a plain jq_enqueue; a debounced one that inserts (a new
#      key each time) and one that replaces (one key); one into a queue
#      with max_pending and group_max_pending far from the limit, against
#      a plain one and against one into a queue without limits with the
#      same group keys (what the limits add to a grouped enqueue); one
#      into a queue with only max_pending.
#      Targets: debounced <= 2x plain, admission-checked <= 1.5x plain.
#   2. claim of one job, rolled back (every claim sees the same jobs), at
#      CTL_READY ready jobs: fairness 'deadline' (every job with a
#      start_by) against fairness 'priority'.  Target: <= 2x.
# Usage (as root): PG_CONFIG=... bash bench/controls.sh
#   CTL_ROUNDS=5 CTL_SECONDS=3 CTL_CALLS=2000 CTL_READY='100 10000' BENCH_INSTALL=0
#   CTL_OUT=file (default bench/results/controls.txt)
source "$(dirname "$0")/lib.sh"

CTL_ROUNDS=${CTL_ROUNDS:-5}
CTL_CALLS=${CTL_CALLS:-2000}
CTL_SECONDS=${CTL_SECONDS:-3}
CTL_READY=${CTL_READY:-100 10000}
CTL_OUT=${CTL_OUT:-$RES/controls.txt}
PG_BINDIR=$("$PG_CONFIG" --bindir)
export PG_CONFIG PG_BINDIR
WORK=$(mktemp -d /tmp/jq-bench-controls.XXXXXX)
PORT=${BENCH_PORT:-$(jq_free_port 55440 55469)}
DB=bench

trap 'jq_cluster_stop; rm -rf "$WORK"' EXIT
mkdir -p "$WORK/tmp" "$(dirname "$CTL_OUT")"
chown -R "$JQ_PGUSER" "$WORK"

if [ "$BENCH_INSTALL" = 1 ]; then
	src=$(jq_workdir bench-controls)
	jq_build_install "$src"
	rm -rf "$src"
fi

jq_cluster_init "$WORK" "$PORT" -U postgres --locale=C.UTF-8
jq_cluster_conf <<CONF
shared_preload_libraries = 'jobqueue'
jobqueue.worker_enabled = off
synchronous_commit = off
shared_buffers = 256MB
jit = off
CONF
jq_cluster_start
DB=postgres q "CREATE DATABASE bench" >/dev/null
q "CREATE EXTENSION jobqueue" >/dev/null

# microseconds per claim of one job, each rolled back, calls times
q "CREATE FUNCTION public.claim_us(queue text, calls int) RETURNS float8
   LANGUAGE plpgsql AS \$\$
   DECLARE t0 timestamptz; i int; n int;
   BEGIN
     t0 := clock_timestamp();
     FOR i IN 1..calls LOOP
       BEGIN
         SELECT count(*) INTO n FROM jobqueue.jq_claim(queue, 1, 'bench');
         IF n <> 1 THEN RAISE EXCEPTION 'claimed % jobs', n; END IF;
         RAISE SQLSTATE 'JQBEN';
       EXCEPTION WHEN SQLSTATE 'JQBEN' THEN NULL;
       END;
     END LOOP;
     RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / calls;
   END \$\$" >/dev/null

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

{
echo "# bench/controls.sh $(date -u +%FT%TZ), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# rounds $CTL_ROUNDS; enqueue: pgbench, 1 client, $CTL_SECONDS s per side and round (each call its own transaction); claim: $CTL_CALLS / 4 claims per side and round, each rolled back; microseconds per call (median)"

q "SELECT jobqueue.jq_create_queue('plain'), jobqueue.jq_create_queue('deb'),
          jobqueue.jq_create_queue('adm', max_pending => 100000000, group_max_pending => 100000000),
          jobqueue.jq_create_queue('plaing'), jobqueue.jq_create_queue('admq', max_pending => 100000000)" >/dev/null
# each enqueue its own transaction, as producers do: pgbench, one client,
# CTL_SECONDS per side and round
cat >"$WORK/plain.sql" <<'SQL'
\set n random(1, 1000000000)
SELECT jobqueue.jq_enqueue('plain', '{"task": "x"}');
SQL
cat >"$WORK/debnew.sql" <<'SQL'
\set n random(1, 1000000000)
SELECT jobqueue.jq_enqueue('deb', '{"task": "x"}', debounce_key => 'k' || :n);
SQL
cat >"$WORK/debsame.sql" <<'SQL'
\set n random(1, 1000)
SELECT jobqueue.jq_enqueue('deb', '{"task": "x"}', debounce_key => 's' || :n, debounce => '1 minute');
SQL
cat >"$WORK/adm.sql" <<'SQL'
\set n random(1, 100)
SELECT jobqueue.jq_enqueue('adm', '{"task": "x"}', group_key => 'g' || :n);
SQL
cat >"$WORK/plaing.sql" <<'SQL'
\set n random(1, 100)
SELECT jobqueue.jq_enqueue('plaing', '{"task": "x"}', group_key => 'g' || :n);
SQL
cat >"$WORK/admq.sql" <<'SQL'
SELECT jobqueue.jq_enqueue('admq', '{"task": "x"}');
SQL
chown -R "$JQ_PGUSER" "$WORK"
tps() {
	as_pguser "$PG_BINDIR/pgbench" -n -h "$JQ_PGHOST" -p "$PORT" -c 1 -T "$CTL_SECONDS" \
		-f "$1" bench 2>/dev/null | awk '/^tps/ {print $3}'
}
for side in plain debnew debsame adm plaing admq; do : >"$WORK/$side"; done
for r in $(seq "$CTL_ROUNDS"); do
	for side in plain debnew debsame adm plaing admq; do
		t=$(tps "$WORK/$side.sql")
		echo "1000000 / $t" | bc -l >>"$WORK/$side"
	done
done
plain=$(median <"$WORK/plain"); debnew=$(median <"$WORK/debnew")
debsame=$(median <"$WORK/debsame"); adm=$(median <"$WORK/adm")
plaing=$(median <"$WORK/plaing"); admq=$(median <"$WORK/admq")
printf 'enqueue plain                     %8.1f us\n' "$plain"
printf 'enqueue debounced, new key        %8.1f us  %.2fx (target <= 2)\n' "$debnew" "$(echo "$debnew / $plain" | bc -l)"
printf 'enqueue debounced, replacing      %8.1f us  %.2fx (target <= 2)\n' "$debsame" "$(echo "$debsame / $plain" | bc -l)"
printf 'enqueue with admission limits     %8.1f us  %.2fx (target <= 1.5)\n' "$adm" "$(echo "$adm / $plain" | bc -l)"
printf 'enqueue plain, same group keys    %8.1f us  %.2fx; limits / this: %.2fx\n' "$plaing" "$(echo "$plaing / $plain" | bc -l)" "$(echo "$adm / $plaing" | bc -l)"
printf 'enqueue with max_pending only     %8.1f us  %.2fx (target <= 1.5)\n' "$admq" "$(echo "$admq / $plain" | bc -l)"

for n in $CTL_READY; do
	q "SELECT jobqueue.jq_drop_queue(q, true) FROM unnest(ARRAY['cprio', 'cdead']) q
	   WHERE EXISTS (SELECT FROM jobqueue.queues WHERE queue_name = q)" >/dev/null
	q "SELECT jobqueue.jq_create_queue('cprio'), jobqueue.jq_create_queue('cdead', fairness => 'deadline')" >/dev/null
	q "SELECT count(*) FROM jobqueue.jq_enqueue_many('cprio', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, $n)))" >/dev/null
	q "SELECT count(*) FROM generate_series(1, $n) i,
	   LATERAL jobqueue.jq_enqueue('cdead', '{}', start_by => now() + interval '1 hour' + i * interval '1 ms')" >/dev/null
	q "VACUUM ANALYZE jobqueue.jobs" >/dev/null
	: >"$WORK/cprio"; : >"$WORK/cdead"
	for r in $(seq "$CTL_ROUNDS"); do
		q "SELECT claim_us('cprio', $CTL_CALLS / 4)" >>"$WORK/cprio"
		q "SELECT claim_us('cdead', $CTL_CALLS / 4)" >>"$WORK/cdead"
	done
	cp=$(median <"$WORK/cprio"); cd_=$(median <"$WORK/cdead")
	printf 'claim of 1, %6d ready, priority %8.1f us\n' "$n" "$cp"
	printf 'claim of 1, %6d ready, deadline %8.1f us  %.2fx (target <= 2)\n' "$n" "$cd_" "$(echo "$cd_ / $cp" | bc -l)"
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$CTL_OUT"
