#!/usr/bin/env bash
# The jobqueue demo, on a fresh Debian bookworm machine:
#   installs what is missing of what the demo needs (build-essential,
#   postgresql-15, postgresql-server-dev-15: nothing of the tests or the
#   clients), builds and installs the extension, starts a
#   throwaway cluster under ./demo/work, and tells a short story: a few
#   thousand jobs, four workers, one worker that crashes holding leases,
#   the recovery of its jobs, a dead-lettered job and its replay.
# Usage: bash scripts/demo.sh as root, or sudo bash scripts/demo.sh
#                                 (exits non-zero if any job is lost or
#                                  not recovered; the cluster is stopped
#                                  at the end in every case)
# Environment: PG_CONFIG (default: the packaged PostgreSQL 15),
#   JQ_DEMO_JOBS (default 3000), JQ_DEMO_DIR (default ./demo/work),
#   JQ_DEMO_WORKER=off (run without the background worker: the demo then
#   calls jq_reap() itself, as a scheduler would),
#   JQ_DEMO_DASHBOARD=HOST:PORT (after the story, keep the cluster running
#   and serve the dashboard, dashboard/jobqueue-dashboard, on HOST:PORT
#   against the demo's database, until Ctrl-C; see dashboard/README.md).
source "$(dirname "$0")/common.sh"

NJOBS=${JQ_DEMO_JOBS:-3000}
NWORKERS=4
BATCH=50			# jobs per claim
LEASE=3				# seconds; the queue's lease_duration
CRASH_BATCH=20		# jobs the crashing worker takes with it
DB=jobqueue_demo
T_START=$(date +%s.%N)

say() { printf '    %s\n' "$*"; }
fail() { printf '\nDEMO FAILED: %s\n' "$*" >&2; exit 1; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

if ! [[ $NJOBS =~ ^[0-9]+$ ]] || ((NJOBS < 1000)); then
	fail "JQ_DEMO_JOBS must be a number of at least 1000"
fi

if [ -n "${JQ_DEMO_DASHBOARD:-}" ]; then
	jq_install_only "${JQ_PKGS_BUILD[@]}" nodejs npm	# the dashboard's runtime
else
	jq_install_only "${JQ_PKGS_BUILD[@]}"
fi
srcdir=$(jq_workdir demo)
jq_build_install "$srcdir"
rm -rf "$srcdir"

# ---------------------------------------------------------------------------
# A throwaway cluster in a project-local directory
# ---------------------------------------------------------------------------
WORK=${JQ_DEMO_DIR:-$JQ_ROOT/demo/work}
PG_STARTED=0
WORKER_PIDS=()

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for pid in "${WORKER_PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if ((PG_STARTED)); then
		jq_cluster_stop
		echo
		echo "The demo cluster is stopped; its files and log are in $WORK."
	fi
	if ((rc != 0)) && [ -f "$WORK/server.log" ]; then
		echo "---- last lines of $WORK/server.log"
		tail -n 20 "$WORK/server.log"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

jq_stop_leftover "$WORK/data"
rm -rf "$WORK"
jq_owned_dir "$WORK"
if ! as_pguser test -w "$WORK" -a -x "$WORK"; then
	# e.g. a clone in /root, which the postgres account cannot enter
	rmdir "$WORK"
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/jobqueue-demo.XXXXXX")
	jq_owned_dir "$WORK"
	echo "note: user $JQ_PGUSER cannot write to the project directory; using $WORK"
fi

PORT=$(jq_free_port 5433 5499) || fail "no free port between 5433 and 5499"
log "starting a throwaway PostgreSQL cluster in $WORK (port $PORT)"
jq_cluster_init "$WORK" "$PORT" -U postgres --no-locale || fail "initdb failed"
jq_cluster_conf <<EOF

# ---- jobqueue demo settings (a throwaway cluster: durability is off) ----
max_connections = 40
fsync = off
synchronous_commit = off
full_page_writes = off
shared_preload_libraries = 'jobqueue'
# The background worker, with short intervals for the demo (a build of
# jobqueue without the worker ignores these, with a warning in the log).
jobqueue.worker_enabled = ${JQ_DEMO_WORKER:-on}
jobqueue.launcher_interval = '1s'
jobqueue.reap_interval = '500ms'
EOF
PG_STARTED=1
jq_cluster_start || fail "the server did not start"

# psql as the demo's superuser; runs as the calling account (trust auth on
# the private socket), so the workers need no runuser.
PSQL=("$PG_BINDIR/psql" -X -q -v ON_ERROR_STOP=1 -h "$JQ_PGHOST" -p "$PORT" -U postgres)
sql() { "${PSQL[@]}" -A -t -d "$DB" "$@"; }
show() { "${PSQL[@]}" -P footer=off -d "$DB" "$@" | sed 's/^/    /'; }

"${PSQL[@]}" -d postgres -c "CREATE DATABASE $DB" >/dev/null
sql -c "CREATE EXTENSION jobqueue" >/dev/null
say "$(sql -c "SELECT 'PostgreSQL ' || current_setting('server_version') || ', jobqueue ' || extversion FROM pg_extension WHERE extname = 'jobqueue'")"

# ---------------------------------------------------------------------------
# Is the background worker there?  Otherwise we reap ourselves.
# ---------------------------------------------------------------------------
BGWORKER=0
has_status=$(sql -c "SELECT to_regprocedure('jobqueue.jq_worker_status()') IS NOT NULL")
configured=f
if [ "$has_status" = t ]; then
	configured=$(sql -c "SELECT COALESCE((to_jsonb(s) ->> 'configured')::boolean, true)
		FROM jobqueue.jq_worker_status() s")
fi
if [ "$configured" = t ]; then
	log "waiting for jobqueue's background worker to attach to database $DB"
	for _ in $(seq 1 120); do
		attached=$(sql -c "SELECT COALESCE((to_jsonb(s) ->> 'attached')::boolean,
				(to_jsonb(s) ->> 'pid') IS NOT NULL) FROM jobqueue.jq_worker_status() s")
		if [ "$attached" = t ]; then
			BGWORKER=1
			break
		fi
		sleep 0.25
	done
	show -x -c "SELECT * FROM jobqueue.jq_worker_status()"
	((BGWORKER)) || fail "the background worker did not attach within 30 s"
	say "It reaps expired leases every $(sql -c "SHOW jobqueue.reap_interval"): nobody has to call jq_reap()."
else
	if [ "$has_status" = t ]; then
		log "jobqueue's background worker is not running here ($(sql -c "SELECT state FROM jobqueue.jq_worker_status()"))"
	else
		log "this build of jobqueue has no background worker"
	fi
	say "The demo plays the scheduler itself and calls jobqueue.jq_reap() every 0.5 s,"
	say "as a cron job or pg_cron would in production."
fi

# ---------------------------------------------------------------------------
# The queue and the jobs
# ---------------------------------------------------------------------------
log "creating queue 'emails': lease ${LEASE} s, at most 3 attempts, backoff 0.5 s doubling up to 2 s"
sql -c "SELECT jobqueue.jq_create_queue('emails', max_attempts => 3,
	lease_duration => '${LEASE} seconds', backoff_base => '500 ms',
	backoff_max => '2 seconds')" >/dev/null

# Most jobs succeed at once.  Every 250th is "flaky": its first attempt
# times out (a retryable failure) and the retry succeeds.  One talks to a
# gateway that is down until we fix it, so it exhausts its 3 attempts and
# is dead-lettered; one has an invalid payload (a permanent failure).
UPSTREAM_N=$((NJOBS / 2))
INVALID_N=$((NJOBS / 2 + 222))
log "enqueueing $NJOBS jobs in one statement (jq_enqueue_many)"
sql -c "SELECT count(*) FROM jobqueue.jq_enqueue_many('emails', ARRAY(
	SELECT jsonb_build_object('to', 'user' || i || '@example.com', 'kind',
		CASE WHEN i = $UPSTREAM_N THEN 'upstream'
			 WHEN i = $INVALID_N THEN 'invalid'
			 WHEN i % 250 = 0 THEN 'flaky'
			 ELSE 'ok' END)
	FROM generate_series(1, $NJOBS) i ORDER BY i))" >/dev/null
show -c "SELECT payload ->> 'kind' AS kind, count(*) AS jobs
	FROM jobqueue.jobs GROUP BY 1 ORDER BY 2 DESC"

# ---------------------------------------------------------------------------
# Workers: claim a batch, work outside any transaction, complete or fail
# ---------------------------------------------------------------------------
# One psql session per worker, kept open as a coprocess: a worker sends a
# statement and reads the result lines up to a marker.  psql stops at the
# first error (ON_ERROR_STOP), which ends the worker with an error.
worker() {
	local name=$1 out line id tok att kind ids toks fails claimed=0 fenced=0
	set +e
	coproc SESSION { "${PSQL[@]}" -A -t -F ' ' -d "$DB" 2>>"$WORK/errors"; }
	query() {
		printf '%s\n\\echo __end__\n' "$1" >&"${SESSION[1]}" || return 1
		out=()
		while IFS= read -r -t 60 line <&"${SESSION[0]}"; do
			[ "$line" = __end__ ] && return 0
			out+=("$line")
		done
		return 1
	}
	while [ ! -e "$WORK/stop" ]; do
		if ! query "SELECT id, token, attempt, payload ->> 'kind'
				FROM jobqueue.jq_claim('emails', $BATCH, '$name');"; then
			echo "$name: jq_claim failed" >>"$WORK/errors"
			return 1
		fi
		if ((${#out[@]} == 0)); then
			sleep 0.1
			continue
		fi
		ids=() toks=() fails=
		for line in "${out[@]}"; do
			read -r id tok att kind <<<"$line"
			claimed=$((claimed + 1))
			case $kind in
			flaky)
				if ((att < 2)); then
					fails+="SELECT jobqueue.jq_fail($id, $tok, 'SMTP_TIMEOUT', 'mail server did not answer within 30 s');"
					continue
				fi ;;
			upstream)
				if [ ! -e "$WORK/fixed" ]; then
					fails+="SELECT jobqueue.jq_fail($id, $tok, 'HTTP_503', 'gateway returned 503 Service Unavailable');"
					continue
				fi ;;
			invalid)
				fails+="SELECT jobqueue.jq_fail($id, $tok, 'BAD_PAYLOAD', 'address \"user$INVALID_N@example.com\" is on the block list', retryable => false);"
				continue ;;
			esac
			ids+=("$id")
			toks+=("$tok")
		done
		sleep 0.05		# the work: sending the e-mails, outside any transaction
		if ! query "SELECT count(*) FROM jobqueue.jq_complete_many(
				'{$(IFS=,; echo "${ids[*]}")}', '{$(IFS=,; echo "${toks[*]}")}'); $fails"; then
			echo "$name: jq_complete_many or jq_fail failed" >>"$WORK/errors"
			return 1
		fi
		# out[0] is the number completed; jq_fail's results follow
		fenced=$((fenced + ${#ids[@]} - out[0]))
	done
	printf '\\q\n' >&"${SESSION[1]}"
	echo "$name claimed $claimed jobs, $fenced completions refused" >>"$WORK/workers.log"
}

count() { sql -c "SELECT count(*) FROM jobqueue.jobs WHERE $1"; }
check_workers() {
	if [ -s "$WORK/errors" ]; then
		fail "a worker hit an error: $(head -c 2000 "$WORK/errors")"
	fi
}
crash_where="id IN (SELECT unnest(ids) FROM crashed)"

log "worker-5 claims $CRASH_BATCH jobs ... and crashes (kill -9) before finishing any"
(
	sql -c "CREATE TABLE crashed AS SELECT array_agg(id ORDER BY id) AS ids
		FROM jobqueue.jq_claim('emails', $CRASH_BATCH, 'worker-5')" >/dev/null
	exec sleep 600		# "working" on them
) &
crash_pid=$!
WORKER_PIDS+=("$crash_pid")
for _ in $(seq 1 100); do
	[ "$(sql -c "SELECT to_regclass('crashed') IS NOT NULL")" = t ] && break
	sleep 0.1
done
[ "$(sql -c "SELECT to_regclass('crashed') IS NOT NULL")" = t ] || fail "worker-5 could not claim"
kill -KILL "$crash_pid"
wait "$crash_pid" 2>/dev/null || true
T_CRASH=$(date +%s.%N)
show -c "SELECT min(id) AS first_id, max(id) AS last_id, count(*) AS jobs, min(status::text) AS status,
	min(lease_owner) AS lease_owner, to_char(min(lease_expires_at), 'HH24:MI:SS.MS') AS lease_expires_at
	FROM jobqueue.jobs WHERE $crash_where"
say "Nobody will ever complete these: their leases have to run out."

log "starting $NWORKERS workers (batches of $BATCH: jq_claim -> work -> jq_complete_many / jq_fail)"
for w in $(seq 1 "$NWORKERS"); do
	worker "worker-$w" &
	WORKER_PIDS+=("$!")
done

# ---------------------------------------------------------------------------
# Recovery of the crashed worker's jobs
# ---------------------------------------------------------------------------
if ((BGWORKER)); then
	log "watching worker-5's jobs; the demo does nothing but look"
else
	log "watching worker-5's jobs; the demo calls jq_reap() every 0.5 s"
fi
# Where worker-5's jobs are: still held by the dead worker, pending again
# (reaped), claimed again by another worker, or succeeded.
recovery_sql="SELECT count(*) FILTER (WHERE status = 'running' AND lease_owner = 'worker-5'),
	count(*) FILTER (WHERE status = 'pending'),
	count(*) FILTER (WHERE status = 'running' AND lease_owner <> 'worker-5'),
	count(*) FILTER (WHERE status = 'succeeded'),
	count(*) FILTER (WHERE status NOT IN ('running', 'pending', 'succeeded')),
	count(*) FILTER (WHERE errors @> '[{\"code\": \"LEASE_EXPIRED\", \"owner\": \"worker-5\"}]'),
	(SELECT count(*) FROM jobqueue.jobs WHERE status = 'succeeded')
	FROM jobqueue.jobs WHERE $crash_where"
last=
last_print=0
reap_deadline=$((LEASE + 10))	# the lease, then a few reap intervals, with slack
deadline=90
while :; do
	reaped=
	if ((!BGWORKER)); then
		n=$(sql -c "SELECT jobqueue.jq_reap()")
		((n > 0)) && reaped="   <- jq_reap() returned $n"
	fi
	read -r c_held c_pend c_again c_done c_other c_reaped all_done <<<"$(sql -F ' ' -c "$recovery_sql")"
	line="$c_held $c_pend $c_again $c_done"
	now=$(elapsed "$T_CRASH")
	if [ "$line" != "$last" ] || [ -n "$reaped" ] ||
		awk -v a="$now" -v b="$last_print" 'BEGIN { exit !(a - b >= 5) }'; then
		printf '    t+%4ss  held by worker-5: %2d  pending again: %2d  claimed again: %2d  succeeded: %2d   (all: %4d/%d done)%s\n' \
			"$now" "$c_held" "$c_pend" "$c_again" "$c_done" "$all_done" "$NJOBS" "$reaped"
		last=$line
		last_print=$now
	fi
	check_workers
	((c_other == 0)) || fail "a crashed worker's job ended neither pending, running nor succeeded"
	((c_done == CRASH_BATCH)) && break
	((c_held == 0)) || awk -v e="$now" -v d="$reap_deadline" 'BEGIN { exit !(e <= d) }' ||
		fail "worker-5's expired leases were not reaped within $reap_deadline s"
	awk -v e="$now" -v d="$deadline" 'BEGIN { exit !(e <= d) }' ||
		fail "worker-5's jobs were not all completed within $deadline s"
	sleep 0.25
done
((c_reaped == CRASH_BATCH)) || fail "only $c_reaped of worker-5's jobs show LEASE_EXPIRED in their history"
if ((BGWORKER)); then
	say "All $CRASH_BATCH came back by themselves once their leases ran out (the background"
	say "worker reaped them), queued behind the backlog, and were done by the other workers:"
else
	say "All $CRASH_BATCH came back once their leases ran out and jq_reap() ran; they queued"
	say "behind the backlog (claim order: priority, then available_at) and the others did them:"
fi
show -c "SELECT id, status, attempt_count AS attempts, lease_owner AS completed_by,
	errors -> 0 ->> 'code' AS first_error, errors -> 0 ->> 'owner' AS failed_owner
	FROM jobqueue.jobs WHERE $crash_where ORDER BY id LIMIT 5"
say "(first 5 of $CRASH_BATCH shown)"
if ((BGWORKER)); then
	say "The background worker's account of it:"
	show -x -c "SELECT * FROM jobqueue.jq_worker_status()"
fi
bad=$(count "$crash_where AND NOT (status = 'succeeded' AND attempt_count = 2
	AND errors -> 0 ->> 'code' = 'LEASE_EXPIRED' AND errors -> 0 ->> 'owner' = 'worker-5')")
((bad == 0)) || fail "$bad of worker-5's jobs do not show the expected recovery"

# ---------------------------------------------------------------------------
# Everything else runs to the end; then the dead letters
# ---------------------------------------------------------------------------
log "waiting until no job is pending or running"
for _ in $(seq 1 240); do
	((BGWORKER)) || sql -c "SELECT jobqueue.jq_reap()" >/dev/null
	check_workers
	[ "$(count "status IN ('pending', 'running')")" = 0 ] && break
	sleep 0.25
done
[ "$(count "status IN ('pending', 'running')")" = 0 ] || fail "jobs still pending or running after 60 s"
show -c "SELECT status, count(*) AS jobs FROM jobqueue.jobs GROUP BY 1 ORDER BY 1"

log "dead-lettered jobs: kept, with their error history"
show -c "SELECT j.id, j.payload ->> 'kind' AS kind, e.entry ->> 'attempt' AS attempt,
	e.entry ->> 'code' AS code, e.entry ->> 'message' AS message, e.entry ->> 'owner' AS owner
	FROM jobqueue.jobs j, jsonb_array_elements(j.errors) WITH ORDINALITY AS e(entry, n)
	WHERE j.status = 'dead' ORDER BY j.id, e.n"
[ "$(count "status = 'dead'")" = 2 ] || fail "expected exactly 2 dead jobs"
upstream_id=$(sql -c "SELECT id FROM jobqueue.jobs WHERE payload ->> 'kind' = 'upstream'")
[ "$(sql -c "SELECT status FROM jobqueue.jobs WHERE id = $upstream_id")" = dead ] ||
	fail "job $upstream_id should have been dead-lettered after 3 attempts"

log "the gateway is fixed; replaying job $upstream_id with jq_retry (same id)"
touch "$WORK/fixed"
say "jq_retry($upstream_id) -> $(sql -c "SELECT jobqueue.jq_retry($upstream_id)")"
for _ in $(seq 1 80); do
	[ "$(sql -c "SELECT status FROM jobqueue.jobs WHERE id = $upstream_id")" = succeeded ] && break
	check_workers
	sleep 0.25
done
show -c "SELECT id, status, attempt_count AS attempts, lease_owner AS completed_by,
	jsonb_array_length(errors) AS history_entries, errors -> -1 AS last_history_entry
	FROM jobqueue.jobs WHERE id = $upstream_id"
[ "$(sql -c "SELECT status FROM jobqueue.jobs WHERE id = $upstream_id")" = succeeded ] ||
	fail "the replayed job $upstream_id did not complete"

touch "$WORK/stop"
for pid in "${WORKER_PIDS[@]:1}"; do
	wait "$pid" || fail "a worker stopped with an error: $(cat "$WORK/errors" 2>/dev/null)"
done
WORKER_PIDS=()

# ---------------------------------------------------------------------------
# The end
# ---------------------------------------------------------------------------
log "final counts"
show -c "SELECT status, count(*) AS jobs FROM jobqueue.jobs GROUP BY 1 ORDER BY 1"
if [ "$(sql -c "SELECT to_regclass('jobqueue.queue_stats') IS NOT NULL")" = t ]; then
	say "jobqueue.queue_stats:"
	show -x -c "SELECT * FROM jobqueue.queue_stats"
fi
if [ "$(sql -c "SELECT to_regprocedure('jobqueue.jq_counters(boolean)') IS NOT NULL")" = t ]; then
	say "what happened, from the event counters (jobqueue.jq_counters()):"
	show -x -c "SELECT queue_name, enqueued, claimed, completed, complete_fenced,
		failed_retryable, failed_permanent, retries_scheduled, leases_expired,
		dead_lettered, replayed FROM jobqueue.jq_counters()" 2>/dev/null ||
		say "(not available: $(sql -c "SELECT jobqueue.jq_counters()" 2>&1 | head -n 1))"
fi
say "who completed what:"
show -c "SELECT lease_owner AS worker, count(*) AS succeeded FROM jobqueue.jobs
	WHERE status = 'succeeded' GROUP BY 1 ORDER BY 1"
sort "$WORK/workers.log" | sed 's/^/    /'

total=$(count "true")
succeeded=$(count "status = 'succeeded'")
dead=$(count "status = 'dead'")
[ "$total" = "$NJOBS" ] || fail "$NJOBS jobs were enqueued but $total exist"
[ "$succeeded" = $((NJOBS - 1)) ] || fail "expected $((NJOBS - 1)) succeeded jobs, found $succeeded"
[ "$dead" = 1 ] || fail "expected 1 dead job (the invalid payload), found $dead"
[ ! -s "$WORK/errors" ] || fail "errors: $(cat "$WORK/errors")"

echo
echo "Demo passed: $NJOBS jobs, none lost; $succeeded succeeded, 1 dead (a permanent error),"
echo "$CRASH_BATCH recovered from a crashed worker, 1 replayed from the dead letters."
echo "Time: $(elapsed "$T_START") s in all, $(elapsed "$T_CRASH") s from the crash to the end."

# ---------------------------------------------------------------------------
# The dashboard against the demo's database (JQ_DEMO_DASHBOARD=HOST:PORT)
# ---------------------------------------------------------------------------
if [ -n "${JQ_DEMO_DASHBOARD:-}" ]; then
	log "the dashboard on http://$JQ_DEMO_DASHBOARD/ (Ctrl-C stops it and the cluster)"
	if [ ! -d "$JQ_ROOT/dashboard/node_modules/pg" ]; then
		(cd "$JQ_ROOT/dashboard" && npm ci --omit=dev --no-audit --no-fund --loglevel=error) ||
			fail "npm ci in dashboard/ failed"
	fi
	# Two roles that log in with a password over the socket; the cluster's
	# owner keeps its trusted local login.
	sql -c "CREATE ROLE demo_admin LOGIN PASSWORD 'demo'; CREATE ROLE demo_monitor LOGIN PASSWORD 'demo';
		SELECT jobqueue.jq_grant_admin('demo_admin'), jobqueue.jq_grant_monitor('demo_monitor');" >/dev/null
	printf 'local all postgres trust\nlocal all all scram-sha-256\n' >"$JQ_PGDATA/pg_hba.conf"
	sql -c "SELECT pg_reload_conf()" >/dev/null
	say "Log in as demo_admin (may replay, cancel, pause) or demo_monitor (may only look), password demo."
	"$JQ_ROOT/dashboard/jobqueue-dashboard" --listen "$JQ_DEMO_DASHBOARD" \
		--dsn "postgresql:///$DB?host=$JQ_PGHOST&port=$PORT" || true
fi
