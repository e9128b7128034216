# The classic double-claim experiment.
#
# 10,000 pending jobs; 8 concurrent pgbench clients each run 1,250
# transactions that claim one job with jq_claim and complete it with
# jq_complete.  Every job must be executed exactly once: all succeeded,
# every attempt_count = 1, nothing left pending or running, and 10,000
# accepted completions, no job completed twice.
#
# For comparison the same load runs against the naive claim that many
# home-made queues use, an UPDATE ... WHERE id = (SELECT ... LIMIT 1)
# without a row lock.  Under READ COMMITTED, two clients that pick the same
# row both update it (the second waits for the first, re-checks only
# "id = <the id it picked>", and goes ahead), so jobs run twice and others
# are left behind.  How often depends on the machine, so those numbers are
# only reported, not asserted.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $jobs = 10_000;
my $clients = 8;
my $per_client = $jobs / $clients;

# Nobody may touch the jobs but the clients under test: the background
# worker is off.
my $node = jq_node('double_claim', worker => 'off');

$node->safe_psql(
	'postgres', qq{
	SELECT jobqueue.jq_create_queue('double_claim');
	SELECT count(*) FROM jobqueue.jq_enqueue_many('double_claim',
		ARRAY(SELECT pg_catalog.jsonb_build_object('n', g)
			  FROM pg_catalog.generate_series(1, $jobs) g));
	-- one row per accepted completion, duplicates allowed on purpose
	CREATE TABLE completions (job_id bigint NOT NULL, client int NOT NULL);
});

is( $node->safe_psql(
		'postgres',
		"SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'double_claim' AND status = 'pending'"
	),
	$jobs,
	"$jobs pending jobs enqueued");

# One worker iteration: claim one job (a claim that finds nothing yields
# job 0, whose complete is refused), then complete it with its token and
# record the completion if it was accepted.
my $worker_script = q{
SELECT coalesce(c.id, 0) AS job_id, coalesce(c.token, 0) AS job_token
  FROM (SELECT) AS one
  LEFT JOIN jobqueue.jq_claim('double_claim', 1, 'pgbench-' || :client_id) c ON true \gset
INSERT INTO completions (job_id, client)
SELECT :job_id, :client_id WHERE jobqueue.jq_complete(:job_id, :job_token);
};

$node->pgbench(
	"--no-vacuum --client=$clients --jobs=$clients --transactions=$per_client",
	0,
	[qr{processed: $jobs/$jobs}],
	[qr{^$}],
	"$clients pgbench clients claim and complete $jobs jobs through jq_claim",
	{ '001_jq_worker.sql' => $worker_script });

my $result = $node->safe_psql(
	'postgres', q{
	SELECT count(*) FILTER (WHERE status = 'succeeded'),
		   count(*) FILTER (WHERE status IN ('pending', 'running')),
		   count(*) FILTER (WHERE attempt_count <> 1),
		   max(attempt_count),
		   count(*) FILTER (WHERE lease_token <> 1)
	  FROM jobqueue.jobs WHERE queue_name = 'double_claim'});
my ($succeeded, $left, $not_once, $max_attempts, $reclaimed) =
  split /\|/, $result;
is($succeeded, $jobs, "all $jobs jobs succeeded");
is($left, 0, 'no job is left pending or running');
is($not_once, 0, 'every job has attempt_count = 1');
is($max_attempts, 1, 'the highest attempt_count is 1');
is($reclaimed, 0, 'every job was claimed exactly once (lease_token = 1)');

$result = $node->safe_psql(
	'postgres', q{
	SELECT count(*), count(DISTINCT job_id), count(DISTINCT client)
	  FROM completions});
my ($completions, $distinct_completed, $active_clients) = split /\|/, $result;
is($completions, $jobs, "$jobs completions were accepted");
is($distinct_completed, $jobs, 'no job was completed twice');
is($active_clients, $clients, 'every client completed jobs');
is( $node->safe_psql(
		'postgres', q{
	SELECT count(*) FROM completions c
	  LEFT JOIN jobqueue.jobs j ON j.id = c.job_id AND j.status = 'succeeded'
	 WHERE j.id IS NULL}),
	0,
	'every completion belongs to a succeeded job');

# The naive claim, for comparison, on a plain table with the same load.
$node->safe_psql(
	'postgres', qq{
	CREATE TABLE naive_jobs (
		id bigint PRIMARY KEY,
		status text NOT NULL DEFAULT 'pending',
		attempts int NOT NULL DEFAULT 0);
	CREATE INDEX naive_jobs_pending ON naive_jobs (id) WHERE status = 'pending';
	INSERT INTO naive_jobs (id) SELECT g FROM generate_series(1, $jobs) g;
	CREATE TABLE naive_executions (job_id bigint NOT NULL, client int NOT NULL);
});

my $naive_script = q{
WITH claimed AS (
	UPDATE naive_jobs SET status = 'running', attempts = attempts + 1
	 WHERE id = (SELECT id FROM naive_jobs WHERE status = 'pending'
				 ORDER BY id LIMIT 1)
	RETURNING id)
SELECT coalesce((SELECT id FROM claimed), 0) AS job_id \gset
INSERT INTO naive_executions (job_id, client) SELECT :job_id, :client_id WHERE :job_id <> 0;
UPDATE naive_jobs SET status = 'done' WHERE id = :job_id;
};

$node->pgbench(
	"--no-vacuum --client=$clients --jobs=$clients --transactions=$per_client",
	0,
	[qr{processed: $jobs/$jobs}],
	[qr{^$}],
	"the naive claim ran under the same load",
	{ '001_naive_worker.sql' => $naive_script });

$result = $node->safe_psql(
	'postgres', q{
	SELECT (SELECT count(*) FROM naive_executions),
		   (SELECT count(DISTINCT job_id) FROM naive_executions),
		   (SELECT coalesce(max(attempts), 0) FROM naive_jobs),
		   (SELECT count(*) FROM naive_jobs WHERE attempts > 1),
		   (SELECT count(*) FROM naive_jobs WHERE status = 'pending')});
my ($naive_exec, $naive_distinct, $naive_max, $naive_dup, $naive_left) =
  split /\|/, $result;
diag(   "naive claim without a row lock: $naive_exec executions of "
	  . "$naive_distinct distinct jobs out of $jobs; $naive_dup jobs ran more "
	  . "than once (at most $naive_max times); $naive_left never ran");
diag(   "jq_claim: $completions executions of $distinct_completed distinct "
	  . "jobs out of $jobs; highest attempt_count $max_attempts");

$node->stop;

done_testing();
