# The worker never makes a user's DDL fail.
#  1. A transaction truncates jobqueue.jobs, lets the worker come by a few
#     times, then drops the extension: no deadlock, the DROP succeeds (the
#     worker never waits for the table while holding the extension lock).
#  2. The worker is not seen waiting for a lock meanwhile.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('gives_way', settings => {
		'jobqueue.reap_interval' => '100ms',
		'jobqueue.purge_interval' => '100ms',
		'jobqueue.launcher_interval' => '1s',
		deadlock_timeout => '200ms' });
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('q');
SELECT jobqueue.jq_enqueue('q', '{}');
});
wait_for_worker($node);
my $worker = $node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()');

my $session = $node->background_psql('postgres', on_error_stop => 0);
$session->query_safe('BEGIN');
$session->query_safe('TRUNCATE jobqueue.jobs');

# several passes of the worker go by while the table is locked; the
# worker's activity is sampled meanwhile
my $waited = 0;
my $start = $node->safe_psql('postgres', 'SELECT clock_timestamp()');
until ($node->safe_psql('postgres',
		"SELECT clock_timestamp() > '$start'::timestamptz + interval '1 second'") eq 't')
{
	$waited++ if $node->safe_psql('postgres',
		"SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $worker") eq 't';
}
is($waited, 0, 'the worker never waited for the locked table');

my ($out, $ret) = $session->query('DROP EXTENSION jobqueue');
is($ret, 0, 'DROP EXTENSION after TRUNCATE in the same transaction succeeds')
  or diag($session->{stderr});
($out, $ret) = $session->query('COMMIT');
is($ret, 0, 'and commits');
$session->quit;

is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_extension WHERE extname = 'jobqueue'"),
	'0', 'the extension is gone');
ok( $node->poll_query_until('postgres', q{
SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'jobqueue worker'}),
	'and its worker left');

$node->stop;
done_testing();
