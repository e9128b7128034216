#!/usr/bin/env bash
# jobqueue benchmark, part "group workers": per-group overrides and fair
# share with real workers (pgbench clients that claim one job, sleep for
# the job's time outside any transaction, and complete it).
#
#   bench/group_workers.sh            (psql's and pgbench's usual PG*
#                                      environment: a database with
#                                      jobqueue installed, preloaded)
#
# 1. Overrides: group_concurrency 4, tenant a may run 10, b 2; groups a, b,
#    c, d with 50-ms jobs; GW_OVER_WORKERS (8) workers for GW_OVER_SECS
#    (20) s.  Every claim checks, in its own transaction right after it,
#    how many jobs of its group run (the claim's group row is still locked,
#    so nothing else can change that count): a count above the group's
#    limit is a violation.  Reports the violations (must be 0) and the
#    most jobs seen running per group.
# 2. The same after kill -9 of a worker's backend (the server restarts
#    every backend): the workers start again, expired leases are reaped;
#    violations must still be 0, and jobqueue.groups must agree with the
#    jobs.
# 2b. Per-group rate limits: a 15/s (burst 10), the others 5/s (burst 5),
#    under the queue's 20/s (burst 20); 10-ms jobs: each group starts at
#    most its burst + rate x T jobs in a run of T seconds, the queue at
#    most 20 + 20 x T.
# 3. Fair share: two tenants of weight 1, "slow" with 200-ms jobs and
#    "fast" with 20-ms jobs, both with more work than GW_FS_WORKERS (4)
#    workers can do in GW_FS_SECS (60) s.  Reports each tenant's share of
#    worker time (claim to completion) and of jobs: the time should be
#    50/50 (+-10 points), not the job count.
# 4. The same with weights slow 3, fast 1: 75/25.
#
# Prints the load average before and after.  Drops its queues at the end.
set -euo pipefail
GW_OVER_WORKERS=${GW_OVER_WORKERS:-8}
GW_OVER_SECS=${GW_OVER_SECS:-20}
GW_FS_WORKERS=${GW_FS_WORKERS:-4}
GW_FS_SECS=${GW_FS_SECS:-60}
PSQL=(psql -X -q -v ON_ERROR_STOP=1 -At)
work=$(mktemp -d "${TMPDIR:-/tmp}/jobqueue-gw.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"${PSQL[@]}" <<'SQL' >/dev/null
SET client_min_messages = warning;
SELECT jobqueue.jq_drop_queue(queue_name, force => true) FROM jobqueue.queues
WHERE queue_name IN ('gw_over', 'gw_rate', 'gw_fair', 'gw_weighted');
DROP SCHEMA IF EXISTS gw CASCADE;
CREATE SCHEMA gw;
CREATE TABLE gw.violations (queue text, group_key text, running bigint, lim int, at timestamptz DEFAULT now());
CREATE TABLE gw.seen (queue text, group_key text, running bigint);
-- a worker's claim of one job: (0, 0, 5) when there is none (poll again
-- after 5 ms); the job's run time comes from its payload
CREATE FUNCTION gw.claim(q text, OUT id bigint, OUT token bigint, OUT ms int) LANGUAGE plpgsql AS $$
BEGIN
	SELECT c.id, c.token, (c.payload->>'ms')::int INTO id, token, ms
	FROM jobqueue.jq_claim(q, 1, 'gw') c;
	IF id IS NULL THEN
		id := 0; token := 0; ms := 5;
	END IF;
END
$$;
-- right after the claim's commit is too late: the check runs in the
-- claim's transaction, after it, while the claim still holds its group
CREATE FUNCTION gw.claim_checked(q text, OUT id bigint, OUT token bigint, OUT ms int) LANGUAGE plpgsql AS $$
DECLARE
	g text;
	n bigint;
	lim int;
BEGIN
	SELECT c.id, c.token, c.ms INTO id, token, ms FROM gw.claim(q) c;
	IF id = 0 THEN
		RETURN;
	END IF;
	SELECT j.group_key INTO g FROM jobqueue.jobs j WHERE j.id = claim_checked.id;
	SELECT count(*) INTO n FROM jobqueue.jobs j
	WHERE j.queue_name = q AND j.group_key = g AND j.status = 'running';
	SELECT COALESCE((SELECT gl.concurrency FROM jobqueue.group_limits gl
					 WHERE gl.queue_name = q AND gl.group_key = g), qq.group_concurrency)
	INTO lim FROM jobqueue.queues qq WHERE qq.queue_name = q;
	INSERT INTO gw.seen VALUES (q, g, n);
	IF n > lim THEN
		INSERT INTO gw.violations (queue, group_key, running, lim) VALUES (q, g, n, lim);
	END IF;
END
$$;
CREATE FUNCTION gw.done(id bigint, token bigint) RETURNS void LANGUAGE sql AS $$
	SELECT CASE WHEN id > 0 THEN jobqueue.jq_complete(id, token) END
$$;
SQL
workers() {	# workers N SECONDS QUEUE CLAIM-FUNCTION
	printf 'SELECT id, token, ms FROM gw.%s(%s) \\gset\n\\sleep :ms ms\nSELECT gw.done(:id, :token);\n' \
		"$4" "'$3'" >"$work/worker.sql"
	pgbench -n -c "$1" -j "$1" -T "$2" -f "$work/worker.sql" >"$work/pgbench.log" 2>&1 || true
}
enqueue() {	# enqueue QUEUE GROUP MS N
	"${PSQL[@]}" -c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$1',
		ARRAY(SELECT jsonb_build_object('ms', $3) FROM generate_series(1, $4)),
		group_keys => ARRAY(SELECT '$2' FROM generate_series(1, $4)))" >/dev/null
}

# 1. overrides
"${PSQL[@]}" -c "SELECT jobqueue.jq_create_queue('gw_over', group_concurrency => 4, lease_duration => '2 seconds')" >/dev/null
"${PSQL[@]}" -c "SELECT jobqueue.jq_set_group_limit('gw_over', 'a', 10), jobqueue.jq_set_group_limit('gw_over', 'b', 2)" >/dev/null
for g in a b c d; do enqueue gw_over "$g" 50 5000; done
workers "$GW_OVER_WORKERS" "$GW_OVER_SECS" gw_over claim_checked
echo "== overrides (a 10, b 2, default 4), $GW_OVER_WORKERS workers, $GW_OVER_SECS s"
"${PSQL[@]}" -F ' ' -c "SELECT 'violations', count(*) FROM gw.violations" \
	-c "SELECT 'most running of group ' || group_key, max(running), count(*) AS claims FROM gw.seen GROUP BY group_key ORDER BY group_key"

# 2. kill -9 of a worker's backend, then the workers again
truncate_seen() { "${PSQL[@]}" -c "TRUNCATE gw.seen, gw.violations" >/dev/null; }
truncate_seen
workers "$GW_OVER_WORKERS" $((GW_OVER_SECS / 2)) gw_over claim_checked &
wpid=$!
sleep $((GW_OVER_SECS / 4))
victim=$("${PSQL[@]}" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' LIMIT 1")
echo "== kill -9 of backend $victim"
kill -9 "$victim" || true
wait "$wpid" || true
until "${PSQL[@]}" -c "SELECT 1" >/dev/null 2>&1; do sleep 0.5; done
workers "$GW_OVER_WORKERS" "$GW_OVER_SECS" gw_over claim_checked
"${PSQL[@]}" -F ' ' -c "SELECT 'violations after the crash', count(*) FROM gw.violations" \
	-c "SELECT 'most running of group ' || group_key, max(running), count(*) AS claims FROM gw.seen GROUP BY group_key ORDER BY group_key" \
	-c "SELECT 'groups rows that disagree with the jobs', count(*) FROM jobqueue.groups gr
		WHERE gr.queue_name = 'gw_over' AND gr.running <> (SELECT count(*) FROM jobqueue.jobs j
			WHERE j.queue_name = gr.queue_name AND j.group_key = gr.group_key AND j.status = 'running')"

# 2b. per-group rate limits under the queue's global cap: a 15/s (burst
# 10), every other group 5/s (burst 5), the queue 20/s (burst 20); 10-ms
# jobs, so the rates bind.  Jobs started in the run of T seconds: each
# group at most its burst + rate x T, the queue at most 20 + 20 x T.
"${PSQL[@]}" -c "SELECT jobqueue.jq_create_queue('gw_rate', group_concurrency => 8, rate_limit => 20, rate_burst => 20,
	group_rate_limit => 5, group_rate_burst => 5)" \
	-c "SELECT jobqueue.jq_set_group_limit('gw_rate', 'a', rate_limit => 15, rate_burst => 10)" >/dev/null
for g in a b c d; do enqueue gw_rate "$g" 10 2000; done
t0=$("${PSQL[@]}" -c "SELECT extract(epoch FROM clock_timestamp())")
workers "$GW_OVER_WORKERS" "$GW_OVER_SECS" gw_rate claim
t1=$("${PSQL[@]}" -c "SELECT extract(epoch FROM clock_timestamp())")
echo "== per-group rate limits (a 15/s burst 10, others 5/s burst 5, queue 20/s burst 20), $GW_OVER_WORKERS workers"
"${PSQL[@]}" -F ' ' <<SQL
SELECT 'group ' || j.group_key || ': started', count(*),
	'bound', round(CASE j.group_key WHEN 'a' THEN 10 + 15 * ($t1 - $t0) ELSE 5 + 5 * ($t1 - $t0) END)
FROM jobqueue.jobs j WHERE j.queue_name = 'gw_rate' AND j.started_at IS NOT NULL
GROUP BY j.group_key ORDER BY j.group_key;
SELECT 'queue: started', count(*), 'bound', round(20 + 20 * ($t1 - $t0))
FROM jobqueue.jobs j WHERE j.queue_name = 'gw_rate' AND j.started_at IS NOT NULL;
SQL

# 3. and 4. fair share
share_report() {	# share_report QUEUE
	"${PSQL[@]}" -F ' ' <<SQL
SELECT 'tenant ' || j.group_key,
	round(100 * sum(extract(epoch FROM j.finished_at - j.started_at)) /
		sum(sum(extract(epoch FROM j.finished_at - j.started_at))) OVER (), 1) AS time_pct,
	round(100.0 * count(*) / sum(count(*)) OVER (), 1) AS jobs_pct,
	count(*) AS jobs
FROM jobqueue.jobs j WHERE j.queue_name = '$1' AND j.status = 'succeeded'
GROUP BY j.group_key ORDER BY j.group_key;
SELECT 'jq_group_stats ' || group_key, round(usage::numeric, 1) AS usage_s, round(100 * share::numeric, 1) AS share_pct
FROM jobqueue.jq_group_stats('$1') ORDER BY group_key;
SQL
}
fair_run() {	# fair_run QUEUE
	local slow=$((GW_FS_SECS * GW_FS_WORKERS * 5)) fast=$((GW_FS_SECS * GW_FS_WORKERS * 50))
	enqueue "$1" slow 200 "$slow"
	enqueue "$1" fast 20 "$fast"
	workers "$GW_FS_WORKERS" "$GW_FS_SECS" "$1" claim
	share_report "$1"
}
"${PSQL[@]}" -c "SELECT jobqueue.jq_create_queue('gw_fair', fairness => 'fair_share')" >/dev/null
echo "== fair share, weights 1:1, $GW_FS_WORKERS workers, $GW_FS_SECS s (slow: 200-ms jobs, fast: 20-ms jobs)"
fair_run gw_fair
"${PSQL[@]}" -c "SELECT jobqueue.jq_create_queue('gw_weighted', fairness => 'fair_share')" \
	-c "SELECT jobqueue.jq_set_group_limit('gw_weighted', 'slow', weight => 3)" >/dev/null
echo "== fair share, weights slow 3 : fast 1"
fair_run gw_weighted

"${PSQL[@]}" <<'SQL' >/dev/null
SET client_min_messages = warning;
SELECT jobqueue.jq_drop_queue(queue_name, force => true) FROM jobqueue.queues
WHERE queue_name IN ('gw_over', 'gw_rate', 'gw_fair', 'gw_weighted');
DROP SCHEMA gw CASCADE;
SQL
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
