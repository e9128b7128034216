#!/usr/bin/env bash
# jobqueue benchmark, part "diag": where the time goes (pg_stat_statements), the fixed cost of a call.
# Runs alone (sudo bench/diag.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

part_diag() {
	log "diagnostics: per-statement times of claim + complete (1 client, 5,000 jobs each)"
	local impl n
	qm "ALTER SYSTEM SET pg_stat_statements.track = 'all'" \
		"ALTER SYSTEM SET pg_stat_statements.track_planning = on" "SELECT pg_reload_conf()" >/dev/null
	r "CREATE TABLE IF NOT EXISTS diag (impl text, batch int, toplevel bool, calls bigint,
			plans bigint, plan_ms float8, total_ms float8, us_per_call float8,
			us_per_job float8, query text)" >/dev/null
	for n in 1 100; do
		for impl in ext hand $([ $n = 1 ] && echo handplain); do
			reset_jobs 20000
			q "SELECT pg_stat_statements_reset()" >/dev/null
			pgb off -c 1 -j 1 -t $((5000 / n)) \
				-f "$BENCH_DIR/pgbench/${impl}_$([ $n = 1 ] && echo claim1 || echo claimN).sql" \
				-D q=bench -D n=$n -D owner=w >/dev/null
			q "SELECT '$impl', $n, toplevel, calls, plans, total_plan_time, total_exec_time,
					total_exec_time * 1000 / calls, total_exec_time * 1000 / 5000,
					regexp_replace(query, '\s+', ' ', 'g')
				 FROM pg_stat_statements
				WHERE calls >= $((5000 / n)) AND dbid = (SELECT oid FROM pg_database WHERE datname = 'bench')
				ORDER BY total_exec_time DESC LIMIT 6" |
				r_copy diag "FORMAT csv, DELIMITER '|'"
		done
	done
	qm "ALTER SYSTEM RESET pg_stat_statements.track" \
		"ALTER SYSTEM RESET pg_stat_statements.track_planning" "SELECT pg_reload_conf()" >/dev/null
	r "SELECT impl, batch, toplevel, calls, plans, round(us_per_job::numeric, 1), left(query, 60) FROM diag" | sed 's/^/  /'

	# The fixed cost of a call: a complete that matches no job, as installed
	# (SECURITY DEFINER with SET search_path), without the SET clause,
	# without either, and as hand-written SQL; 1 client, rounds interleaved.
	r "CREATE TABLE IF NOT EXISTS call_cost (variant text, round int, calls_per_s float8)" >/dev/null
	local round variant out fn
	# its signature as installed (1.3 added an argument)
	fn=$(q "SELECT p.oid::regprocedure FROM pg_proc p WHERE p.proname = 'jq_complete'
			AND p.pronamespace = 'jobqueue'::regnamespace ORDER BY p.pronargs LIMIT 1")
	reset_jobs 1000
	for round in 1 2 3; do
		for variant in "as installed" "without SET search_path" "SECURITY INVOKER, no SET" "hand-written UPDATE"; do
			case $variant in
			"as installed") q "ALTER FUNCTION $fn SECURITY DEFINER SET search_path = pg_catalog, pg_temp" ;;
			"without SET search_path") q "ALTER FUNCTION $fn RESET search_path" ;;
			"SECURITY INVOKER, no SET") q "ALTER FUNCTION $fn SECURITY INVOKER RESET search_path" ;;
			esac
			out=$(pgb off -c 1 -j 1 -T "$BENCH_SECONDS" -f "$BENCH_DIR/pgbench/$([ "$variant" = "hand-written UPDATE" ] &&
				echo hand || echo ext)_noop_complete.sql")
			r "INSERT INTO call_cost VALUES ('$variant', $round,
				$(pgb_tps "$out"))" >/dev/null
		done
	done
	q "ALTER FUNCTION $fn SECURITY DEFINER SET search_path = pg_catalog, pg_temp" >/dev/null
	r "SELECT variant, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY calls_per_s)::numeric)
		 FROM call_cost GROUP BY 1 ORDER BY 2" | sed 's/^/  no-op complete, /'

	# The fenced complete of one job with 5,000 jobs running, after an
	# ANALYZE that saw none running: plain status test and "IS TRUE" form,
	# generic plans as the extension keeps them.
	reset_jobs 100000
	qm "SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" \
		"SELECT count(*) FROM jobqueue.jq_claim('bench', 1000, 'w')" >/dev/null
	local stmt id
	id=$(q "SELECT max(id) FROM jobqueue.jobs WHERE status = 'running'")
	{
		for stmt in "j.status = 'running'" "(j.status = 'running') IS TRUE"; do
			echo "==== complete of one job, 5000 running, status test: $stmt"
			qm "SET plan_cache_mode = force_generic_plan" \
				"PREPARE c(bigint, bigint, timestamptz) AS UPDATE jobqueue.jobs j
					SET status = 'succeeded', finished_at = \$3, lease_expires_at = NULL
					WHERE j.id = \$1 AND j.lease_token = \$2 AND $stmt AND j.lease_expires_at > \$3" \
				"BEGIN" \
				"EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF)
					EXECUTE c($id, 1, now())" \
				"ROLLBACK"
			echo
		done
	} >"$RES/explain_complete.txt"
	cat "$RES/explain_complete.txt" | sed 's/^/  /'
}

bench_part_main diag "${BASH_SOURCE[0]}"
