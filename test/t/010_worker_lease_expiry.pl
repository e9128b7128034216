# Background worker: expired leases come back by themselves.
#  1. A client claims a job and its connection is terminated: with a 2 s
#     lease and a 0.5 s reap interval the job is pending again (attempt 1,
#     LEASE_EXPIRED in its history) within about lease + 2 x reap interval,
#     and another client completes it.
#  2. A job with max_attempts 2 whose worker dies twice ends dead, with both
#     expiries in its history, and is not deleted.
#  3. The reaps are counted by error code and attempt (jq_error_counts) and
#     timed (jq_latency: run, total).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use Time::HiRes qw(time);

my $node = jq_node('lease_expiry', worker => 'quick');
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('q', lease_duration => '2 seconds',
                                backoff_base => '10 milliseconds',
                                backoff_max => '10 milliseconds');
});
wait_for_worker($node);

# a client that claims and then loses its connection
sub claim_and_die
{
	my ($job) = @_;
	my $client = $node->background_psql('postgres');
	my $got = $client->query_safe(
		"SELECT id || ':' || attempt FROM jobqueue.jq_claim('q', 1, 'doomed')");
	my $pid = $client->query_safe('SELECT pg_backend_pid()');
	my $claimed_at = time();
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
	eval { $client->quit };
	return ($got, $claimed_at);
}

# 1. lease expiry after a terminated client
my $id = $node->safe_psql('postgres',
	q{SELECT jobqueue.jq_enqueue('q', '{"n": 1}')});
my ($got, $claimed_at) = claim_and_die($id);
is($got, "$id:1", 'the doomed client claimed the job');

ok( $node->poll_query_until(
		'postgres',
		"SELECT status = 'pending' FROM jobqueue.jobs WHERE id = $id"),
	'the expired lease was reaped by the worker');
my $elapsed = time() - $claimed_at;
# lease 2 s + 2 x 0.5 s = 3 s; the machine is shared, so allow slack, but
# far less than anything but the worker could explain (no one calls jq_reap)
cmp_ok($elapsed, '<', 3 + 5, "reaped within lease + 2 x reap interval (+ slack): ${elapsed}s");
cmp_ok($elapsed, '>=', 1.9, 'not before the lease expired');

is( $node->safe_psql(
		'postgres', qq{
SELECT attempt_count, last_error_code, jsonb_array_length(errors),
       errors->0->>'code', errors->0->>'owner'
FROM jobqueue.jobs WHERE id = $id}),
	'1|LEASE_EXPIRED|1|LEASE_EXPIRED|doomed',
	'attempt 1, LEASE_EXPIRED in the history');

wait_for($node, 'postgres',
	"SELECT available_at <= now() FROM jobqueue.jobs WHERE id = $id",
	'the job to be ready again');
is( $node->safe_psql(
		'postgres', q{
SELECT jobqueue.jq_complete(c.id, c.token)
FROM jobqueue.jq_claim('q', 1, 'rescuer') c}),
	't',
	'another client claims and completes it');
is($node->safe_psql('postgres', "SELECT status, attempt_count FROM jobqueue.jobs WHERE id = $id"),
	'succeeded|2', 'the job succeeded on its second attempt');

# 2. max_attempts 2, the worker dies twice: dead, both expiries recorded
$id = $node->safe_psql('postgres',
	q{SELECT jobqueue.jq_enqueue('q', '{"n": 2}', max_attempts => 2)});
($got) = claim_and_die($id);
is($got, "$id:1", 'first attempt claimed');
wait_for($node, 'postgres',
	"SELECT status = 'pending' AND available_at <= now() FROM jobqueue.jobs WHERE id = $id",
	'the first expiry to be reaped');
($got) = claim_and_die($id);
is($got, "$id:2", 'second attempt claimed');
ok( $node->poll_query_until(
		'postgres', "SELECT status = 'dead' FROM jobqueue.jobs WHERE id = $id"),
	'after the second expiry the job is dead');
is( $node->safe_psql(
		'postgres', qq{
SELECT attempt_count, jsonb_array_length(errors),
       (SELECT string_agg((e->>'attempt') || (e->>'code'), ',')
        FROM jsonb_array_elements(errors) e),
       finished_at IS NOT NULL
FROM jobqueue.jobs WHERE id = $id}),
	'2|2|1LEASE_EXPIRED,2LEASE_EXPIRED|t',
	'both expiries are in the history');

# the worker's purge leaves dead jobs alone
$node->safe_psql('postgres', q{SELECT jobqueue.jq_alter_queue('q', retention => '1 millisecond')});
wait_for($node, 'postgres',
	"SELECT count(*) = 0 FROM jobqueue.jobs WHERE status = 'succeeded'",
	'the succeeded job to be purged');
is($node->safe_psql('postgres', "SELECT status FROM jobqueue.jobs WHERE id = $id"),
	'dead', 'the dead job is not deleted, the succeeded one was purged');
cmp_ok($node->safe_psql('postgres', 'SELECT reaped FROM jobqueue.jq_worker_status()'),
	'>=', 3, 'the worker counted its reaps');
is($node->safe_psql('postgres', 'SELECT purged FROM jobqueue.jq_worker_status()'),
	'1', 'and its purge');

# what the worker's reaps recorded: the failed attempts by code and number
# (job 1 retried after attempt 1; job 2 retried after 1, dead after 2), the
# leases expired apart from jobs given back, and the run of each attempt
# (at least its 2 s lease for a reaped one), the total of each finished job
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(error_code || ':' || attempt || ':' || retries || ':' || dead_lettered, ','
                  ORDER BY attempt)
FROM jobqueue.jq_error_counts('q')}),
	'LEASE_EXPIRED:1:2:0,LEASE_EXPIRED:2:0:1',
	'the reaps are counted by error code and attempt');
is($node->safe_psql('postgres',
		"SELECT leases_expired, released FROM jobqueue.jq_counters() WHERE queue_name = 'q'"),
	'3|0', 'three leases expired, none given back');
is( $node->safe_psql(
		'postgres', q{
SELECT string_agg(kind || ':' || count, ',' ORDER BY kind),
       bool_and(max >= interval '2 seconds') FILTER (WHERE kind = 'run')
FROM jobqueue.jq_latency('q')}),
	'run:4,total:2,wait:4|t',
	'the reaped attempts are timed from their start, the finished jobs from their enqueue');

$node->stop;
done_testing();
