# Finished-job notifications (notify_finished): a session that LISTENs on
# jobqueue_finished gets one notification "<id> <status>" for each job of a
# notify_finished queue that succeeds, dies or is cancelled (also when it is
# cancelled because a dependency failed), after commit; none for a queue
# without the setting, none for a rolled-back completion.  With the
# background worker it sends them (the committing session does not); without
# it, the committing session does.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use Time::HiRes qw(usleep);

foreach my $mode ('worker', 'no worker')
{
	my $name = $mode eq 'worker' ? 'finished_worker' : 'finished_plain';
	my $node = jq_node($name, worker => ($mode eq 'worker' ? 'quick' : 'off'));
	$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('watched', max_attempts => 1, notify_finished => true);
SELECT jobqueue.jq_create_queue('unwatched', max_attempts => 1);
});
	wait_for_worker($node) if $mode eq 'worker';

	my $listener = $node->background_psql('postgres');
	$listener->query_safe('LISTEN jobqueue_finished');

	my %got;					# payload => sender pid
	my $collect = sub {
		my $out = $listener->query_safe('SELECT 1');
		while ($out =~ /Asynchronous notification "jobqueue_finished" with payload "([^"]*)" received from server process with PID (\d+)/g)
		{
			$got{$1} = $2;
		}
	};

	my $producer = $node->background_psql('postgres');
	my $producer_pid = $producer->query_safe('SELECT pg_backend_pid()');
	my ($ok, $dead, $cancelled, $dependent, $other) = split /\n/, $producer->query_safe(q{
SELECT jobqueue.jq_enqueue('watched', '{"n": 1}');
SELECT jobqueue.jq_enqueue('watched', '{"n": 2}');
SELECT jobqueue.jq_enqueue('watched', '{"n": 3}', run_at => now() + interval '1 hour');
SELECT jobqueue.jq_enqueue('watched', '{"n": 4}', depends_on => ARRAY[currval('jobqueue.jobs_id_seq') - 1]);
SELECT jobqueue.jq_enqueue('unwatched', '{"n": 5}');
});
	# one claims two jobs: $ok succeeds, $dead fails for good (and with it
	# $dependent is cancelled); a rolled-back completion first
	$producer->query_safe(q{
CREATE TEMP TABLE c AS SELECT id, token FROM jobqueue.jq_claim('watched', 2, 'w');
BEGIN;
SELECT jobqueue.jq_complete(id, token) FROM c WHERE id = (SELECT min(id) FROM c);
ROLLBACK;
SELECT jobqueue.jq_complete(id, token, '{"r": 1}') FROM c WHERE id = (SELECT min(id) FROM c);
SELECT jobqueue.jq_fail(id, token, 'BROKEN', retryable => false) FROM c WHERE id = (SELECT max(id) FROM c);
});
	$producer->query_safe("SELECT jobqueue.jq_cancel($cancelled)");
	$producer->query_safe(q{
SELECT jobqueue.jq_complete(c.id, c.token) FROM jobqueue.jq_claim('unwatched', 1, 'w') c;
});

	my @want = ("$ok succeeded", "$dead dead", "$cancelled cancelled",
		"$dependent cancelled");
	foreach my $i (1 .. 600)
	{
		$collect->();
		last if scalar(grep { exists $got{$_} } @want) == @want;
		usleep(100_000);
	}
	foreach my $w (@want)
	{
		ok(exists $got{$w}, "$mode: a notification \"$w\"");
	}
	# nothing else arrives: a last job after everything, then its notification
	$producer->query_safe(q{SELECT jobqueue.jq_enqueue('watched', '{"n": 6}')});
	my ($last) = $producer->query_safe(q{
SELECT c.id FROM jobqueue.jq_claim('watched', 1, 'w') c WHERE jobqueue.jq_complete(c.id, c.token)});
	foreach my $i (1 .. 600)
	{
		$collect->();
		last if exists $got{"$last succeeded"};
		usleep(100_000);
	}
	ok(exists $got{"$last succeeded"}, "$mode: the last job's notification");
	is(scalar(keys %got), scalar(@want) + 1,
		"$mode: one notification per finished job of the watched queue, none for the other queue or the rolled-back completion")
	  or diag(join(', ', sort keys %got));
	my @senders = sort { $a <=> $b } keys %{ { map { $_ => 1 } values %got } };
	if ($mode eq 'worker')
	{
		my $worker = $node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()');
		is_deeply(\@senders, [$worker], 'worker: the background worker sent them');
	}
	else
	{
		is_deeply(\@senders, [$producer_pid], 'no worker: the committing session sent them');
	}

	# The setting is cached per session (queuecache.c): a change made by
	# another session applies to the producer's next completion, and the
	# producer's own change at once; a rolled-back change never applies.
	my $wait_for = sub {
		my ($payload) = @_;
		foreach my $i (1 .. 600)
		{
			$collect->();
			return 1 if exists $got{$payload};
			usleep(100_000);
		}
		return 0;
	};
	my $complete_one = sub {
		my ($queue) = @_;
		$producer->query_safe(qq{SELECT jobqueue.jq_enqueue('$queue', '{}')});
		return $producer->query_safe(qq{
SELECT c.id FROM jobqueue.jq_claim('$queue', 1, 'w') c WHERE jobqueue.jq_complete(c.id, c.token)});
	};
	my $before = $complete_one->('unwatched');	# cached: no queue of interest
	$node->safe_psql('postgres',
		q{SELECT jobqueue.jq_alter_queue('unwatched', notify_finished => true)});
	my $after = $complete_one->('unwatched');
	ok($wait_for->("$after succeeded"),
		"$mode: another session's notify_finished => true applies to the next completion");
	$node->safe_psql('postgres',
		q{SELECT jobqueue.jq_alter_queue('unwatched', notify_finished => false)});
	my $off = $complete_one->('unwatched');
	$producer->query_safe(q{
BEGIN;
SELECT jobqueue.jq_alter_queue('unwatched', notify_finished => true);
ROLLBACK;});
	my $rolled_back = $complete_one->('unwatched');
	$producer->query_safe(q{SELECT jobqueue.jq_enqueue('unwatched', '{}')});
	my ($own) = $producer->query_safe(q{
BEGIN;
SELECT jobqueue.jq_alter_queue('unwatched', notify_finished => true);
SELECT c.id FROM jobqueue.jq_claim('unwatched', 1, 'w') c WHERE jobqueue.jq_complete(c.id, c.token);
COMMIT;}) =~ /(\d+)\s*$/;
	ok($wait_for->("$own succeeded"), "$mode: the session's own change applies at once");
	ok(!exists $got{"$before succeeded"} && !exists $got{"$off succeeded"}
		  && !exists $got{"$rolled_back succeeded"},
		"$mode: no notification before the change, after it was undone, or after a rolled-back change")
	  or diag(join(', ', sort keys %got));

	# A queue that keeps no history (retention zero): the job is deleted by
	# its completion and still announced as succeeded.  The retention is
	# cached like notify_finished: another session's change applies to the
	# producer's next completion.
	$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('nohist', retention => '0', notify_finished => true);
SELECT jobqueue.jq_create_queue('switch', notify_finished => true);
});
	my $kept_rows = sub {
		my ($id) = @_;
		return $node->safe_psql('postgres', "SELECT count(*) FROM jobqueue.jobs WHERE id = $id");
	};
	my $gone = $complete_one->('nohist');
	ok($wait_for->("$gone succeeded"), "$mode: a job deleted on success is announced as succeeded");
	is($kept_rows->($gone), '0', "$mode: the job of a queue with retention zero is deleted");
	my $first = $complete_one->('switch');
	is($kept_rows->($first), '1', "$mode: retention 7 days keeps the job");
	$node->safe_psql('postgres', q{SELECT jobqueue.jq_alter_queue('switch', retention => '0')});
	my $second = $complete_one->('switch');
	is($kept_rows->($second), '0',
		"$mode: another session's retention => 0 applies to the next completion");
	$node->safe_psql('postgres', q{SELECT jobqueue.jq_alter_queue('switch', retention => '1 day')});
	my $third = $complete_one->('switch');
	is($kept_rows->($third), '1',
		"$mode: another session's retention => 1 day applies to the next completion");
	ok($wait_for->("$first succeeded") && $wait_for->("$second succeeded")
		  && $wait_for->("$third succeeded"),
		"$mode: each of them announced");

	$listener->quit;
	$producer->quit;
	$node->stop;
}

done_testing();
