#!/usr/bin/env bash
# The Citus suite: jobqueue on a loopback Citus cluster (a coordinator and
# two workers, own ports and data directories), after CREATE EXTENSION
# jobqueue and jq_distribute():
#   - jq_distribute(): what it does, that a second run does nothing, that
#     it refuses without Citus and on a worker; the tables, keys, triggers
#     and id ranges on every node; a session open before it works on after
#     it without reconnecting;
#   - ids inserted through every node are unique; calls by id alone find
#     them through every node;
#   - the feature pass (test/citus/feature.sql) prints the same on the
#     cluster as on one plain server;
#   - every statement of the hot path is a single-shard statement (its
#     plan, logged by auto_explain on every node, has one task);
#   - 8 clients drain 2 queues placed on different workers: every job once;
#   - a queue's shard moves to the other worker while clients work on it:
#     every job once, none lost;
#   - an expired lease on each worker is reaped by that node's worker;
#   - group counters set wrong by hand are corrected by the worker of the
#     queue's node, and by jq_recount_groups(queue);
#   - a rate limit with claims through the coordinator and the workers
#     stays within burst + rate x t;
#   - dependencies within a queue and across nodes (a completion on the
#     queue's node that releases a dependent on another commits in two
#     phases);
#   - jq_reap() by hand, without the workers;
#   - no errors in any node's log.
# Citus is built from $CITUS_SRC (a tarball or a tree) or from
# ../shared/citus/citus-13.2.2*.tar.gz next to the repository, and
# installed into $PG_CONFIG's server (not rebuilt when that version is
# there); without a source the suite is skipped, and says why.
#
# Usage: sudo bash scripts/test_citus.sh [WORKDIR]
#   WORKDIR: a copy made by jq_workdir where jobqueue is already built and
#   installed (scripts/test.sh passes its own).
# Ends with "jobqueue Citus tests: N passed, M failed"; exits non-zero when
# a check failed.
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/citus_common.sh"

if ! src=$(jq_citus_source); then
	echo "jobqueue Citus tests: skipped: no Citus source (set CITUS_SRC, or put citus-$JQ_CITUS_VERSION*.tar.gz in ../shared/citus next to the repository)"
	exit 0
fi

jq_install_only "${JQ_PKGS_BUILD[@]}" "${JQ_PKGS_CITUS[@]}"
if [ $# -ge 1 ]; then
	dir=$1
else
	dir=$(jq_workdir citus)
	jq_build_install "$dir"
fi
jq_citus_build "$src"

cdir=$dir/citus_check
rm -rf "$cdir"
jq_owned_dir "$cdir"

# --- checks ----------------------------------------------------------------
# Checks that are known to fail until the work they wait for is done are
# named here: they are run, a failure is reported as "expected failure",
# and a pass fails the suite (the name must then leave the list).
# One name a line.
KNOWN_FAILING=${JQ_CITUS_KNOWN_FAILING-""}
passed=0
failed=0
known() { grep -qFx -- "$1" <<<"$KNOWN_FAILING"; }
ok() {
	if known "$1"; then
		echo "not ok - $1: passes, but is listed as a known failure"
		failed=$((failed + 1))
	else
		echo "ok - $1"
		passed=$((passed + 1))
	fi
}
not_ok() {
	if known "$1"; then
		echo "expected failure - $1: $2"
	else
		echo "not ok - $1: $2"
		failed=$((failed + 1))
	fi
}
# expect NAME EXPECTED ACTUAL
expect() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "expected [$2], got [$3]"; fi
}

cleanup() {
	jq_citus_stop
	jq_cluster_stop
}
trap cleanup EXIT

# --- the cluster -----------------------------------------------------------
log "starting a Citus cluster: a coordinator and 2 workers"
jq_citus_cluster "$cdir" 2 "
jobqueue.reap_interval = '200ms'
jobqueue.launcher_interval = '1s'
jobqueue.idle_visit_interval = '1s'
log_min_messages = warning
"
psql_n() { jq_citus_psql "$@"; }
# psql on node $1, printing "ERROR:  <sqlstate>" for errors, never failing
psql_try() {
	local n=$1
	shift
	jq_citus_psql "$n" -v ON_ERROR_STOP=0 -v VERBOSITY=sqlstate "$@" 2>&1 || true
}
logpos=()
for i in 0 1 2; do logpos[i]=0; done

psql_n 0 -c 'CREATE EXTENSION jobqueue'

# --- jq_distribute ---------------------------------------------------------
log "jq_distribute()"
# refused on a worker, and in a database without Citus (not logged: those
# errors are the point)
expect "jq_distribute refused on a worker" "ERROR:  55000" \
	"$(psql_try 1 -c 'SET log_min_messages = fatal' -c 'SELECT jobqueue.jq_distribute()')"
psql_n 0 -d postgres -c 'CREATE DATABASE jq_plain' >/dev/null
as_pguser psql -X -q -h "${JQ_CITUS_DIRS[0]}" -p "${JQ_CITUS_PORTS[0]}" -d jq_plain -c 'CREATE EXTENSION jobqueue' >/dev/null
expect "jq_distribute refused without Citus" "ERROR:  55000" \
	"$(as_pguser psql -X -q -A -t -v VERBOSITY=sqlstate -h "${JQ_CITUS_DIRS[0]}" -p "${JQ_CITUS_PORTS[0]}" -d jq_plain \
		-c 'SET log_min_messages = fatal' -c 'SELECT jobqueue.jq_distribute()' 2>&1 || true)"

# A session opened before jq_distribute() and used after it, without
# reconnecting: it has kept plans made for one server (a claim of its
# queue); it must plan for Citus from then on.
mkfifo "$cdir/early.fifo"
[ "$(id -u)" -ne 0 ] || chown "$JQ_PGUSER" "$cdir/early.fifo"
jq_citus_psql 0 -v ON_ERROR_STOP=0 <"$cdir/early.fifo" >"$cdir/early.out" 2>&1 &
early_pid=$!
exec 7>"$cdir/early.fifo"
cat >&7 <<-'SQL'
	SELECT jobqueue.jq_create_queue('early');
	SELECT count(*) FROM jobqueue.jq_enqueue_many('early', ARRAY['{}', '{}', '{}']::jsonb[]);
	SELECT count(*) FROM jobqueue.jq_claim('early', 1, 'w');
	\echo early-ready
SQL
for ((t = 0; t < 240; t++)); do
	grep -q '^early-ready$' "$cdir/early.out" 2>/dev/null && break
	sleep 0.25
done

out=$(psql_n 0 -c 'SELECT * FROM jobqueue.jq_distribute()' 2>&1) || true
echo "$out" | sed 's/^/    /'
expect "jq_distribute distributes jobs" 1 "$(grep -c '^jobqueue.jobs: distributed by queue_name$' <<<"$out" || true)"
expect "jq_distribute prepares every node" 3 "$(grep -c '^node [0-9]*: jobs: primary key (queue_name, id)' <<<"$out" || true)"
expect "jq_distribute a second time does nothing" "" "$(psql_n 0 -c 'SELECT * FROM jobqueue.jq_distribute()' 2>&1)"
# in a transaction block jq_enqueue_many is not delegated: it runs here,
# with the statement this session kept from before
cat >&7 <<-'SQL'
	SELECT jobqueue.jq_enqueue('early', '{}') > 0;
	SELECT count(*) FROM jobqueue.jq_claim('early', 2, 'w');
	BEGIN;
	SELECT count(*) FROM jobqueue.jq_enqueue_many('early', ARRAY['{}', '{}']::jsonb[]);
	SELECT count(*) FROM jobqueue.jq_claim('early', 2, 'w');
	COMMIT;
SQL
exec 7>&-
wait "$early_pid" || true
expect "a session open since before jq_distribute() works on after it" "3 1 t 2 2 2" \
	"$(grep -v -e '^early-ready$' -e '^$' "$cdir/early.out" | paste -sd ' ')"

expect "tables: distributed by queue, colocated; configuration replicated" \
	"jobqueue.admission h t
jobqueue.group_limits h t
jobqueue.group_rotation h t
jobqueue.groups h t
jobqueue.job_dependencies h t
jobqueue.jobs h t
jobqueue.queues n f
jobqueue.schedules n f" \
	"$(psql_n 0 -F ' ' -c "SELECT logicalrelid::regclass, partmethod,
			colocationid = (SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'jobqueue.jobs'::regclass)
		FROM pg_dist_partition WHERE logicalrelid::regclass::text LIKE 'jobqueue.%' ORDER BY logicalrelid::regclass::text")"
# every node's copy of jobs and one shard on each worker
expect "primary key (queue_name, id) on every node" "PRIMARY KEY (queue_name, id)
PRIMARY KEY (queue_name, id)
PRIMARY KEY (queue_name, id)" \
	"$(psql_n 0 -c "SELECT result FROM run_command_on_all_nodes(\$\$SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'jobqueue.jobs'::regclass AND contype = 'p'\$\$) ORDER BY nodeid")"
expect "primary key (queue_name, id) and the group triggers on every shard" "t" \
	"$(psql_n 0 -c "SELECT bool_and(result = 'PRIMARY KEY (queue_name, id) 4') AND count(*) = 32 FROM run_command_on_shards('jobqueue.jobs',
		\$\$SELECT pg_get_constraintdef(c.oid) || ' ' || (SELECT count(*) FROM pg_trigger t WHERE t.tgrelid = '%1\$s'::regclass AND NOT t.tgisinternal)
		  FROM pg_constraint c WHERE c.conrelid = '%1\$s'::regclass AND c.contype = 'p'\$\$)")"
expect "the foreign keys to queues, between the distributed tables" "jobqueue.admission FOREIGN KEY (queue_name) REFERENCES jobqueue.queues(queue_name) ON DELETE CASCADE
jobqueue.group_limits FOREIGN KEY (queue_name) REFERENCES jobqueue.queues(queue_name) ON DELETE CASCADE
jobqueue.group_rotation FOREIGN KEY (queue_name) REFERENCES jobqueue.queues(queue_name) ON DELETE CASCADE" \
	"$(psql_n 0 -F ' ' -c "SELECT conrelid::regclass, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid::regclass::text LIKE 'jobqueue.%' AND contype = 'f' ORDER BY conrelid::regclass::text")"
expect "every node hands out its own id range" "1 281474976710657 562949953421313" \
	"$(psql_n 0 -c "SELECT string_agg(result, ' ' ORDER BY result::bigint) FROM run_command_on_all_nodes(\$\$SELECT seqmin FROM pg_sequence WHERE seqrelid = pg_get_serial_sequence('jobqueue.jobs', 'id')::regclass\$\$)")"
# Citus would crash hashing a NULL distribution argument (not logged:
# the refusals are the point)
expect "a delegated call with a NULL queue is refused, and the node stays up" "ERROR:  22004
ERROR:  22004
ERROR:  22004
ERROR:  22004
ERROR:  22004
ERROR:  22004
1" \
	"$(psql_try 0 -c 'SET log_min_messages = fatal' -c 'SELECT jobqueue.jq_claim(NULL, 1, $$w$$)' \
		-c 'SELECT count(*) FROM jobqueue.jq_jobs(NULL)' \
		-c 'PREPARE nq(text) AS SELECT jobqueue.jq_enqueue($1, $${}$$)' -c 'EXECUTE nq(NULL)' \
		-c 'SELECT jobqueue.jq_claim(nullif($$a$$, $$a$$), 1, $$w$$)' \
		-c 'SELECT * FROM jobqueue.jq_jobs(nullif($$a$$, $$a$$)::text)' \
		-c 'PREPARE nqe(text) AS SELECT jobqueue.jq_enqueue(nullif($1, $$a$$), $${}$$)' -c 'EXECUTE nqe($$a$$)' \
		-c 'SELECT 1')"
expect "jq_queue_node names a worker" "t" \
	"$(psql_n 0 -c "SELECT node_port IN (${JQ_CITUS_PORTS[1]}, ${JQ_CITUS_PORTS[2]}) FROM jobqueue.jq_queue_node('any-queue')")"

# Two queues whose shards are on different workers: names q_<n>, the first
# on each worker.
qname_on() {
	psql_n 0 -c "SELECT q FROM generate_series(1, 200) g, LATERAL (SELECT 'q_' || g AS q) n,
		LATERAL jobqueue.jq_queue_node(n.q) w WHERE w.node_port = $1 ORDER BY g LIMIT 1"
}
qa=$(qname_on "${JQ_CITUS_PORTS[1]}")
qb=$(qname_on "${JQ_CITUS_PORTS[2]}")
log "queue $qa lives on worker 1, $qb on worker 2"
# (leases long enough that no client of the drains below, on a busy
# machine, outlives its own: the expiry checks claim with a short lease)
for q in "$qa" "$qb"; do
	psql_n 0 -c "SELECT jobqueue.jq_create_queue('$q', lease_duration => '5 minutes')" >/dev/null
done
# jq_explain_claim shows the plan against the queue's shard, delegated to
# its node; on the coordinator (in a transaction block, not delegated, where
# the error is not logged) there is no kept plan to show
expect "jq_explain_claim shows the claim over the queue's shard on its node" "t" \
	"$(psql_try 0 -c "SELECT string_agg(l, ' ') ~ 'Index Scan using jobs_claim_idx_[0-9]+ on jobs_[0-9]+' FROM jobqueue.jq_explain_claim('$qa', 1) l")"
expect "jq_explain_claim elsewhere is refused, saying why" "ERROR:  0A000" \
	"$(psql_try 0 -c 'BEGIN' -c 'SET LOCAL log_min_messages = fatal' \
		-c "SELECT * FROM jobqueue.jq_explain_claim('$qa', 1)" -c 'ROLLBACK' | head -n 1)"

# --- ids through every node ------------------------------------------------
log "ids inserted through every node"
for i in 0 1 2; do
	for q in "$qa" "$qb"; do
		psql_try "$i" -c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$q', (SELECT array_agg('{\"via\": $i}'::jsonb) FROM generate_series(1, 50)))" >/dev/null
		psql_try "$i" -c "BEGIN" -c "SELECT jobqueue.jq_enqueue('$q', '{\"in_tx\": $i}') FROM generate_series(1, 20)" -c "COMMIT" >/dev/null
	done
done
expect "ids unique when inserted through every node" "420 420" \
	"$(psql_n 0 -F ' ' -c "SELECT count(*), count(DISTINCT id) FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb')")"
psql_n 0 -c "DELETE FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb')" >/dev/null

# queue_stats of one queue: Citus sends the whole view to the queue's shard
expect "queue_stats of one queue, through every node" "0 0 0" \
	"$(for i in 0 1 2; do psql_try "$i" -c "SELECT pending FROM jobqueue.queue_stats WHERE queue_name = '$qa'"; done | paste -sd ' ')"

# --- calls by id alone --------------------------------------------------------
# They look for the job's queue where it most likely is: the shards on the
# node called, then the queues on the node whose range drew the id, then
# every queue, then every shard.  A job of $qa whose id was drawn on each
# node (an enqueue in a transaction block runs where it is called) is
# found by id alone through each node; an unknown id through none.
log "calls by id alone, for ids drawn on every node, through every node"
for i in 0 1 2; do
	drawn[i]=$(psql_try "$i" -c "BEGIN" -c "SELECT jobqueue.jq_enqueue('$qa', '{\"by_id\": $i}')" -c "COMMIT")
done
found=""
for i in 0 1 2; do
	for j in 0 1 2; do
		found+="$(psql_try "$j" -c "SELECT count(*) FROM jobqueue.jq_job(${drawn[i]}) WHERE status = 'pending'")"
	done
done
expect "each job is found by id alone through every node" "111111111" "$found"
expect "the ids were drawn on three nodes" "3" \
	"$(psql_n 0 -c "SELECT count(DISTINCT (id - 1) >> 48) FROM jobqueue.jobs WHERE queue_name = '$qa' AND payload ? 'by_id'")"
cancelled=""
for i in 0 1 2; do
	cancelled+="$(psql_try $(((i + 1) % 3)) -c "SELECT jobqueue.jq_cancel(${drawn[i]})")"
done
expect "each is cancelled by id alone through another node" "ttt" "$cancelled"
expect "an unknown id is found through no node" "0 0 0" \
	"$(for j in 0 1 2; do psql_try "$j" -c "SELECT count(*) FROM jobqueue.jq_job(-7)"; done | paste -sd ' ')"
psql_n 0 -c "DELETE FROM jobqueue.jobs WHERE queue_name = '$qa'" >/dev/null

# --- claims with a policy, delegated --------------------------------------
# Each in a session of its own, through the coordinator: delegated to the
# queue's node (force_delegation), where every statement must stay on the
# queue's shard.
log "claims of queues with a policy, delegated to their node"
claimed=()
for p in "group_concurrency => 1" "group_ordered => true" "fairness => 'round_robin'" \
	"fairness => 'fair_share'" "fairness => 'deadline'" "priority_aging => '1 second'"; do
	q="$qa-policy-${#claimed[@]}"
	psql_try 0 -c "SELECT jobqueue.jq_create_queue('$q', $p)" \
		-c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$q', ARRAY['{}', '{}', '{}']::jsonb[], group_keys => ARRAY['a', 'a', 'b'])" >/dev/null
	claimed+=("$(psql_try 0 -c "SELECT count(*) FROM jobqueue.jq_claim('$q', 2, 'w')")")
done
expect "claims with every policy, delegated" "2 2 2 2 2 2" "${claimed[*]}"

# --- the feature pass: the same output as on one server ---------------------
log "the feature pass, on one plain server and on the cluster"
sport=$(jq_free_port $((JQ_CITUS_PORT_MIN + 100)) "$JQ_CITUS_PORT_MAX")
jq_cluster_init "$cdir/single" "$sport"
jq_cluster_conf <<-CONF
	shared_preload_libraries = 'jobqueue'
	jobqueue.worker_enabled = off
	fsync = off
CONF
jq_cluster_start
as_pguser psql -X -q -h "$JQ_PGHOST" -p "$sport" -d postgres -c 'CREATE DATABASE jobqueue' >/dev/null
as_pguser psql -X -q -h "$JQ_PGHOST" -p "$sport" -d jobqueue -c 'CREATE EXTENSION jobqueue' >/dev/null
cp "$JQ_ROOT/test/citus/feature.sql" "$cdir/feature.sql"
as_pguser psql -X -q -a -h "$JQ_PGHOST" -p "$sport" -d jobqueue -f "$cdir/feature.sql" >"$cdir/feature.single.out" 2>&1 || true
jq_cluster_stop
as_pguser psql -X -q -h "${JQ_CITUS_DIRS[0]}" -p "${JQ_CITUS_PORTS[0]}" -d jobqueue -a -f "$cdir/feature.sql" >"$cdir/feature.citus.out" 2>&1 || true
if diff -u "$cdir/feature.single.out" "$cdir/feature.citus.out" >"$cdir/feature.diff"; then
	ok "the feature pass prints the same on the cluster as on one server"
else
	not_ok "the feature pass prints the same on the cluster as on one server" \
		"$(grep -c '^[-+][^-+]' "$cdir/feature.diff") lines differ (see $cdir/feature.diff):
$(grep '^[-+][^-+]' "$cdir/feature.diff" | head -n 20)"
fi

# --- every hot statement is a single-shard statement -------------------------
# auto_explain logs the plan of every statement on every node (the
# functions' SPI statements too) while test/citus/hot.sql runs; a Citus
# plan names its number of tasks.
log "the hot path: tasks per statement"
for i in 0 1 2; do
	psql_n "$i" -c "LOAD 'auto_explain'" -c "ALTER SYSTEM SET session_preload_libraries = 'auto_explain'" \
		-c "ALTER SYSTEM SET auto_explain.log_min_duration = 0" \
		-c "ALTER SYSTEM SET auto_explain.log_nested_statements = on" \
		-c "SELECT pg_reload_conf()" >/dev/null
	logpos[i]=$(stat -c %s "${JQ_CITUS_DIRS[i]}/server.log")
done
sed -e "s/@QA@/$qa/g" -e "s/@QB@/$qb/g" "$JQ_ROOT/test/citus/hot.sql" >"$cdir/hot.sql"
for i in 0 1; do
	jq_citus_psql "$i" -v ON_ERROR_STOP=0 -f "$cdir/hot.sql" >"$cdir/hot.$i.out" 2>&1 || true
done
for i in 0 1 2; do
	psql_n "$i" -c "ALTER SYSTEM RESET session_preload_libraries" \
		-c "ALTER SYSTEM RESET auto_explain.log_min_duration" \
		-c "ALTER SYSTEM RESET auto_explain.log_nested_statements" \
		-c "SELECT pg_reload_conf()" >/dev/null
	tail -c +"$((logpos[i] + 1))" "${JQ_CITUS_DIRS[i]}/server.log"
done >"$cdir/hot.log"
perl -ne '
	if (/^\S+ \S+ \S+ \[\d+\] (node\d) LOG:  duration: .* plan:/) { $node = $1; $q = undef; next }
	if (!defined $q && /^\s+Query Text: ?(.*)/) { $q = $1; $q = undef if $q eq ""; if (defined $q) { $q =~ s/\s+/ /g; $q = substr($q, 0, 110) } else { $want = 1 } next }
	if ($want && /\S/) { ($q = $_) =~ s/^\s+|\s+$//g; $q =~ s/\s+/ /g; $q = substr($q, 0, 110); $want = 0; next }
	if (defined $q && /Task Count: (\d+)/) { print "$1\t$node\t$q\n"; $q = "" }
' "$cdir/hot.log" | sort -u >"$cdir/tasks.txt"
printf '    tasks  node   statement\n'
sed 's/^/    /' "$cdir/tasks.txt"
expect "the hot path ran without errors" "" "$(grep -h 'ERROR' "$cdir"/hot.*.out | head -n 5)"
expect "every statement of the hot path has one task" "" "$(awk -F '\t' '$1 != 1' "$cdir/tasks.txt" | head -n 10)"
if [ ! -s "$cdir/tasks.txt" ]; then not_ok "the hot path logged its plans" "no plan with a task count in the logs"; fi
# On the node of the queue's shard the statements run against the shard
# itself (src/localshard.c): Citus plans only those over more than one
# queue there.
expect "on the queue's node, no statement over jobs goes through Citus's planner" "" \
	"$(awk -F '\t' '$2 == "node1" && $3 ~ /jobqueue\.jobs /' "$cdir/tasks.txt" | head -n 5)"

# --- dependencies across nodes ------------------------------------------------
# Each row of job_dependencies sits on the shard of the job it waits for;
# the dependent is updated on its own node.  Through the workers, so that
# the calls are delegated to the queues' nodes and write to the other one.
log "jobs of $qb wait for jobs of $qa, and the other way round"
# $qa's node is the first worker, $qb's the second (checked above)
dep=$(psql_try 1 -c "SELECT jobqueue.jq_enqueue('$qa', '{\"dep\": \"root\"}')")
waits=$(psql_try 2 -c "SELECT jobqueue.jq_enqueue('$qb', '{\"dep\": \"waits\"}', depends_on => ARRAY[$dep::bigint])")
expect "a dependency on a job of a queue on another node" "waiting {$dep} $qa $qb" \
	"$(psql_try 0 -F ' ' -c "SELECT j.status, j.waiting_for, d.queue_name, d.job_queue
		FROM jobqueue.jq_job('$qb', $waits) j, jobqueue.job_dependencies d WHERE d.job_id = $waits")"
cat >"$cdir/dep.sql" <<SQL
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM jobqueue.jq_claim('$qa', 100, 'dep') \\gset
SELECT count(*) FROM jobqueue.jq_complete_many('$qa', :'ids', :'tokens');
SQL
# The completion runs on the shard in the node's own backend, the release
# through Citus on the other node: one transaction, committed in two
# phases. Citus keeps a record of each prepared transaction, named with
# the pid of the backend that committed it (its recovery, which deletes
# them, is held off meanwhile).
psql_n 1 -c "ALTER SYSTEM SET citus.recover_2pc_interval = -1" -c "SELECT pg_reload_conf()" >/dev/null
pid=$(psql_try 1 -c "SELECT pg_backend_pid()" -f "$cdir/dep.sql" | head -n 1)
expect "its completion on its node releases the dependent on the other" "pending 0" \
	"$(psql_try 0 -F ' ' -c "SELECT status, (SELECT count(*) FROM jobqueue.job_dependencies WHERE depends_on = $dep)
		FROM jobqueue.jobs WHERE queue_name = '$qb' AND id = $waits")"
expect "the completion and the release committed together, in two phases" "1" \
	"$(psql_try 1 -c "SELECT count(*) FROM pg_dist_transaction WHERE gid ~ ('^citus_[0-9]+_' || ${pid:-0} || '_')")"
psql_n 1 -c "ALTER SYSTEM RESET citus.recover_2pc_interval" -c "SELECT pg_reload_conf()" >/dev/null
# a batch that waits for two jobs of a queue on another node, enqueued
# through every node, released when both are done
p1=$(psql_try 1 -c "SELECT jobqueue.jq_enqueue('$qa', '{\"dep\": \"batch 1\"}')")
p2=$(psql_try 1 -c "SELECT jobqueue.jq_enqueue('$qa', '{\"dep\": \"batch 2\"}')")
for i in 0 1 2; do
	psql_try "$i" -c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$qb', ARRAY['{\"batch\": $i}', '{\"batch\": $i}']::jsonb[],
		depends_on => ARRAY[$p1, $p2]::bigint[])" >/dev/null
done
batch_state() {
	psql_try 0 -F ' ' -c "SELECT string_agg(DISTINCT status::text, ','), count(*),
		(SELECT count(*) FROM jobqueue.job_dependencies WHERE depends_on IN ($p1, $p2))
		FROM jobqueue.jobs WHERE queue_name = '$qb' AND payload ? 'batch'"
}
complete_one_of_qa="SELECT jobqueue.jq_complete('$qa', c.id, c.token) FROM jobqueue.jq_claim('$qa', 1, 'dep') c"
expect "jq_enqueue_many waits for jobs on another node, through every node" "waiting 6 12" "$(batch_state)"
psql_try 1 -c "$complete_one_of_qa" >/dev/null
expect "one of its dependencies done, the batch still waits" "waiting 6 6" "$(batch_state)"
psql_try 1 -c "$complete_one_of_qa" >/dev/null
expect "both done, the batch is released and no row is left" "pending 6 0" "$(batch_state)"
psql_try 0 -c "DELETE FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb')" >/dev/null
# a failure cancels transitively: $qa -> $qb -> $qa
x=$(psql_try 1 -c "SELECT jobqueue.jq_enqueue('$qa', '{\"dep\": \"x\"}')")
y=$(psql_try 2 -c "SELECT jobqueue.jq_enqueue('$qb', '{\"dep\": \"y\"}', depends_on => ARRAY[$x::bigint])")
z=$(psql_try 1 -c "SELECT jobqueue.jq_enqueue('$qa', '{\"dep\": \"z\"}', depends_on => ARRAY[$y::bigint])")
psql_try 1 -c "SELECT jobqueue.jq_fail('$qa', c.id, c.token, 'E_DEP', 'for good', false) FROM jobqueue.jq_claim('$qa', 1, 'dep') c" >/dev/null
chain() {
	local id
	for id in "$x" "$y" "$z"; do
		psql_try 0 -F ' ' -c "SELECT status, last_error_code, errors -> -1 ->> 'dependency' FROM jobqueue.jobs WHERE id = $id"
	done
}
expect "a failure cancels the dependents across nodes, level by level" "dead E_DEP 
cancelled DEPENDENCY_FAILED $x
cancelled DEPENDENCY_FAILED $y" "$(chain)"
# a job enqueued to wait for a failed job is cancelled at once, its row kept
w=$(psql_try 2 -c "SELECT jobqueue.jq_enqueue('$qb', '{\"dep\": \"w\"}', depends_on => ARRAY[$x::bigint])")
expect "a job enqueued to wait for a dead one on another node is cancelled, its row kept" "cancelled 1" \
	"$(psql_try 0 -F ' ' -c "SELECT status, (SELECT count(*) FROM jobqueue.job_dependencies WHERE job_id = $w) FROM jobqueue.jobs WHERE id = $w")"
expect "a replay waits for a dependency that failed to be replayed first" "ERROR:  55000" \
	"$(psql_try 2 -c 'SET log_min_messages = fatal' -c "SELECT jobqueue.jq_retry('$qb', $y)")"
expect "replayed in order, the chain waits again" "pending waiting waiting" \
	"$(psql_try 0 -c "SELECT jobqueue.jq_retry('$qa', $x), jobqueue.jq_retry('$qb', $y), jobqueue.jq_retry('$qa', $z)" >/dev/null
	   chain | cut -d ' ' -f 1 | paste -sd ' ')"
expect "so does the job that was cancelled at its enqueue" "t waiting" \
	"$({ psql_try 0 -c "SELECT jobqueue.jq_retry('$qb', $w)"
	     psql_try 0 -c "SELECT status FROM jobqueue.jobs WHERE id = $w"; } | paste -sd ' ')"
# cancelled dependents past their retention are purged with their rows
psql_try 0 -c "SELECT jobqueue.jq_cancel('$qb', $y)" >/dev/null
expect "a purge deletes cancelled dependents and their rows on the other node" "1 1 0" \
	"$({ psql_try 2 -F ' ' -c "SELECT jobqueue.jq_purge('$qa', '0 seconds'), jobqueue.jq_purge('$qb', '0 seconds')"
	     psql_try 0 -c "SELECT count(*) FROM jobqueue.job_dependencies WHERE job_id IN ($y, $z)"; } | paste -sd ' ')"
# Inside a transaction block Citus lets jq_complete_and_claim (delegated
# with force_delegation) write to its own queue only: a dependent in
# another queue is left to the worker of the finished job's node.
cat >"$cdir/dep-block.sql" <<SQL
SELECT jobqueue.jq_enqueue('$qa', '{"dep": "in a block"}') AS p \\gset
SELECT jobqueue.jq_enqueue('$qb', '{"dep": "other queue"}', depends_on => ARRAY[:p]::bigint[]) AS other \\gset
SELECT jobqueue.jq_enqueue('$qa', '{"dep": "same queue"}', depends_on => ARRAY[:p]::bigint[]) AS same \\gset
SELECT id, token FROM jobqueue.jq_claim('$qa', 100, 'block') WHERE id = :p \\gset c_
BEGIN;
SELECT count(*) FROM jobqueue.jq_complete_and_claim('$qa', ARRAY[:c_id]::bigint[], ARRAY[:c_token]::bigint[], 1, 'block');
COMMIT;
SELECT :same AS same, :other AS other
SQL
read -r same other < <(psql_try 0 -F ' ' -f "$cdir/dep-block.sql" | tail -n 1)
for ((t = 0; t < 120; t++)); do
	[ "$(psql_try 0 -c "SELECT status FROM jobqueue.jobs WHERE queue_name = '$qb' AND id = ${other:-0}")" = pending ] && break
	sleep 0.25
done
# (the same queue's dependent may have been claimed by the call)
expect "a completion in a transaction block releases its queue's dependent at once, another queue's by the worker" \
	"released pending" \
	"$(psql_try 0 -c "SELECT string_agg(CASE WHEN queue_name = '$qa' AND status IN ('pending', 'running') THEN 'released' ELSE status::text END,
		' ' ORDER BY queue_name = '$qb') FROM jobqueue.jobs WHERE id IN (${same:-0}, ${other:-0})")"

# Producers enqueue jobs of $qb that wait for jobs of $qa while workers
# complete those (a lock on the other node at the enqueue, a write on the
# other node at the completion): every waiting job is released once,
# none is stranded.
log "producers and workers race over dependencies across nodes"
psql_try 0 -c "DELETE FROM jobqueue.job_dependencies" -c "DELETE FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb')" >/dev/null
# (the ids are the client's: a call with a subquery over jobqueue's tables
# in its arguments is not delegated, see docs/scale-out.md)
parents=($(psql_try 0 -c "SELECT * FROM jobqueue.jq_enqueue_many('$qa', (SELECT array_agg(jsonb_build_object('parent', g)) FROM generate_series(1, 60) g))"))
pids=()
for c in 0 1; do
	for ((k = 0; k < 40; k++)); do
		echo "SELECT jobqueue.jq_enqueue('$qb', '{\"waits\": $k}', depends_on => ARRAY[${parents[RANDOM % 60]}, ${parents[RANDOM % 60]}]::bigint[]);"
	done >"$cdir/dep-producer.$c.sql"
	jq_citus_psql $((c * 2)) -v ON_ERROR_STOP=0 -f "$cdir/dep-producer.$c.sql" >"$cdir/dep-producer.$c.out" 2>&1 &
	pids+=($!)
	for ((k = 0; k < 40; k++)); do
		echo "SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM jobqueue.jq_claim('$qa', 1, 'dep-$c') \\gset"
		echo "SELECT count(*) FROM jobqueue.jq_complete_many('$qa', :'ids', :'tokens');"
	done >"$cdir/dep-worker.$c.sql"
	jq_citus_psql $((c + 1)) -v ON_ERROR_STOP=0 -f "$cdir/dep-worker.$c.sql" >"$cdir/dep-worker.$c.out" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
cat >"$cdir/dep-rest.sql" <<SQL
SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM jobqueue.jq_claim('$qa', 100, 'dep-rest') \\gset
SELECT count(*) FROM jobqueue.jq_complete_many('$qa', :'ids', :'tokens');
SQL
psql_try 1 -f "$cdir/dep-rest.sql" >/dev/null
expect "the race ran without errors" "" "$(grep -h 'ERROR' "$cdir"/dep-producer.*.out "$cdir"/dep-worker.*.out | sort | uniq -c | head -n 5)"
expect "every job that waited across nodes is released, no row is left" "80 80 0" \
	"$(psql_try 0 -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE status = 'pending' AND dependencies_left = 0),
		(SELECT count(*) FROM jobqueue.job_dependencies WHERE queue_name = '$qa')
		FROM jobqueue.jobs WHERE queue_name = '$qb'")"

# --- 8 clients drain 2 queues on different workers ------------------------
log "8 clients drain $qa and $qb, through the coordinator and the workers"
# from empty queues and counters
psql_n 0 -c "DELETE FROM jobqueue.job_dependencies" -c "DELETE FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb')" >/dev/null
psql_n 0 -c "SELECT count(*) FROM run_command_on_all_nodes(\$\$SELECT jobqueue.jq_counters_reset('$qa'), jobqueue.jq_counters_reset('$qb')\$\$)" >/dev/null
for q in "$qa" "$qb"; do
	psql_try 0 -c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$q', (SELECT array_agg(jsonb_build_object('n', g)) FROM generate_series(1, 500) g))" >/dev/null
done
pids=()
for c in 0 1 2 3 4 5 6 7; do
	q=$qa
	((c % 2)) && q=$qb
	for ((k = 0; k < 70; k++)); do
		echo "SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM jobqueue.jq_claim('$q', 5, 'drain-$c') \\gset"
		echo "SELECT count(*) FROM jobqueue.jq_complete_many(:'ids', :'tokens');"
	done >"$cdir/drain.$c.sql"
	jq_citus_psql $((c % 3)) -v ON_ERROR_STOP=0 -f "$cdir/drain.$c.sql" >"$cdir/drain.$c.out" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
expect "every job of the drain ran once" "1000 1000 1000" \
	"$(psql_try 0 -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE status = 'succeeded' AND attempt_count = 1 AND lease_token = 1), count(DISTINCT id)
		FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb')")"
expect "the drain ran without errors" "" "$(grep -h 'ERROR' "$cdir"/drain.*.out | sort | uniq -c | head -n 5)"

# --- the cluster's counters --------------------------------------------------
expect "the counters of every node add up to the cluster's" "1000" \
	"$(psql_try 0 -c "SELECT sum((c ->> 'completed')::bigint) FROM run_command_on_all_nodes(
		\$\$SELECT coalesce(json_agg(c), '[]') FROM jobqueue.jq_counters() c WHERE c.queue_name IN ('$qa', '$qb')\$\$) n,
		LATERAL json_array_elements(n.result::json) c")"

# --- a queue's shard moves while clients work on it --------------------------
# On the node that holds a queue's shard, its statements run against the
# shard itself (src/localshard.c), under Citus's lock on the shard's
# metadata.  The shard moves to the other worker (block_writes: Citus
# blocks the writes for the whole move) while clients claim and complete
# through the old node, the new one and the coordinator, and a producer
# enqueues through the old node: every job runs once, none is lost, and
# the old node's calls follow the shard.
log "a shard moves from worker 1 to worker 2 while clients work on its queue"
qm=$(psql_n 0 -c "SELECT q FROM generate_series(1, 200) g, LATERAL (SELECT 'qm_' || g AS q) n,
	LATERAL jobqueue.jq_queue_node(n.q) w WHERE w.node_port = ${JQ_CITUS_PORTS[1]} ORDER BY g LIMIT 1")
psql_n 0 -c "SELECT jobqueue.jq_create_queue('$qm', lease_duration => '5 minutes')" >/dev/null
psql_try 0 -c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$qm', (SELECT array_agg(jsonb_build_object('n', g)) FROM generate_series(1, 600) g))" >/dev/null
pids=()
for c in 0 1 2 3; do
	for ((k = 0; k < 200; k++)); do
		echo "SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens FROM jobqueue.jq_claim('$qm', 2, 'move-$c') \\gset"
		echo "SELECT count(*) FROM jobqueue.jq_complete_many('$qm', :'ids', :'tokens');"
	done >"$cdir/move.$c.sql"
	# two clients on the shard's node, one on the coordinator, one on the other worker
	node=$(((c + 1) % 3)); ((c == 3)) && node=1
	jq_citus_psql "$node" -v ON_ERROR_STOP=0 -f "$cdir/move.$c.sql" >"$cdir/move.$c.out" 2>&1 &
	pids+=($!)
done
for ((k = 0; k < 100; k++)); do
	echo "SELECT jobqueue.jq_enqueue('$qm', '{\"during\": \"move\"}');"
done >"$cdir/move.producer.sql"
jq_citus_psql 1 -v ON_ERROR_STOP=0 -f "$cdir/move.producer.sql" >"$cdir/move.producer.out" 2>&1 &
pids+=($!)
for ((t = 0; t < 400; t++)); do
	[ "$(psql_try 0 -c "SELECT count(*) >= 50 FROM jobqueue.jobs WHERE queue_name = '$qm' AND status = 'succeeded'")" = t ] && break
	sleep 0.05
done
# A transaction on worker 1 writes to the shard and stays open until the
# move waits for it (Citus's lock on the shard's metadata, which the move
# takes in ExclusiveLock on every node): the write is moved with the shard.
waiting_move="SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 8 AND mode = 'ExclusiveLock' AND NOT granted)"
jq_citus_psql 1 -v ON_ERROR_STOP=0 -c "SET application_name = 'jq-move-holder'" -c "BEGIN" \
	-c "SELECT jobqueue.jq_enqueue('$qm', '{\"held\": \"over the move\"}') IS NOT NULL" \
	-c "DO \$\$ BEGIN FOR i IN 1..1200 LOOP EXIT WHEN ($waiting_move); PERFORM pg_sleep(0.05); END LOOP; END \$\$" \
	-c "SELECT 'the move waited: ' || ($waiting_move)" -c "COMMIT" >"$cdir/move.holder.out" 2>&1 &
holder=$!
for ((t = 0; t < 400; t++)); do
	[ "$(psql_try 1 -c "SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE a.application_name = 'jq-move-holder' AND l.locktype = 'advisory' AND l.objsubid = 8 AND l.granted)")" = t ] && break
	sleep 0.05
done
moved=$(psql_try 0 -c "SELECT citus_move_shard_placement(s, n1.nodename, n1.nodeport, n2.nodename, n2.nodeport, shard_transfer_mode => 'block_writes')
	FROM (SELECT get_shard_id_for_distribution_column('jobqueue.jobs', '$qm') s) s,
	  pg_dist_node n1, pg_dist_node n2
	WHERE n1.nodeport = ${JQ_CITUS_PORTS[1]} AND n2.nodeport = ${JQ_CITUS_PORTS[2]}")
wait "$holder" || true
for p in "${pids[@]}"; do wait "$p" || true; done
expect "the shard moved" "" "$moved"
expect "the move waited for a transaction that wrote to the shard on its node" "the move waited: true" \
	"$(grep -h 'the move waited' "$cdir/move.holder.out")"
expect "the queue lives on worker 2 now" "${JQ_CITUS_PORTS[2]}" \
	"$(psql_n 0 -c "SELECT node_port FROM jobqueue.jq_queue_node('$qm')")"
# what the clients left, through the old node
psql_try 1 -c "DO \$\$ DECLARE r record; BEGIN LOOP
		SELECT coalesce(array_agg(id), '{}') AS ids, coalesce(array_agg(token), '{}') AS tokens
		INTO r FROM jobqueue.jq_claim('$qm', 50, 'move-rest');
		EXIT WHEN cardinality(r.ids) = 0;
		PERFORM jobqueue.jq_complete_many('$qm', r.ids, r.tokens);
	END LOOP; END \$\$" >/dev/null
expect "every job of the moved queue ran once" "701 701 701" \
	"$(psql_try 0 -F ' ' -c "SELECT count(*), count(*) FILTER (WHERE status = 'succeeded' AND attempt_count = 1 AND lease_token = 1), count(DISTINCT id)
		FROM jobqueue.jobs WHERE queue_name = '$qm'")"
expect "the clients and the producer ran without errors" "" \
	"$(grep -h 'ERROR' "$cdir"/move.*.out | sort | uniq -c | head -n 5)"
# in a transaction block the enqueue runs on the old node itself, where the
# moved shard's table may still be (Citus drops it later): it must write
# through Citus, to the new placement
psql_try 1 -c "BEGIN" -c "SELECT jobqueue.jq_enqueue('$qm', '{\"after\": \"move\"}')" -c "COMMIT" >/dev/null
expect "an enqueue on the old node after the move reaches the new placement" "1" \
	"$(psql_try 2 -c "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = '$qm' AND payload ? 'after'")"
expect "a claim on the old node after the move gets that job" "1" \
	"$(psql_try 1 -c "SELECT count(*) FROM jobqueue.jq_claim('$qm', 5, 'after')")"
# the new node's worker reaps the moved queue's expired leases
psql_try 0 -c "SELECT jobqueue.jq_enqueue('$qm', '{\"lease\": \"expires\"}')" >/dev/null
psql_try 0 -c "SELECT count(*) FROM jobqueue.jq_claim('$qm', 5, 'gone', lease => '1 second')" >/dev/null
for ((t = 0; t < 120; t++)); do
	[ "$(psql_try 2 -c "SELECT coalesce(sum(leases_expired), 0) FROM jobqueue.jq_counters() WHERE queue_name = '$qm'")" = 1 ] && break
	sleep 0.25
done
expect "the moved queue's expired lease is reaped by its new node" "1 0" \
	"$(for i in 2 1; do psql_try "$i" -c "SELECT coalesce(sum(leases_expired), 0) FROM jobqueue.jq_counters() WHERE queue_name = '$qm'"; done | paste -sd ' ')"

# --- an expired lease on each worker, reaped by that node's worker ----------
log "expired leases, reaped where their queue lives"
reaped() {
	psql_try "$1" -c "SELECT coalesce(sum(leases_expired), 0) FROM jobqueue.jq_counters() WHERE queue_name = '$2'"
}
for q in "$qa" "$qb"; do
	psql_try 0 -c "SELECT jobqueue.jq_enqueue('$q', '{\"lease\": \"expires\"}')" >/dev/null
	psql_try 0 -c "SELECT count(*) FROM jobqueue.jq_claim('$q', 1, 'gone', lease => '1 second')" >/dev/null
done
for ((t = 0; t < 120; t++)); do
	left=$(psql_try 0 -c "SELECT count(*) FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb') AND status = 'running'")
	[ "$left" = 0 ] && break
	sleep 0.25
done
expect "the expired lease on worker 1 is reaped by worker 1" "1" "$(reaped 1 "$qa")"
expect "the expired lease on worker 2 is reaped by worker 2" "1" "$(reaped 2 "$qb")"

# --- group counters that disagree with the jobs ----------------------------
# Set wrong by hand (as a restore without triggers would leave them): the
# worker of the node that holds the queue corrects them queue by queue,
# and prunes the row of a group without jobs; jq_recount_groups(queue)
# corrects them at once.
log "group counters: repaired on the queue's node"
gq=("$qa-groups" "$qb-groups")
for q in "${gq[@]}"; do
	psql_try 0 -c "SELECT jobqueue.jq_create_queue('$q', group_concurrency => 2)" \
		-c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$q', ARRAY['{}', '{}', '{}', '{}']::jsonb[], group_keys => ARRAY['a', 'a', 'b', 'c'])" \
		-c "SELECT count(*) FROM jobqueue.jq_claim('$q', 3, 'w')" >/dev/null
done
group_rows() {
	psql_try 0 -c "SELECT string_agg(group_key || ':' || running, ' ' ORDER BY group_key) FROM jobqueue.groups WHERE queue_name = '$1'"
}
expect "group counters as claimed" "a:2 b:1 c:0" "$(group_rows "${gq[0]}")"
# in one transaction on the coordinator (not delegated): the worker cannot
# see the wrong values before jq_recount_groups has corrected them
expect "jq_recount_groups(queue) corrects what it finds wrong" "2" \
	"$(psql_try 0 -c "BEGIN" -c "UPDATE jobqueue.groups SET running = 7 WHERE queue_name = '${gq[1]}' AND group_key = 'a'" \
		-c "DELETE FROM jobqueue.groups WHERE queue_name = '${gq[1]}' AND group_key = 'b'" \
		-c "SELECT jobqueue.jq_recount_groups('${gq[1]}')" -c "COMMIT")"
expect "jq_recount_groups(queue): counters right again" "a:2 b:1 c:0" "$(group_rows "${gq[1]}")"
expect "every queue recounted, queue by queue, from the coordinator" "1 a:2 b:1 c:0" \
	"$(psql_try 0 -c "BEGIN" -c "UPDATE jobqueue.groups SET running = 5 WHERE queue_name = '${gq[1]}' AND group_key = 'a'" \
		-c "SELECT sum(jobqueue.jq_recount_groups(q.queue_name)) FROM jobqueue.queues q" -c "COMMIT") $(group_rows "${gq[1]}")"
psql_try 0 -c "UPDATE jobqueue.groups SET running = 7 WHERE queue_name = '${gq[0]}' AND group_key = 'a'" \
	-c "DELETE FROM jobqueue.groups WHERE queue_name = '${gq[0]}' AND group_key = 'b'" \
	-c "DELETE FROM jobqueue.jobs WHERE queue_name = '${gq[0]}' AND group_key = 'c'" >/dev/null
for ((t = 0; t < 120; t++)); do
	[ "$(group_rows "${gq[0]}")" = "a:2 b:1" ] && break
	sleep 0.25
done
expect "the queue's node corrects the counters and prunes a group without jobs" "a:2 b:1" "$(group_rows "${gq[0]}")"
# a group policy given later: the jobs without a group get the group ''
# (which has no limit), counted as they are claimed
psql_try 0 -c "SELECT jobqueue.jq_create_queue('$qa-regroup')" \
	-c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$qa-regroup', ARRAY['{}', '{}']::jsonb[])" \
	-c "SELECT jobqueue.jq_alter_queue('$qa-regroup', group_concurrency => 1)" >/dev/null
expect "a group policy given by jq_alter_queue: jobs regrouped and counted" "2 :2" \
	"$(psql_try 0 -c "SELECT count(*) FROM jobqueue.jq_claim('$qa-regroup', 2, 'w')") $(group_rows "$qa-regroup")"
# a fair_share queue dropped with a running job: the DELETE on the shard
# charges the job's time to its group there, on the shard's own node
psql_try 0 -c "SELECT jobqueue.jq_create_queue('$qa-fair', fairness => 'fair_share')" \
	-c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$qa-fair', ARRAY['{}', '{}']::jsonb[], group_keys => ARRAY['a', 'b'])" \
	-c "SELECT count(*) FROM jobqueue.jq_claim('$qa-fair', 1, 'w')" >/dev/null
expect "a fair_share queue with a running job is dropped" " 0" \
	"$(psql_try 0 -c "SELECT jobqueue.jq_drop_queue('$qa-fair', force => true)" \
		-c "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = '$qa-fair'" | paste -sd ' ')"

# --- a rate limit holds for the whole cluster --------------------------------
log "a rate limit, claimed through the coordinator and both workers"
psql_try 0 -c "SELECT jobqueue.jq_create_queue('$qa-rl', rate_limit => 4, rate_burst => 2)" >/dev/null
psql_try 0 -c "SELECT count(*) FROM jobqueue.jq_enqueue_many('$qa-rl', (SELECT array_agg('{}'::jsonb) FROM generate_series(1, 200)))" >/dev/null
pids=()
for c in 0 1 2; do
	for ((k = 0; k < 40; k++)); do echo "SELECT jobqueue.jq_claim('$qa-rl', 1, 'rl-$c');"; done >"$cdir/rl.$c.sql"
	jq_citus_psql "$c" -v ON_ERROR_STOP=0 -f "$cdir/rl.$c.sql" >"$cdir/rl.$c.out" 2>&1 &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
# t: from the first claim to the last, by the database's clock
expect "claims within burst + rate x t" "t" \
	"$(psql_try 0 -c "SELECT count(*) > 0 AND count(*) <= 2 + 4 * extract(epoch FROM max(started_at) - min(started_at))
		FROM jobqueue.jobs WHERE queue_name = '$qa-rl' AND status = 'running'")"
expect "the rate-limited claims ran without errors" "" "$(grep -h 'ERROR' "$cdir"/rl.*.out | sort | uniq -c | head -n 5)"

# --- schedules fire once per slot --------------------------------------------
# (yearly, made due now: its next slot is a year away, so a second job
# could only come from a second firing of this one)
log "a due schedule"
psql_try 0 -c "SELECT jobqueue.jq_schedule('cluster-yearly', '$qb', '0 0 1 1 *', '{\"sched\": 1}') IS NOT NULL" >/dev/null
psql_try 0 -c "UPDATE jobqueue.schedules SET next_run_at = now() WHERE schedule_name = 'cluster-yearly'" >/dev/null
for ((t = 0; t < 120; t++)); do
	[ "$(psql_try 0 -c "SELECT last_run_at IS NOT NULL FROM jobqueue.schedules WHERE schedule_name = 'cluster-yearly'")" = t ] && break
	sleep 0.25
done
expect "a due schedule fires once" "1" \
	"$(psql_try 0 -c "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = '$qb' AND payload @> '{\"sched\": 1}'")"
psql_try 0 -c "SELECT jobqueue.jq_unschedule('cluster-yearly')" >/dev/null

# --- without the background worker: jq_reap() -------------------------------
# Last, as it stops the workers: jq_reap() through the coordinator reaps
# the expired leases of every queue, each on its shard, and resolves the
# dependents left to the workers.
log "jq_reap() by hand, the workers stopped"
for i in 0 1 2; do
	psql_n "$i" -c "ALTER SYSTEM SET jobqueue.worker_enabled = off" -c "SELECT pg_reload_conf()" >/dev/null
done
for ((t = 0; t < 120; t++)); do
	[ "$(for i in 0 1 2; do psql_try "$i" -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jobqueue worker'"; done | paste -sd ' ')" = "0 0 0" ] && break
	sleep 0.25
done
psql_try 0 -c "DELETE FROM jobqueue.jobs WHERE queue_name IN ('$qa', '$qb')" >/dev/null
cat >"$cdir/reap.sql" <<SQL
SELECT jobqueue.jq_enqueue('$qa', '{"reap": "parent"}') AS p \\gset
SELECT jobqueue.jq_enqueue('$qb', '{"reap": "dependent"}', depends_on => ARRAY[:p]::bigint[]) AS other \\gset
SELECT id, token FROM jobqueue.jq_claim('$qa', 1, 'reap') \\gset c_
SELECT count(*) FROM jobqueue.jq_complete_and_claim('$qa', ARRAY[:c_id]::bigint[], ARRAY[:c_token]::bigint[], 1, 'reap');
SELECT jobqueue.jq_enqueue('$qa', '{"reap": "a"}'), jobqueue.jq_enqueue('$qb', '{"reap": "b"}');
SELECT count(*) FROM jobqueue.jq_claim('$qa', 1, 'gone');
SELECT count(*) FROM jobqueue.jq_claim('$qb', 1, 'gone');
-- their leases ended (set by hand rather than waited for); the leases of
-- earlier sections' running jobs are pushed away, so that the count is theirs
UPDATE jobqueue.jobs SET lease_expires_at = now() - interval '1 second' WHERE lease_owner = 'gone';
UPDATE jobqueue.jobs SET lease_expires_at = now() + interval '1 hour'
	WHERE status = 'running' AND lease_owner IS DISTINCT FROM 'gone';
SELECT status FROM jobqueue.jobs WHERE queue_name = '$qb' AND id = :other;
SELECT jobqueue.jq_reap();
SELECT status FROM jobqueue.jobs WHERE queue_name = '$qb' AND id = :other;
SQL
expect "jq_reap() reaps every queue's expired leases and resolves the deferred dependents" "waiting 2 pending" \
	"$(psql_try 0 -f "$cdir/reap.sql" | tail -n 3 | paste -sd ' ')"

# --- no errors in any node's log -------------------------------------------
for i in 0 1 2; do
	expect "no errors in the log of node $i" "" \
		"$(grep -E '(ERROR|FATAL|PANIC):' "${JQ_CITUS_DIRS[i]}/server.log" | sed 's/^[^]]*\] //' | sort | uniq -c | sort -rn | head -n 5)"
done

echo
echo "jobqueue Citus tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
