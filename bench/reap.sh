#!/usr/bin/env bash
# jobqueue benchmark, part "reap": time to clear expired leases.
# Runs alone (sudo bench/reap.sh) or as part of bench/run.sh; the
# environment is that of bench/run.sh.
[ -n "${BENCH_LIB:-}" ] || source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

load_expired() {
	reset_jobs 0 "INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, status,
			available_at, attempt_count, lease_owner, lease_token, started_at, lease_expires_at)
		SELECT 'bench', '$PAYLOAD', 8, 'running', now() - interval '1 hour', 1,
			   'crashed-worker', 1, now() - interval '2 minutes',
			   now() - interval '1 minute' - g * interval '1 microsecond'
		  FROM generate_series(1, $1) AS g"
}

part_reap() {
	log "reaper: clearing ${BENCH_REAP_SIZES// /, } expired leases"
	local n res t0 t1 left span batch=${BENCH_REAP_BATCH:-10000} worker=0
	have_worker && worker=1
	for n in $BENCH_REAP_SIZES; do
		# jq_reap() called in a loop, one transaction per batch, as a
		# scheduler would; the background worker must not help.
		if ((worker)); then
			q "ALTER SYSTEM SET jobqueue.worker_enabled = off" >/dev/null
			q "SELECT pg_reload_conf()" >/dev/null
			sleep 2
		fi
		load_expired "$n"
		t0=$(date +%s.%N)
		res=$(q "CALL public.reap_all($batch)")
		t1=$(date +%s.%N)
		r "INSERT INTO reap VALUES ('jq_reap($batch) loop with a commit per batch', $n,
			${res%|*}, ${res#*|}, $t1 - $t0)" >/dev/null
		printf '  %8d expired, jq_reap(%d) loop: %.1f s\n' "$n" "$batch" \
			"$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
		if ((worker)); then
			# The background worker: running, but with a reap interval too
			# long to matter while the expired leases are loaded; the clock
			# starts when the normal interval is restored.
			q "ALTER SYSTEM RESET jobqueue.worker_enabled" >/dev/null
			q "ALTER SYSTEM SET jobqueue.reap_interval = '1h'" >/dev/null
			q "SELECT pg_reload_conf()" >/dev/null
			sleep 2
			if have_worker; then
				# The launcher starts the worker again within its interval.
				for _ in $(seq 1 60); do
					[ "$(q "SELECT attached FROM jobqueue.jq_worker_status()")" = t ] && break
					sleep 0.5
				done
				load_expired "$n"
				q "ALTER SYSTEM RESET jobqueue.reap_interval" >/dev/null
				t0=$(date +%s.%N)
				q "SELECT pg_reload_conf()" >/dev/null
				# at most BENCH_REAP_WAIT seconds: a worker that does not
				# come is recorded as such, the run goes on
				local how="background worker (reap_batch ' || current_setting('jobqueue.reap_batch') || ')"
				while :; do
					left=$(q "SELECT count(*) FROM jobqueue.jobs WHERE status = 'running'")
					[ "$left" = 0 ] && break
					if awk -v a="$t0" -v b="$(date +%s.%N)" -v w="$BENCH_REAP_WAIT" 'BEGIN { exit !(b - a > w) }'; then
						how+=", $left left after $BENCH_REAP_WAIT s"
						echo "  the background worker did not reap every lease within $BENCH_REAP_WAIT s ($left left)" >&2
						break
					fi
					sleep 0.2
				done
				t1=$(date +%s.%N)
				# The wait includes the pool's way to the database: the plain
				# INSERT above marks no activity, so the database is visited
				# when its idle_visit_interval comes round.  The reaping
				# itself: from the first reap to the last, as each reap
				# recorded it in the job's history.
				span=$(q "SELECT round(extract(epoch FROM max(at) - min(at))::numeric, 3)
					FROM (SELECT (errors -> -1 ->> 'at')::timestamptz AS at FROM jobqueue.jobs
						  WHERE queue_name = 'bench' AND last_error_code = 'LEASE_EXPIRED') s")
				r "INSERT INTO reap VALUES ('$how, from the reload', $n, $n - $left, NULL, $t1 - $t0)" >/dev/null
				r "INSERT INTO reap VALUES ('$how, first to last reap', $n, $n - $left, NULL, ${span:-NULL})" >/dev/null
				printf '  %8d expired, background worker: %.1f s from the reload, %.1f s from its first reap to its last, %d left\n' \
					"$n" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "${span:-0}" "$left"
			fi
			q "ALTER SYSTEM RESET jobqueue.reap_interval" >/dev/null
			q "SELECT pg_reload_conf()" >/dev/null
		fi
	done
}

bench_part_main reap "${BASH_SOURCE[0]}"
