# The group limits across crashes.
#
# Two queues: 'lim' (group_concurrency = 2) and 'ord' (group_ordered), 40
# groups of 25 jobs each.  Eight pgbench clients claim batches of 4 with a
# 2-second lease, commit the claim, then complete the batch in two halves,
# in separate transactions; now and then one reaps the expired leases.  Each claim transaction and each batch end
# also samples the invariants, in one snapshot, into a table:
#   - jobqueue.groups.running equals the number of running jobs of the
#     group;
#   - no group of 'lim' has more than 2 running jobs;
#   - no group of 'ord' has more than 1, and a running job of 'ord' is its
#     group's oldest unfinished job.
# Three rounds kill -9 the backend of a client that holds an unfinished
# batch (the postmaster then restarts every backend: crash recovery), a
# fourth stops the server with pg_ctl stop -m immediate and starts it
# again.  After each round the invariants are checked once more; at the
# end the jobs left running by the dead clients are reaped, the rest is
# run, and every job must have succeeded with every counter back at 0,
# each group of 'ord' finished in id order.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

my $groups = 40;
my $per_group = 40;
my $jobs = $groups * $per_group;

# nobody but the clients and the test touches the jobs: the test reaps.
# The test clusters do not restart after a crash unless told to.
my $node = jq_node('group_crash', worker => 'off',
	settings => { restart_after_crash => 'on', log_statement => 'none' });

$node->safe_psql('postgres', qq{
SELECT jobqueue.jq_create_queue('lim', group_concurrency => 2, max_attempts => 50,
	backoff_base => '10 milliseconds', backoff_max => '10 milliseconds');
SELECT jobqueue.jq_create_queue('ord', group_ordered => true, max_attempts => 50,
	backoff_base => '10 milliseconds', backoff_max => '10 milliseconds');
-- jobs interleaved over the groups, each group's in sequence order
SELECT count(*) FROM unnest(ARRAY['lim', 'ord']) q, LATERAL jobqueue.jq_enqueue_many(q,
	ARRAY(SELECT jsonb_build_object('g', g, 'seq', s)
		  FROM generate_series(1, $per_group) s, generate_series(1, $groups) g ORDER BY s, g),
	group_keys => ARRAY(SELECT 'g' || g
		  FROM generate_series(1, $per_group) s, generate_series(1, $groups) g ORDER BY s, g));

-- the batches the clients have claimed and not finished
CREATE TABLE held (client int, queue_name text, id bigint, token bigint);
CREATE TABLE samples (at timestamptz, n int);
CREATE TABLE violations (at timestamptz, queue_name text, group_key text,
	counted int, actual bigint, what text);

-- every broken invariant, read in one snapshot
CREATE FUNCTION broken() RETURNS TABLE(queue_name text, group_key text,
	counted int, actual bigint, what text)
LANGUAGE sql AS \$\$
	SELECT gr.queue_name, gr.group_key, gr.running, a.n,
		CASE WHEN gr.running <> a.n THEN 'counter'
			 WHEN a.n > CASE gr.queue_name WHEN 'lim' THEN 2 ELSE 1 END THEN 'limit'
			 ELSE 'order' END
	FROM jobqueue.groups gr
	CROSS JOIN LATERAL (SELECT count(*) AS n FROM jobqueue.jobs j
		WHERE j.queue_name = gr.queue_name AND j.group_key = gr.group_key
		  AND j.status = 'running') a
	WHERE gr.running <> a.n
	   OR a.n > CASE gr.queue_name WHEN 'lim' THEN 2 ELSE 1 END
	   OR (gr.queue_name = 'ord' AND EXISTS (
			SELECT FROM jobqueue.jobs r, jobqueue.jobs e
			WHERE r.queue_name = 'ord' AND r.group_key = gr.group_key
			  AND r.status = 'running'
			  AND e.queue_name = 'ord' AND e.group_key = gr.group_key
			  AND e.id < r.id AND e.status IN ('pending', 'running', 'dead')))
\$\$;
CREATE FUNCTION sample() RETURNS void LANGUAGE sql AS \$\$
	WITH v AS (INSERT INTO violations SELECT clock_timestamp(), b.* FROM broken() b RETURNING 1)
	INSERT INTO samples SELECT clock_timestamp(), (SELECT count(*) FROM v)
\$\$;
});

is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM jobqueue.jobs WHERE status = 'pending'}),
	2 * $jobs, "$jobs jobs in 40 groups in each queue");

# One client iteration on queue Q: claim a batch (recorded in held in the
# same transaction), complete half, then the rest.
my %scripts;
for my $q ('lim', 'ord')
{
	$scripts{$q} = <<"EOS";
SELECT set_config('application_name', 'client' || :client_id, false);
BEGIN;
INSERT INTO held SELECT :client_id, '$q', c.id, c.token
  FROM jobqueue.jq_claim('$q', 4, 'client' || :client_id, '2 seconds') c;
SELECT sample();
COMMIT;
SELECT pg_sleep(0.002);
WITH d AS (DELETE FROM held WHERE (client, id) IN (SELECT client, id FROM held
                WHERE client = :client_id AND queue_name = '$q' ORDER BY id LIMIT 2)
           RETURNING id, token)
SELECT count(*) FILTER (WHERE jobqueue.jq_complete(d.id, d.token)) FROM d;
SELECT pg_sleep(0.002);
WITH d AS (DELETE FROM held WHERE client = :client_id AND queue_name = '$q'
           RETURNING id, token)
SELECT count(*) FILTER (WHERE jobqueue.jq_complete(d.id, d.token)) FROM d;
SELECT sample();
EOS
}
# and now and then a client reaps the leases of the dead ones
$scripts{reap} = "SELECT jobqueue.jq_reap();\n";
my %weight = (lim => 10, ord => 10, reap => 1);
my @script_files;
for my $q (sort keys %scripts)
{
	my $f = $node->basedir . "/030_$q.sql";
	open my $fh, '>', $f or die "cannot write $f: $!";
	print $fh $scripts{$q};
	close $fh;
	push @script_files, '-f', "$f\@$weight{$q}";
}

# pgbench in the background; it ends when the server takes its clients down
sub start_clients
{
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[   $node->installed_command('pgbench'), '--no-vacuum',
			'--client=8', '--jobs=8', '--time=120', @script_files,
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
	return $h;
}

sub finished_jobs
{
	return $node->safe_psql('postgres',
		q{SELECT count(*) FROM jobqueue.jobs WHERE status = 'succeeded'});
}

sub check_round
{
	my ($what) = @_;
	is( $node->safe_psql('postgres',
			'SELECT count(*) FROM broken()'),
		'0', "$what: counters exact, limits and order hold");
	# the batches of the dead clients: their jobs stay running until reaped
	$node->safe_psql('postgres', 'TRUNCATE held');
}

# The backend of a client in the middle of a batch (claimed, not all
# completed) once $more jobs have succeeded since $before; polls.
sub client_mid_batch
{
	my ($before, $more) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my $pid = $node->safe_psql('postgres', qq{
			SELECT a.pid FROM pg_stat_activity a JOIN held h
				ON a.application_name = 'client' || h.client
			WHERE (SELECT count(*) FROM jobqueue.jobs WHERE status = 'succeeded')
				>= $before + $more
			LIMIT 1});
		return $pid if $pid ne '';
		usleep(20_000);
	}
	die "no client was found in the middle of a batch";
}

for my $round (1 .. 3)
{
	my $before = finished_jobs();
	my $log_offset = -s $node->logfile;
	my $h = start_clients();
	my $pid = client_mid_batch($before, 300);
	ok(kill('KILL', $pid), "round $round: kill -9 of a client backend mid-batch");
	$h->finish;
	wait_for($node, 'postgres', 'SELECT true', 'the server after the crash');
	ok( $node->log_contains('all server processes terminated; reinitializing', $log_offset),
		"round $round: the postmaster went through crash recovery");
	check_round("round $round, after crash recovery");
}

{
	my $before = finished_jobs();
	my $h = start_clients();
	client_mid_batch($before, 300);
	$node->stop('immediate');
	$h->finish;
	$node->start;
	check_round('round 4, after pg_ctl stop -m immediate');
}

note('jobs left running by the dead clients: '
	  . $node->safe_psql('postgres',
		q{SELECT count(*) FROM jobqueue.jobs WHERE status = 'running'}));
is($node->safe_psql('postgres', 'SELECT count(*) FROM violations'),
	'0', 'no sample taken by the clients saw a broken invariant');
my $nsamples = $node->safe_psql('postgres', 'SELECT count(*) FROM samples');
ok($nsamples > 300, "the clients took $nsamples samples");

# reap the jobs of the dead clients once their leases expire
wait_for($node, 'postgres', q{
	SELECT jobqueue.jq_reap() >= 0
	   AND NOT EXISTS (SELECT FROM jobqueue.jobs WHERE status = 'running')},
	'the expired leases to be reaped');
is($node->safe_psql('postgres', 'SELECT count(*) FROM broken()'),
	'0', 'after reaping: counters exact');

# run the rest, sampling as the clients did
my $rounds = 0;
while ($rounds++ < 500)
{
	my $left = $node->safe_psql('postgres', q{
		SELECT count(*) FROM jobqueue.jobs WHERE status <> 'succeeded'});
	last if $left == 0;
	$node->safe_psql('postgres', q{
		SELECT jobqueue.jq_complete(c.id, c.token)
		FROM unnest(ARRAY['lim', 'ord']) q,
			 LATERAL jobqueue.jq_claim(q, 100, 'drain') c;
		SELECT sample();
		SELECT jobqueue.jq_reap();});
}

is( $node->safe_psql('postgres',
		q{SELECT queue_name, count(*) FROM jobqueue.jobs WHERE status = 'succeeded'
		  GROUP BY 1 ORDER BY 1}),
	"lim|$jobs\nord|$jobs", 'every job of both queues eventually succeeded');
is($node->safe_psql('postgres',
		'SELECT count(*) FROM jobqueue.groups WHERE running <> 0'),
	'0', 'every group counter is back at 0');
is($node->safe_psql('postgres', 'SELECT count(*) FROM violations'),
	'0', 'no sample ever saw a broken invariant');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT finished_at < lag(finished_at) OVER (PARTITION BY group_key ORDER BY id) AS back
			FROM jobqueue.jobs WHERE queue_name = 'ord') s WHERE back}),
	'0', "every group of 'ord' finished in id order");
ok( $node->safe_psql('postgres',
		q{SELECT count(*) FROM jobqueue.jobs WHERE attempt_count > 1}) > 0,
	'some jobs were reaped and run again');

# the check itself sees a counter that is off
is( $node->safe_psql('postgres', q{
		UPDATE jobqueue.groups SET running = running + 1
		WHERE queue_name = 'lim' AND group_key = 'g1';
		SELECT string_agg(queue_name || '/' || group_key || ': ' || what, ',') FROM broken();
		UPDATE jobqueue.groups SET running = running - 1
		WHERE queue_name = 'lim' AND group_key = 'g1';}),
	'lim/g1: counter', 'the invariant check reports a counter that is off');

$node->stop;
done_testing();
