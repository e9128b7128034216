# Without shared_preload_libraries: no launcher, no worker, and everything
# in the core still works; jq_worker_status() says no worker is configured,
# enqueues notify from the producer's own transaction, jq_reap() reaps.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('not_preloaded', preload => 0);
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('q', backoff_base => '1 hour');
});

is( $node->safe_psql(
		'postgres', q{
SELECT configured, attached IS NULL, state, pid IS NULL, reaped IS NULL
FROM jobqueue.jq_worker_status()}),
	'f|t|not preloaded|t|t',
	'jq_worker_status() says no worker is configured');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'jobqueue%'}),
	'0', 'no launcher, no worker');

my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN jobqueue');
my $producer_pid = $node->safe_psql('postgres', q{
SELECT jobqueue.jq_enqueue('q', '{}');
SELECT pg_backend_pid();});
$producer_pid = (split /\n/, $producer_pid)[1];
my $out = $listener->query_safe('SELECT 1');
like($out, qr/Asynchronous notification "jobqueue" with payload "q" received from server process with PID $producer_pid/,
	'the enqueue notifies from the producer');

$node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'w', '10 milliseconds')});
wait_for($node, 'postgres',
	'SELECT lease_expires_at < clock_timestamp() FROM jobqueue.jobs',
	'the lease to expire');
is($node->safe_psql('postgres', 'SELECT jobqueue.jq_reap()'), '1',
	'jq_reap() from a scheduler reaps the expired lease');
is($node->safe_psql('postgres', 'SELECT status, last_error_code FROM jobqueue.jobs'),
	'pending|LEASE_EXPIRED', 'and the job is pending again');

# GUCs of the worker exist (so postgresql.conf may set them) but do nothing
is( $node->safe_psql(
		'postgres', q{
SELECT configured FROM jobqueue.jq_worker_status();
SHOW jobqueue.reap_interval;}),
	"f\n1s",
	'the worker settings are known once the library is loaded');

$listener->quit;
$node->stop;
done_testing();
