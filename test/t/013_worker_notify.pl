# Background worker: wake-up notifications.
#  7. A delayed job (run_at = now + 2 s) produces a jobqueue notification to
#     a LISTENing session within 2 s + reap interval, with no enqueue
#     happening; an ordinary enqueue reaches a LISTENing session through the
#     worker after commit and never before it; a rolled-back enqueue (also a
#     rolled-back subtransaction) produces none; a job ready at its commit
#     is announced once, not again by the worker's next passes.  Without
#     the worker the producer's own NOTIFY is the fallback.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = jq_node('notify', worker => 'quick');
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('delayed');
SELECT jobqueue.jq_create_queue('plain');
SELECT jobqueue.jq_create_queue('rolled');
});
wait_for_worker($node);
my $worker = $node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()');

my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN jobqueue');

# Notifications received so far: a list of [queue, sender pid, time].
sub poll_notifications
{
	my $out = $listener->query_safe('SELECT 1');
	my @got;
	while ($out =~ /Asynchronous notification "jobqueue" with payload "([^"]*)" received from server process with PID (\d+)/g)
	{
		push @got, [ $1, $2, time() ];
	}
	return @got;
}

# Listen for up to $seconds; stop at the first notification for $queue.
sub wait_for_notification
{
	my ($queue, $seconds) = @_;
	my $deadline = time() + $seconds;
	while (time() < $deadline)
	{
		foreach my $n (poll_notifications())
		{
			return $n if $n->[0] eq $queue;
		}
		usleep(20_000);
	}
	return undef;
}

# 7a. a delayed job
my $producer = $node->background_psql('postgres');
my $t0 = time();
$producer->query_safe(
	q{SELECT jobqueue.jq_enqueue('delayed', '{}', run_at => now() + interval '2 seconds')});
# a job that is not ready yet is not announced at enqueue ...
my $n = wait_for_notification('delayed', 1.5);
is($n, undef, 'the enqueue of the delayed job is not announced');
# ... but when it becomes ready, with nothing else happening
$n = wait_for_notification('delayed', 60);
ok(defined $n, 'the delayed job is announced when it becomes ready');
my $elapsed = $n->[2] - $t0;
cmp_ok($elapsed, '>=', 1.9, "not before run_at: ${elapsed}s");
cmp_ok($elapsed, '<', 2 + 0.5 + 3, "within 2 s + reap interval (+ slack): ${elapsed}s");
is($n->[1], $worker, 'sent by the background worker');

# 7b. an ordinary enqueue: after commit, never before
$producer->query_safe('BEGIN');
$producer->query_safe(q{SELECT jobqueue.jq_enqueue('plain', '{}')});
is(wait_for_notification('plain', 1.5), undef, 'nothing while the enqueueing transaction is open');
$t0 = time();
$producer->query_safe('COMMIT');
$n = wait_for_notification('plain', 30);
ok(defined $n, 'the notification arrives after commit');
is($n->[1], $worker, 'sent by the worker, not by the producer');
$elapsed = $n->[2] - $t0;
cmp_ok($elapsed, '<', 0.5, "at once, not at the next tick: ${elapsed}s");

# 7c. rolled back: none
$producer->query_safe('BEGIN');
$producer->query_safe(q{SELECT jobqueue.jq_enqueue('rolled', '{}')});
$producer->query_safe('ROLLBACK');
$producer->query_safe('BEGIN');
$producer->query_safe('SAVEPOINT s');
$producer->query_safe(q{SELECT jobqueue.jq_enqueue('rolled', '{}')});
$producer->query_safe('ROLLBACK TO SAVEPOINT s');
$producer->query_safe(q{SELECT jobqueue.jq_enqueue('plain', '{}')});
$producer->query_safe('COMMIT');
ok(defined wait_for_notification('plain', 30), 'the committed part of the transaction is announced');
is(wait_for_notification('rolled', 1.5), undef, 'a rolled-back enqueue is never announced');
is($node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'rolled'}),
	'0', '(and left no job)');
cmp_ok($node->safe_psql('postgres', 'SELECT notified FROM jobqueue.jq_worker_status()'),
	'>=', 3, 'the worker counted its notifications');

# 7d. a job ready at its commit is announced once, at the commit, not again
# by the next passes' scan for jobs that became ready
$node->safe_psql('postgres', q{SELECT jobqueue.jq_create_queue('once')});
poll_notifications();
$producer->query_safe(q{SELECT jobqueue.jq_enqueue('once', '{}')});
my $committed = $producer->query_safe(q{SELECT clock_timestamp()});
ok( $node->poll_query_until('postgres', qq{
SELECT last_tick > '$committed'::timestamptz + interval '1 second'
FROM jobqueue.jq_worker_status()}),
	'two passes of the worker went by');
my @once = grep { $_->[0] eq 'once' } poll_notifications();
is(scalar(@once), 1, 'the job ready at its commit was announced exactly once');

# without the worker, the producer notifies at its own commit
$node->safe_psql('postgres', q{
ALTER SYSTEM SET jobqueue.worker_enabled = off;
SELECT pg_reload_conf();
});
ok( $node->poll_query_until(
		'postgres', q{SELECT NOT configured AND attached IS NULL FROM jobqueue.jq_worker_status()}),
	'worker turned off');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'jobqueue worker'}),
	'and gone');
my $producer_pid = $producer->query_safe('SELECT pg_backend_pid()');
$producer->query_safe(q{SELECT jobqueue.jq_enqueue('plain', '{}')});
$n = wait_for_notification('plain', 30);
ok(defined $n, 'without the worker the enqueue still notifies');
is($n->[1], $producer_pid, 'from the producer itself');

# on again: the worker comes back to the database it left when the pool was
# turned off (it once stayed away for good) and reaps an expired lease
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('back', lease_duration => '1 second');
SELECT jobqueue.jq_enqueue('back', '{}');
SELECT count(*) FROM jobqueue.jq_claim('back', 1, 'gone');
ALTER SYSTEM SET jobqueue.worker_enabled = on;
SELECT pg_reload_conf();
});
ok( $node->poll_query_until('postgres', q{
SELECT status = 'pending' AND attempt_count = 1 FROM jobqueue.jobs WHERE queue_name = 'back'}),
	'worker turned on again: it returns and reaps the expired lease');

$producer->quit;
$listener->quit;
$node->stop;
done_testing();
