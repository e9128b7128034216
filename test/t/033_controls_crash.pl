# The controls across crashes: per-group limits with an override, debounce
# uniqueness and admission limits.
#
# One queue, 'ctl': group_concurrency 2, group g1 overridden to 3,
# max_pending 60 and group_max_pending 15, five groups, a backlog of 55
# jobs.  Six pgbench clients, in one transaction each iteration: enqueue
# into a random group (refused at a limit: counted, not an error), a
# debounced enqueue of one of 8 keys, a claim of 1; then complete what
# they claimed in another.
# Two rounds kill -9 the backend of a client in the middle of its
# transaction (the postmaster then restarts every backend: crash
# recovery), a third stops the server with pg_ctl stop -m immediate and
# starts it again.  After each round, in one snapshot:
#   - jobqueue.groups.running equals the running jobs of each group, and
#     no group runs more than its limit (3 for g1, 2 for the others);
#   - no debounce key has more than one pending, never claimed job;
#   - no admission bound is below the unfinished jobs it bounds, and no
#     limit is passed (pending, waiting and scheduled jobs per queue and
#     per group).
# At the end the queue is filled to its limit: exactly max_pending jobs
# are pending when the first enqueue is refused.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

my $node = jq_node('controls_crash', worker => 'off',
	settings => { restart_after_crash => 'on', log_statement => 'none' });

$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('ctl', group_concurrency => 2, max_pending => 60,
	group_max_pending => 15, max_attempts => 50,
	backoff_base => '10 milliseconds', backoff_max => '10 milliseconds');
SELECT jobqueue.jq_set_group_limit('ctl', 'g1', 3);

-- an enqueue refused at a limit is an outcome of the test, not an error
-- (counted by a sequence, which no rollback takes back)
CREATE SEQUENCE refused;
CREATE FUNCTION try_enqueue(payload jsonb, grp text, dkey text) RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
	RETURN jobqueue.jq_enqueue('ctl', payload, group_key => grp, debounce_key => dkey,
		debounce => CASE WHEN dkey IS NOT NULL THEN interval '5 milliseconds' END);
EXCEPTION WHEN configuration_limit_exceeded THEN
	PERFORM nextval('refused');
	RETURN NULL;
END $$;

CREATE TABLE held (client int, id bigint, token bigint);
-- a backlog near the limits: 11 jobs in each of the five groups
SELECT count(*) FROM jobqueue.jq_enqueue_many('ctl', ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 55)),
	group_keys => ARRAY(SELECT 'g' || (1 + i % 5) FROM generate_series(1, 55) i));

-- every broken invariant, read in one snapshot
CREATE FUNCTION broken() RETURNS TABLE(what text, key text, counted bigint, actual bigint)
LANGUAGE sql AS $$
	SELECT 'running counter', gr.group_key, gr.running::bigint,
		   (SELECT count(*) FROM jobqueue.jobs j WHERE j.queue_name = 'ctl'
			  AND j.group_key = gr.group_key AND j.status = 'running')
	FROM jobqueue.groups gr WHERE gr.queue_name = 'ctl'
	  AND gr.running <> (SELECT count(*) FROM jobqueue.jobs j WHERE j.queue_name = 'ctl'
						 AND j.group_key = gr.group_key AND j.status = 'running')
	UNION ALL
	SELECT 'group without a row', j.group_key, 0, count(*)
	FROM jobqueue.jobs j WHERE j.queue_name = 'ctl' AND j.status = 'running'
	  AND NOT EXISTS (SELECT FROM jobqueue.groups gr
					  WHERE gr.queue_name = 'ctl' AND gr.group_key = j.group_key)
	GROUP BY j.group_key
	UNION ALL
	SELECT 'group limit', j.group_key, CASE j.group_key WHEN 'g1' THEN 3 ELSE 2 END, count(*)
	FROM jobqueue.jobs j WHERE j.queue_name = 'ctl' AND j.status = 'running'
	GROUP BY j.group_key
	HAVING count(*) > CASE j.group_key WHEN 'g1' THEN 3 ELSE 2 END
	UNION ALL
	SELECT 'debounce', j.debounce_key, 1, count(*)
	FROM jobqueue.jobs j WHERE j.queue_name = 'ctl' AND j.debounce_key IS NOT NULL
	  AND j.status = 'pending' AND j.lease_token = 0
	GROUP BY j.debounce_key HAVING count(*) > 1
	UNION ALL
	SELECT 'admission bound', a.group_key, a.bound, u.n
	FROM jobqueue.admission a CROSS JOIN LATERAL (
		SELECT count(*) AS n FROM jobqueue.jobs j WHERE j.queue_name = 'ctl'
		  AND (a.group_key IS NULL OR j.group_key = a.group_key)
		  AND j.status IN ('waiting', 'pending', 'running')) u
	WHERE a.queue_name = 'ctl' AND a.bound < u.n
	UNION ALL
	SELECT 'max_pending', NULL, 60, count(*)
	FROM jobqueue.jobs j WHERE j.queue_name = 'ctl' AND j.status IN ('waiting', 'pending')
	HAVING count(*) > 60
	UNION ALL
	SELECT 'group_max_pending', j.group_key, 15, count(*)
	FROM jobqueue.jobs j WHERE j.queue_name = 'ctl' AND j.status IN ('waiting', 'pending')
	GROUP BY j.group_key HAVING count(*) > 15
$$;
});

my $script = <<'EOS';
SELECT set_config('application_name', 'client' || :client_id, false);
\set g random(1, 5)
\set k random(1, 8)
BEGIN;
SELECT try_enqueue('{}', 'g' || :g, NULL);
SELECT try_enqueue(jsonb_build_object('k', :k), 'g' || :g, 'k' || :k);
INSERT INTO held SELECT :client_id, c.id, c.token
  FROM jobqueue.jq_claim('ctl', 1, 'client' || :client_id, '2 seconds') c;
SELECT pg_sleep(0.002);
COMMIT;
WITH d AS (DELETE FROM held WHERE client = :client_id RETURNING id, token)
SELECT count(*) FILTER (WHERE jobqueue.jq_complete(d.id, d.token)) FROM d;
EOS
my $script_file = $node->basedir . '/033_client.sql';
open my $fh, '>', $script_file or die "cannot write $script_file: $!";
print $fh $script;
print $fh "SELECT jobqueue.jq_reap() WHERE :client_id = 0;\n";
close $fh;

# pgbench in the background; it ends when the server takes its clients down
sub start_clients
{
	my ($out, $err) = ('', '');
	return IPC::Run::start(
		[   $node->installed_command('pgbench'), '--no-vacuum',
			'--client=6', '--jobs=6', '--time=120', '-f', $script_file,
			'-h', $node->host, '-p', $node->port, 'postgres'
		],
		'>', \$out, '2>', \$err);
}

sub enqueued
{
	return $node->safe_psql('postgres',
		q{SELECT coalesce(sum(enqueued + debounced), 0) FROM jobqueue.jq_counters()
		  WHERE queue_name = 'ctl'});
}

# The backend of a client inside its transaction once $more enqueues have
# been counted since $before; polls.
sub client_mid_transaction
{
	my ($before, $more) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		my $pid = $node->safe_psql('postgres', qq{
			SELECT a.pid FROM pg_stat_activity a
			WHERE a.application_name LIKE 'client%' AND a.xact_start IS NOT NULL
			  AND (SELECT coalesce(sum(enqueued + debounced), 0) FROM jobqueue.jq_counters()
				   WHERE queue_name = 'ctl') >= $before + $more
			LIMIT 1});
		return $pid if $pid ne '';
		usleep(20_000);
	}
	die "no client was found inside its transaction";
}

sub check_round
{
	my ($what) = @_;
	is( $node->safe_psql('postgres',
			q{SELECT coalesce(string_agg(concat_ws(' ', what, key, counted, actual), '; '), '')
			  FROM broken()}),
		'', "$what: group limits and counters, debounce keys and admission bounds exact");
	$node->safe_psql('postgres', 'TRUNCATE held');
}

for my $round (1 .. 2)
{
	my $before = enqueued();
	my $log_offset = -s $node->logfile;
	my $h = start_clients();
	my $pid = client_mid_transaction($before, 200);
	ok(kill('KILL', $pid), "round $round: kill -9 of a client backend mid-transaction");
	$h->finish;
	wait_for($node, 'postgres', 'SELECT true', 'the server after the crash');
	ok( $node->log_contains('all server processes terminated; reinitializing', $log_offset),
		"round $round: the postmaster went through crash recovery");
	check_round("round $round, after crash recovery");
}

{
	my $before = enqueued();
	my $h = start_clients();
	client_mid_transaction($before, 200);
	$node->stop('immediate');
	$h->finish;
	$node->start;
	check_round('round 3, after pg_ctl stop -m immediate');
}

# the clients ran into the limits, so the rounds tested them
ok( $node->safe_psql('postgres', 'SELECT last_value > 1 FROM refused') eq 't',
	'enqueues were refused at the limits during the rounds');

# the limit is exact: the queue fills to max_pending and no further
# (the jobs left running by the dead clients come back first)
$node->safe_psql('postgres', q{
UPDATE jobqueue.jobs SET lease_expires_at = now() WHERE queue_name = 'ctl' AND status = 'running';
SELECT jobqueue.jq_reap();
SELECT jobqueue.jq_alter_queue('ctl', group_max_pending => 0);
});
is( $node->safe_psql('postgres', q{
		DO $$
		BEGIN
			WHILE try_enqueue('{}', 'g9', NULL) IS NOT NULL LOOP
			END LOOP;
		END $$;
		SELECT count(*) FROM jobqueue.jobs
		WHERE queue_name = 'ctl' AND status IN ('waiting', 'pending')}),
	'60', 'after the crashes the queue takes jobs up to max_pending exactly');

done_testing();
