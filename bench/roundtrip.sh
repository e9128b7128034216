#!/usr/bin/env bash
# jobqueue benchmark, part "roundtrip": the worker loop with one round trip
# per turn (jq_complete_and_claim) against two round trips (a claim and a
# complete), jobs/s side by side in one run.
# Runs alone (sudo bench/roundtrip.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
#
# A turn of the loop completes the jobs the previous turn claimed and claims
# the next batch.  The implementations, each a pgbench script, one turn per
# pgbench transaction:
#
#   cac   jq_complete_and_claim(q, ids, tokens, n, owner): 1 round trip
#         (ext_complete_and_claim.sql)
#   ext   jq_claim(q, n, owner), then jq_complete / jq_complete_many: 2 round
#         trips through the extension (ext_claim1.sql, ext_claimN.sql)
#   hand  the hand-written SKIP LOCKED claim, then the fenced complete, on
#         the same table: 2 round trips (hand_claim1.sql, hand_claimN.sql,
#         the best hand-written statements of the throughput part)
#
# for batches of 1 and 100 (BENCH_RT_BATCHES), clients BENCH_RT_CLIENTS,
# synchronous_commit BENCH_SYNC; BENCH_ROUNDS rounds, each running every
# implementation once, in an order that rotates from round to round.  The
# result is the median jobs/s per implementation and the ratios of the
# medians; server CPU per job (the postmaster's children) is recorded too.
#
# Then the choice inside jq_complete_and_claim: one SQL statement that
# completes and claims against two statements in the same server call, as
# hand-written SQL in PL/pgSQL (rt_one_statement / rt_two_statements, both
# 1 round trip; stmt_one.sql, stmt_two.sql), batches 1 and 100, 1 client,
# synchronous_commit off.
#
# Then the same three loops over a network link between the client and the
# server instead of the local socket: bench/netdelay (a small Go proxy,
# built here when Go is installed) between pgbench and the server's socket,
# delaying each chunk of data by each of BENCH_RT_NET ("0 1ms"; 0 = the
# proxy's own hop) in each direction.  The round trip of each link is
# measured (SELECT 1 through it); 1 client, synchronous_commit off, batches
# BENCH_RT_BATCHES.  This is what jq_complete_and_claim is for: the round
# trip it saves is 13 us on the local socket, 0.1 to 1 ms between machines.
#
# Results: $RES/roundtrip.csv (every run; the column link says local or
# the proxy's delay) and $RES/roundtrip.txt (medians,
# ratios, the load average before and after).  Environment: BENCH_SECONDS
# (per run), BENCH_ROUNDS (at least 3 for a median), BENCH_RT_CLIENTS
# ("1 2 4"), BENCH_RT_BATCHES ("1 100"), BENCH_SYNC ("off on"),
# BENCH_RT_STATEMENTS (1: measure one against two statements; 0: skip),
# BENCH_RT_NET (the proxy's delays; empty: no network runs),
# BENCH_RT_PRELOAD_1 and BENCH_RT_PRELOAD_100 (pending jobs before a run of
# batches of 1 and 100: 60,000 and 400,000, doubled when a run drains
# them).  BENCH_QUICK=1: 1 client, smaller preloads (lib.sh).
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BENCH_RT_CLIENTS=${BENCH_RT_CLIENTS:-1 2 4}
BENCH_RT_BATCHES=${BENCH_RT_BATCHES:-1 100}
BENCH_RT_STATEMENTS=${BENCH_RT_STATEMENTS:-1}
BENCH_RT_NET=${BENCH_RT_NET-0 1ms}
# the socket directory pgbench connects to: the server's, or the proxy's
RT_HOST=
RT_LINK=local

# The loop as hand-written SQL in one server call, in one statement or in
# two: what jq_complete_and_claim could do, without the extension's checks
# (the claim and the complete of hand_claim1.sql).  Generic plans, as the
# extension keeps them, and the claimed batch joined back by "id = ANY
# (ARRAY(...))" as in plans.c, so that the generic plan probes the primary
# key instead of hashing the whole table.
rt_functions() {
	local complete claim
	complete="jobqueue.jobs j SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL
		FROM unnest(p_ids, p_tokens) AS t(id, token)
		WHERE j.id = t.id AND j.lease_token = t.token AND (j.status = 'running') IS TRUE
		  AND j.lease_expires_at > now()"
	claim="c AS (SELECT j.id FROM jobqueue.jobs j
				WHERE j.queue_name = p_q AND j.status = 'pending' AND j.available_at <= now()
				ORDER BY j.priority DESC, j.available_at, j.id
				LIMIT p_n FOR UPDATE SKIP LOCKED),
		 u AS (UPDATE jobqueue.jobs j
				  SET status = 'running', attempt_count = j.attempt_count + 1,
					  lease_owner = p_owner, lease_token = j.lease_token + 1,
					  started_at = now(), lease_expires_at = now() + interval '60 seconds'
				WHERE j.id = ANY (ARRAY(SELECT c.id FROM c)) RETURNING j.id, j.lease_token)"
	qm "CREATE OR REPLACE FUNCTION public.rt_two_statements(p_q text, p_ids bigint[], p_tokens bigint[],
			p_n int, p_owner text, OUT ids bigint[], OUT tokens bigint[])
		LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS \$\$
		BEGIN
			UPDATE $complete;
			WITH $claim
			SELECT coalesce(array_agg(u.id), '{}'), coalesce(array_agg(u.lease_token), '{}')
			  INTO ids, tokens FROM u;
		END \$\$" \
		"CREATE OR REPLACE FUNCTION public.rt_one_statement(p_q text, p_ids bigint[], p_tokens bigint[],
			p_n int, p_owner text, OUT ids bigint[], OUT tokens bigint[])
		LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS \$\$
		BEGIN
			WITH done AS (UPDATE $complete RETURNING j.id), $claim
			SELECT coalesce(array_agg(u.id), '{}'), coalesce(array_agg(u.lease_token), '{}')
			  INTO ids, tokens FROM u;
		END \$\$" >/dev/null
}

# One run: rt_run sync batch clients impl round; appends a row to
# roundtrip_runs and prints jobs/s.  Returns 1 when the queue ran dry.
rt_run() {
	local sync=$1 n=$2 c=$3 impl=$4 round=$5 script preload
	case $impl in
	cac) script=ext_complete_and_claim.sql ;;
	ext | hand) script=${impl}_$([ "$n" = 1 ] && echo claim1 || echo claimN).sql ;;
	stmt1) script=stmt_one.sql ;;
	stmt2) script=stmt_two.sql ;;
	esac
	preload=${RT_PRELOAD[$n]}
	NO_CHECKPOINT=1 reset_jobs "$preload"
	local cpu0 cpu1 out tx tps jobs left
	cpu0=$(server_cpu)
	out=$(JQ_PGHOST=${RT_HOST:-$JQ_PGHOST} pgb "$sync" -c "$c" -j "$c" -T "$BENCH_SECONDS" \
		-f "$BENCH_DIR/pgbench/$script" -D q=bench -D n="$n" -D owner=bench-worker -D ids={} -D tokens={})
	sleep 0.3	# let the postmaster reap the exited backends (CPU time)
	cpu1=$(server_cpu)
	tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
	tps=$(pgb_tps "$out")
	if [ -z "$tx" ] || [ -z "$tps" ] || grep -q -E 'aborted|error' <<<"$out"; then
		echo "$out" >&2
		echo "pgbench failed: roundtrip $sync $n $c $impl" >&2
		exit 1
	fi
	read -r jobs left < <(q "SELECT count(*) FILTER (WHERE status = 'succeeded'),
			count(*) FILTER (WHERE status = 'pending') FROM jobqueue.jobs" | tr '|' ' ')
	[ "$left" -gt 0 ] || return 1
	r "INSERT INTO roundtrip_runs VALUES ('$sync', $n, $c, '$impl', $round, $jobs,
		$tx / $tps, $jobs / ($tx / $tps), $cpu1 - $cpu0, $tx, '$(cut -d' ' -f1 /proc/loadavg)', '$RT_LINK')" >/dev/null
	printf '  %s sync=%-3s n=%-3s c=%s %-5s round %s: %8.0f jobs/s (%s jobs, %s left, load %s)\n' \
		"$RT_LINK" "$sync" "$n" "$c" "$impl" "$round" \
		"$(awk -v j="$jobs" -v t="$tx" -v p="$tps" 'BEGIN { print j / (t / p) }')" "$jobs" "$left" \
		"$(cut -d' ' -f1 /proc/loadavg)"
}

# rt_config sync batch clients impl...: BENCH_ROUNDS rounds of the given
# implementations, the order rotating by one each round.
rt_config() {
	local sync=$1 n=$2 c=$3 round i k impl
	shift 3
	local impls=("$@")
	for round in $(seq 1 "$BENCH_ROUNDS"); do
		for ((i = 0; i < ${#impls[@]}; i++)); do
			k=$(((i + round - 1) % ${#impls[@]}))
			impl=${impls[$k]}
			until rt_run "$sync" "$n" "$c" "$impl" "$round"; do
				RT_PRELOAD[$n]=$((RT_PRELOAD[$n] * 2))
				echo "  queue drained: again with ${RT_PRELOAD[$n]} jobs" >&2
			done
		done
	done
}

# The loops over a network link: the proxy bench/netdelay between pgbench
# and the server, one run of the three loops per delay in BENCH_RT_NET.
rt_net() {
	local delay dir round out n
	[ -n "$BENCH_RT_NET" ] || return 0
	if ! command -v go >/dev/null; then
		echo "  roundtrip: Go is not installed (golang-go): no runs over a network link" >&2
		return 0
	fi
	dir=$WORK/netdelay
	mkdir -p "$dir"
	GOCACHE=$WORK/tmp/gocache go build -o "$dir/netdelay" "$BENCH_DIR/netdelay/main.go" || return 1
	chown -R "$JQ_PGUSER" "$dir"
	for delay in $BENCH_RT_NET; do
		as_pguser "$dir/netdelay" -listen "$dir/.s.PGSQL.$PORT" -to "$JQ_PGHOST/.s.PGSQL.$PORT" -delay "$delay" &
		RT_NET_PID=$!
		for ((i = 0; i < 100; i++)); do [ -S "$dir/.s.PGSQL.$PORT" ] && break; sleep 0.05; done
		RT_HOST=$dir RT_LINK="delay $delay"
		log "roundtrip: over a link with a delay of $delay each way"
		for round in $(seq 1 "$BENCH_ROUNDS"); do
			out=$(JQ_PGHOST=$dir pgb off -c 1 -j 1 -T "$BENCH_SECONDS" -f "$BENCH_DIR/pgbench/select1.sql")
			r "INSERT INTO roundtrip_runs VALUES ('off', 0, 1, 'select1', $round, 0, $BENCH_SECONDS,
				$(pgb_tps "$out"), 0, 0, '$(cut -d' ' -f1 /proc/loadavg)', '$RT_LINK')" >/dev/null
		done
		for n in $BENCH_RT_BATCHES; do
			rt_config off "$n" 1 cac ext hand
		done
		kill "$RT_NET_PID" 2>/dev/null || true
		pkill -u "$JQ_PGUSER" -x netdelay 2>/dev/null || true
		wait "$RT_NET_PID" 2>/dev/null || true
		rm -f "$dir/.s.PGSQL.$PORT"
	done
	RT_HOST= RT_LINK=local
}

declare -A RT_PRELOAD
part_roundtrip() {
	local load0 sync n c
	load0=$(cut -d' ' -f1-3 /proc/loadavg)
	log "roundtrip: ${BENCH_SECONDS}s per run, $BENCH_ROUNDS rounds, batches $BENCH_RT_BATCHES, clients $BENCH_RT_CLIENTS, synchronous_commit $BENCH_SYNC; load $load0"
	RT_PRELOAD[1]=${BENCH_RT_PRELOAD_1:-60000}
	RT_PRELOAD[100]=${BENCH_RT_PRELOAD_100:-400000}
	r "CREATE TABLE IF NOT EXISTS roundtrip_runs (sync_commit text, batch int, clients int,
			impl text, round int, jobs bigint, seconds float8, jobs_per_s float8,
			server_cpu_s float8, turns bigint, load1 text, link text)" >/dev/null
	rt_functions
	for sync in $BENCH_SYNC; do
		for n in $BENCH_RT_BATCHES; do
			[ -n "${RT_PRELOAD[$n]:-}" ] || RT_PRELOAD[$n]=$((n * 4000))
			for c in $BENCH_RT_CLIENTS; do
				rt_config "$sync" "$n" "$c" cac ext hand
			done
		done
	done
	# What one round trip costs here: pgbench's SELECT 1 at 1 client
	local round out
	for round in $(seq 1 "$BENCH_ROUNDS"); do
		out=$(pgb off -c 1 -j 1 -T "$BENCH_SECONDS" -f "$BENCH_DIR/pgbench/select1.sql")
		r "INSERT INTO roundtrip_runs VALUES ('off', 0, 1, 'select1', $round, 0, $BENCH_SECONDS,
			$(pgb_tps "$out"), 0, 0, '$(cut -d' ' -f1 /proc/loadavg)', 'local')" >/dev/null
	done
	rt_net
	if [ "$BENCH_RT_STATEMENTS" = 1 ]; then
		for n in $BENCH_RT_BATCHES; do
			rt_config off "$n" 1 stmt1 stmt2
		done
	fi
	local load1
	load1=$(cut -d' ' -f1-3 /proc/loadavg)
	bench_psql -d benchres -c "\\copy (SELECT sync_commit, batch, clients, impl, round, jobs,
			round(seconds::numeric, 3) AS seconds, round(jobs_per_s::numeric) AS jobs_per_s,
			round((server_cpu_s * 1e6 / jobs)::numeric, 1) AS server_cpu_us_per_job, turns, load1, link
		FROM roundtrip_runs WHERE impl <> 'select1' ORDER BY link <> 'local', link, sync_commit DESC, batch, clients, round, impl) TO STDOUT WITH (FORMAT csv, HEADER)" \
		>"$RES/roundtrip.csv"
	{
		echo "jobqueue $(git -C "$JQ_ROOT" rev-parse --short HEAD 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs"
		echo "load average (1, 5, 15 min) before: $load0, after: $load1"
		echo "$BENCH_ROUNDS rounds of ${BENCH_SECONDS}s per implementation, order rotating; medians of jobs/s"
		echo "cac: jq_complete_and_claim (1 round trip per turn); ext: jq_claim + jq_complete(_many) (2);"
		echo "hand: hand-written claim + complete (2); stmt1/stmt2: hand-written, 1 round trip, 1 or 2 statements"
		echo
		echo "the worker loop, jobs/s (median) and ratios of the medians:"
		r "WITH m AS (SELECT sync_commit, batch, clients, impl, count(*) AS runs,
				percentile_cont(0.5) WITHIN GROUP (ORDER BY jobs_per_s) AS jps,
				percentile_cont(0.5) WITHIN GROUP (ORDER BY server_cpu_s * 1e6 / jobs) AS cpu
			  FROM roundtrip_runs WHERE jobs > 0 AND link = 'local' GROUP BY 1, 2, 3, 4)
			SELECT 'sync ' || rpad(c.sync_commit, 3) || ' batch ' || lpad(c.batch::text, 3) || ' clients ' || c.clients
				|| ': cac ' || lpad(round(c.jps)::text, 6) || ', ext ' || lpad(round(e.jps)::text, 6)
				|| ', hand ' || lpad(round(h.jps)::text, 6)
				|| ' | cac/hand ' || to_char(c.jps / h.jps, 'FM0.00') || ', cac/ext ' || to_char(c.jps / e.jps, 'FM0.00')
				|| ' | CPU us/job ' || round(c.cpu::numeric, 1) || ' / ' || round(e.cpu::numeric, 1) || ' / ' || round(h.cpu::numeric, 1)
				|| ' (' || c.runs || ' runs)'
			  FROM m c JOIN m e ON (e.sync_commit, e.batch, e.clients, e.impl) = (c.sync_commit, c.batch, c.clients, 'ext')
			  JOIN m h ON (h.sync_commit, h.batch, h.clients, h.impl) = (c.sync_commit, c.batch, c.clients, 'hand')
			 WHERE c.impl = 'cac' ORDER BY c.sync_commit DESC, c.batch, c.clients"
		echo
		echo "the same ratios round by round (each round runs the three side by side): min / median / max"
		r "WITH p AS (SELECT c.sync_commit, c.batch, c.clients, c.round,
				c.jobs_per_s / h.jobs_per_s AS vs_hand, c.jobs_per_s / e.jobs_per_s AS vs_ext
			  FROM roundtrip_runs c
			  JOIN roundtrip_runs h ON (h.sync_commit, h.batch, h.clients, h.round, h.impl) = (c.sync_commit, c.batch, c.clients, c.round, 'hand')
			  JOIN roundtrip_runs e ON (e.sync_commit, e.batch, e.clients, e.round, e.impl) = (c.sync_commit, c.batch, c.clients, c.round, 'ext')
			 WHERE c.impl = 'cac' AND c.link = 'local' AND h.link = 'local' AND e.link = 'local')
			SELECT 'sync ' || rpad(sync_commit, 3) || ' batch ' || lpad(batch::text, 3) || ' clients ' || clients
				|| ': cac/hand ' || to_char(min(vs_hand), 'FM0.00') || ' / ' || to_char(percentile_cont(0.5) WITHIN GROUP (ORDER BY vs_hand), 'FM0.00') || ' / ' || to_char(max(vs_hand), 'FM0.00')
				|| ', cac/ext ' || to_char(min(vs_ext), 'FM0.00') || ' / ' || to_char(percentile_cont(0.5) WITHIN GROUP (ORDER BY vs_ext), 'FM0.00') || ' / ' || to_char(max(vs_ext), 'FM0.00')
			  FROM p GROUP BY sync_commit, batch, clients ORDER BY sync_commit DESC, batch, clients"
		echo
		echo "one round trip (SELECT 1, 1 client, median):"
		r "SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY jobs_per_s)) || ' round trips/s = '
				|| round((1e6 / percentile_cont(0.5) WITHIN GROUP (ORDER BY jobs_per_s))::numeric, 1) || ' us each'
			  FROM roundtrip_runs WHERE impl = 'select1' AND link = 'local' HAVING count(*) > 0"
		echo
		echo "over a network link (bench/netdelay; 1 client, synchronous_commit off), medians:"
		r "WITH m AS (SELECT link, batch, impl, count(*) AS runs,
				percentile_cont(0.5) WITHIN GROUP (ORDER BY jobs_per_s) AS jps
			  FROM roundtrip_runs WHERE link <> 'local' GROUP BY 1, 2, 3)
			SELECT 'link ' || rpad(c.link, 10) || CASE WHEN c.batch = 0 THEN
					': round trip ' || round((1e6 / c.jps)::numeric) || ' us'
				ELSE ' batch ' || lpad(c.batch::text, 3) || ': cac ' || lpad(round(c.jps)::text, 6)
					|| ', ext ' || lpad(round(e.jps)::text, 6) || ', hand ' || lpad(round(h.jps)::text, 6)
					|| ' | cac/hand ' || to_char(c.jps / h.jps, 'FM0.00') || ', cac/ext ' || to_char(c.jps / e.jps, 'FM0.00')
					|| ' (' || c.runs || ' runs)' END
			  FROM m c LEFT JOIN m e ON (e.link, e.batch, e.impl) = (c.link, c.batch, 'ext')
			  LEFT JOIN m h ON (h.link, h.batch, h.impl) = (c.link, c.batch, 'hand')
			 WHERE c.impl IN ('cac', 'select1') ORDER BY c.link, c.batch"
		echo
		echo "one statement or two in one server call (hand-written, 1 client, synchronous_commit off):"
		r "WITH m AS (SELECT batch, impl, count(*) AS runs,
				percentile_cont(0.5) WITHIN GROUP (ORDER BY jobs_per_s) AS jps,
				percentile_cont(0.5) WITHIN GROUP (ORDER BY server_cpu_s * 1e6 / jobs) AS cpu
			  FROM roundtrip_runs WHERE impl IN ('stmt1', 'stmt2') GROUP BY 1, 2)
			SELECT 'batch ' || lpad(o.batch::text, 3) || ': one statement ' || round(o.jps) || ' jobs/s ('
				|| round(o.cpu::numeric, 1) || ' us CPU/job), two statements ' || round(t.jps) || ' jobs/s ('
				|| round(t.cpu::numeric, 1) || ' us CPU/job), one/two ' || to_char(o.jps / t.jps, 'FM0.00')
			  FROM m o JOIN m t ON t.batch = o.batch AND t.impl = 'stmt2' WHERE o.impl = 'stmt1' ORDER BY o.batch"
	} | tee "$RES/roundtrip.txt"
}

bench_part_main roundtrip "${BASH_SOURCE[0]}"
