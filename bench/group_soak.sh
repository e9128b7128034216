#!/usr/bin/env bash
# jobqueue soak test of group bookkeeping: limits, strict order, deadlocks
# and stranded jobs under policy churn, kill -9 crashes and fresh sessions.
#
#   sudo PG_CONFIG=... bench/group_soak.sh        (SOAK_SECONDS=600 by default)
#
# A throwaway cluster (jobqueue installed in PG_CONFIG's installation,
# preloaded, background worker on) with four queues of 30 groups each:
#   limit    group_concurrency 2
#   ordered  group_ordered (strict order, one at a time)
#   rr       round_robin, group_concurrency 1
#   flip     plain, and every few seconds given a group policy and back
# Rounds of SOAK_ROUND seconds.  In each: SOAK_WORKERS pgbench clients
# with -C (a fresh connection for every transaction) run a worker step:
# claim up to 4 jobs of a random queue with jq_complete_and_claim,
# completing the previous ones in random order (the order of ids that used
# to deadlock), failing or releasing some; a producer refills every group;
# the policies of all queues churn (fairness, aging, flip's policy); a
# sampler checks, in one snapshot at a time, that no group of limit or rr
# runs more than its limit and that every running job of an ordered group
# is its head.  Halfway through each round a random backend is killed with
# SIGKILL (the postmaster restarts every backend).  At the end the load
# stops, the leases expire and are reaped, and every job queue_stats counts
# as ready must be claimed by claims of its queue; the rest is "stranded".
# Reported: rounds, crashes, claims, deadlocks (40P01 in the server log),
# limit and order violations, stranded jobs, counter drift left after the
# worker's pass.
set -uo pipefail
PG_CONFIG=${PG_CONFIG:-pg_config}
BIN=$("$PG_CONFIG" --bindir)
SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_ROUND=${SOAK_ROUND:-30}
SOAK_WORKERS=${SOAK_WORKERS:-6}
SOAK_PORT=${SOAK_PORT:-55499}
PGUSER_OS=${SOAK_OS_USER:-postgres}
DIR=$(mktemp -d /tmp/jobqueue-soak.XXXXXX)
chown "$PGUSER_OS" "$DIR"
as() { runuser -u "$PGUSER_OS" -- "$@"; }
psql_() { as "$BIN/psql" -X -q -At -h "$DIR" -p "$SOAK_PORT" -d postgres -v ON_ERROR_STOP=1 "$@"; }

as "$BIN/initdb" -D "$DIR/data" -A trust >/dev/null
cat >>"$DIR/data/postgresql.conf" <<CONF
port = $SOAK_PORT
unix_socket_directories = '$DIR'
listen_addresses = ''
shared_preload_libraries = 'jobqueue'
max_connections = 60
jobqueue.reap_interval = '1s'
log_min_messages = warning
CONF
as "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w start >/dev/null
trap 'as "$BIN/pg_ctl" -D "$DIR/data" -m immediate stop >/dev/null 2>&1; rm -rf "$DIR"' EXIT

psql_ <<'SQL' >/dev/null
CREATE EXTENSION jobqueue;
SELECT jobqueue.jq_create_queue('limit', group_concurrency => 2, lease_duration => '2 seconds', max_attempts => 1000);
SELECT jobqueue.jq_create_queue('ordered', group_ordered => true, lease_duration => '2 seconds', max_attempts => 1000);
SELECT jobqueue.jq_create_queue('rr', fairness => 'round_robin', group_concurrency => 1, lease_duration => '2 seconds', max_attempts => 1000);
SELECT jobqueue.jq_create_queue('flip', lease_duration => '2 seconds', max_attempts => 1000);
CREATE TABLE soak_violations (at timestamptz DEFAULT clock_timestamp(), kind text, queue text, grp text, n bigint);
CREATE SEQUENCE soak_claims;
-- a worker step: complete what this "worker" claimed before (in random
-- order), claim again; some jobs fail or are released
CREATE FUNCTION soak_step() RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	q text := (ARRAY['limit', 'ordered', 'rr', 'flip'])[1 + floor(random() * 4)::int];
	ids bigint[];
	tokens bigint[];
	r record;
	n int := 0;
BEGIN
	-- the jobs of this worker: running jobs nobody else is finishing (the
	-- row locks stand for a worker's own jobs), in random order
	SELECT array_agg(x.id), array_agg(x.tok) INTO ids, tokens FROM (
		SELECT j.id, j.lease_token AS tok FROM jobqueue.jobs j
		WHERE j.status = 'running' AND j.queue_name = q AND j.lease_owner = 'soak'
		  AND j.lease_expires_at > now()
		ORDER BY random() LIMIT 4 FOR UPDATE SKIP LOCKED) x;
	FOR r IN SELECT * FROM jobqueue.jq_complete_and_claim(q, coalesce(ids, '{}'), coalesce(tokens, '{}'), 4, 'soak') LOOP
		n := n + 1;
		IF random() < 0.05 THEN
			PERFORM jobqueue.jq_fail(r.id, r.token, 'SOAK', 'failed on purpose', retryable => true, retry_in => '0.2 seconds');
		ELSIF random() < 0.05 THEN
			PERFORM jobqueue.jq_release(r.id, r.token, '0 seconds');
		END IF;
	END LOOP;
	PERFORM nextval('soak_claims') FROM generate_series(1, n);
	RETURN n;
END
$$;
-- keep every group of every queue at 3 to 6 unfinished jobs
CREATE FUNCTION soak_refill() RETURNS void LANGUAGE sql AS $$
	SELECT count(*) FROM (VALUES ('limit'), ('ordered'), ('rr'), ('flip')) q(q),
		LATERAL jobqueue.jq_enqueue_many(q.q,
			ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 30 * 3) i),
			group_keys => ARRAY(SELECT 'g' || (i % 30) FROM generate_series(1, 30 * 3) i))
	WHERE (SELECT count(*) FROM jobqueue.jobs j WHERE j.queue_name = q.q
			 AND j.status IN ('pending', 'running')) < 30 * 3;
$$;
-- one snapshot: limits and order
CREATE FUNCTION soak_check() RETURNS void LANGUAGE sql AS $$
	INSERT INTO soak_violations (kind, queue, grp, n)
	SELECT 'limit', j.queue_name, j.group_key, count(*) FROM jobqueue.jobs j
	WHERE j.status = 'running' AND j.queue_name IN ('limit', 'rr') AND j.group_key <> ''
	GROUP BY 1, 2, 3
	HAVING count(*) > CASE j.queue_name WHEN 'limit' THEN 2 ELSE 1 END
	UNION ALL
	SELECT 'order', j.queue_name, j.group_key, j.id FROM jobqueue.jobs j
	WHERE j.status = 'running' AND j.queue_name = 'ordered' AND j.group_key <> ''
	  AND j.id <> (SELECT min(h.id) FROM jobqueue.jobs h WHERE h.queue_name = 'ordered'
				   AND h.group_key = j.group_key AND h.status IN ('pending', 'running', 'dead'));
$$;
SELECT soak_refill();
SQL
echo 'SELECT soak_step();' >"$DIR/step.sql"
chown "$PGUSER_OS" "$DIR/step.sql"

start=$(date +%s)
rounds=0
crashes=0
while [ $(( $(date +%s) - start )) -lt "$SOAK_SECONDS" ]; do
	rounds=$((rounds + 1))
	as "$BIN/pgbench" -n -C -c "$SOAK_WORKERS" -T "$SOAK_ROUND" -f "$DIR/step.sql" \
		-h "$DIR" -p "$SOAK_PORT" postgres >"$DIR/pgbench.$rounds" 2>&1 &
	pgb=$!
	t0=$(date +%s)
	churn=0
	while [ $(( $(date +%s) - t0 )) -lt "$SOAK_ROUND" ]; do
		psql_ -c "SELECT soak_refill()" >/dev/null 2>&1
		psql_ -c "SELECT soak_check()" >/dev/null 2>&1
		churn=$((churn + 1))
		case $((churn % 6)) in
			0) psql_ -c "SELECT jobqueue.jq_alter_queue('flip', group_concurrency => 2)" ;;
			1) psql_ -c "SELECT jobqueue.jq_alter_queue('limit', fairness => 'round_robin', priority_aging => '1 second')" ;;
			2) psql_ -c "SELECT jobqueue.jq_alter_queue('ordered', fairness => 'round_robin')" ;;
			3) psql_ -c "SELECT jobqueue.jq_alter_queue('flip', group_concurrency => 0)" ;;
			4) psql_ -c "SELECT jobqueue.jq_alter_queue('limit', fairness => 'priority', priority_aging => '0')" ;;
			5) psql_ -c "SELECT jobqueue.jq_alter_queue('ordered', fairness => 'priority')" ;;
		esac >/dev/null 2>&1
		if [ $(( $(date +%s) - t0 )) -ge $((SOAK_ROUND / 2)) ] && [ "${killed:-0}" != "$rounds" ]; then
			victim=$(psql_ -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() ORDER BY random() LIMIT 1" 2>/dev/null)
			if [ -n "$victim" ]; then
				kill -9 "$victim" 2>/dev/null && crashes=$((crashes + 1))
				killed=$rounds
				# wait for the restart after the crash
				for _ in $(seq 1 60); do psql_ -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.5; done
			fi
		fi
		sleep 0.5
	done
	wait "$pgb" 2>/dev/null
done

# drain: no more load; leases expire (2 s) and the worker reaps them
sleep 4
for _ in $(seq 1 30); do
	left=$(psql_ -c "SELECT count(*) FROM jobqueue.jobs WHERE status = 'running'")
	[ "$left" = 0 ] && break
	psql_ -c "SELECT jobqueue.jq_reap()" >/dev/null
	sleep 1
done
psql_ -c "SELECT jobqueue.jq_alter_queue('flip', group_concurrency => 2)" >/dev/null
drift=$(psql_ -c "SELECT jobqueue.jq_recount_groups()")
# retry and reap backoffs: every pending job due now, so that nothing
# becomes ready after the claims below have stopped
psql_ -c "UPDATE jobqueue.jobs SET available_at = now() WHERE status = 'pending'" >/dev/null
# every ready job must be claimable: claim (and complete) until nothing comes
stranded=$(psql_ <<'SQL'
DO $$
DECLARE
	q text;
	n int;
BEGIN
	FOREACH q IN ARRAY ARRAY['limit', 'ordered', 'rr', 'flip'] LOOP
		LOOP
			SELECT count(*) INTO n FROM jobqueue.jq_claim(q, 100, 'drain') c
			WHERE jobqueue.jq_complete(c.id, c.token);
			EXIT WHEN n = 0;
		END LOOP;
	END LOOP;
END
$$;
SELECT coalesce(sum(ready), 0) FROM jobqueue.queue_stats;
SQL
)
if [ "$stranded" != 0 ]; then
	echo "stranded jobs:"
	psql_ -c "SELECT j.queue_name, j.group_key, j.status, count(*), bool_or(gr.group_key IS NOT NULL) AS has_row,
	                 min(gr.running) AS counted
	          FROM jobqueue.jobs j LEFT JOIN jobqueue.groups gr USING (queue_name, group_key)
	          WHERE j.status IN ('pending', 'running', 'dead') GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
fi
deadlocks=$(grep -c 'deadlock detected' "$DIR/log")
limit_v=$(psql_ -c "SELECT count(*) FROM soak_violations WHERE kind = 'limit'")
order_v=$(psql_ -c "SELECT count(*) FROM soak_violations WHERE kind = 'order'")
claims=$(psql_ -c "SELECT last_value FROM soak_claims")
echo "seconds=$SOAK_SECONDS rounds=$rounds crashes=$crashes workers=$SOAK_WORKERS claims=$claims deadlocks=$deadlocks limit_violations=$limit_v order_violations=$order_v stranded=$stranded drift_corrected_at_end=$drift"
