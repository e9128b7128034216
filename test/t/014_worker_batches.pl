# Background worker: a large reap in bounded batches.
#  8. 100,000 expired leases are reaped without a single transaction holding
#     them all (the batches are visible in the worker's counts while it
#     works, and in the jobs: each batch records its own time), and the
#     server stays responsive to claims meanwhile.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use Time::HiRes qw(time);

my $node = jq_node('batches', worker => 'quick',
	settings => { 'jobqueue.reap_batch' => 1000 });
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('big', backoff_base => '1 hour');
SELECT jobqueue.jq_create_queue('live');
SELECT count(*) FROM jobqueue.jq_enqueue_many('big',
    (SELECT array_agg(jsonb_build_object('n', g)) FROM generate_series(1, 100000) g));
SELECT count(*) FROM jobqueue.jq_enqueue_many('live',
    (SELECT array_agg(jsonb_build_object('n', g)) FROM generate_series(1, 100000) g));
VACUUM ANALYZE jobqueue.jobs;
});
wait_for_worker($node);

my $before = $node->safe_psql('postgres', 'SELECT reaped FROM jobqueue.jq_worker_status()');
is( $node->safe_psql(
		'postgres', q{
SET jobqueue.max_claim_batch = 100000;
SELECT count(*) FROM jobqueue.jq_claim('big', 100000, 'gone', '3 seconds');}),
	'100000',
	'100,000 jobs claimed by a worker that will never come back');

# While the leases expire and are reaped: watch the counts, and keep
# claiming and completing jobs of another queue.
my $watcher = $node->background_psql('postgres');
my $client = $node->background_psql('postgres');
my %seen;
my ($claims, $claims_during, $max_latency) = (0, 0, 0);
my $deadline = time() + 300;
while (time() < $deadline)
{
	my $reaped = $watcher->query_safe(
		'SELECT reaped FROM jobqueue.jq_worker_status()') - $before;
	$seen{$reaped} = 1;
	last if $reaped >= 100000;

	my $t = time();
	my $done = $client->query_safe(q{
SELECT count(*) FILTER (WHERE jobqueue.jq_complete(c.id, c.token))
FROM jobqueue.jq_claim('live', 1, 'client') c});
	my $latency = time() - $t;
	$max_latency = $latency if $latency > $max_latency;
	$claims += $done;
	$claims_during += $done if $reaped > 0;
}
my @partial = grep { $_ > 0 && $_ < 100000 } keys %seen;
cmp_ok(scalar(@partial), '>=', 2,
	'the count grew in steps while the worker reaped: ' . join(',', sort { $a <=> $b } @partial[0 .. ($#partial < 9 ? $#partial : 9)]));
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'big' AND status = 'running'}),
	'0',
	'every expired lease was reaped');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM jobqueue.jobs
WHERE queue_name = 'big' AND status = 'pending' AND last_error_code = 'LEASE_EXPIRED'}),
	'100000',
	'all 100,000 jobs are pending again');

# each batch stamps its jobs with the time of its own transaction
my ($batches, $largest) = split /\|/, $node->safe_psql(
	'postgres', q{
SELECT count(*), max(n) FROM (
    SELECT errors->-1->>'at' AS at, count(*) AS n FROM jobqueue.jobs
    WHERE queue_name = 'big' GROUP BY 1) b});
cmp_ok($batches, '>=', 100, "reaped in $batches separate batches");
cmp_ok($largest, '<=', 1000, "none larger than jobqueue.reap_batch ($largest)");

cmp_ok($claims_during, '>', 0,
	"claims went on while the worker reaped ($claims_during completed during the reap)");
note(sprintf('slowest claim + complete during the reap: %.3f s', $max_latency));

$watcher->quit;
$client->quit;
$node->stop;
done_testing();
