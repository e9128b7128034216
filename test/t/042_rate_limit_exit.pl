# A rate-limited claim ended by FATAL gives its bucket back.
#  A claim on a rate-limited queue of database doomed waits (the jobs table
#  is locked by another session) while it holds tokens of its bucket; it is
#  ended with pg_terminate_backend and the database dropped.  Then 256
#  other rate-limited queues, one more than the buckets left free
#  (jobqueue.max_rate_limited_queues is 256), each claim a job: the last
#  one needs the terminated claim's bucket, which must be free again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('rate_limit_exit', worker => 'off', extension => 0);
is($node->safe_psql('postgres', 'SHOW jobqueue.max_rate_limited_queues'),
	'256', 'jobqueue.max_rate_limited_queues is 256 buckets');

$node->safe_psql('postgres', 'CREATE DATABASE doomed');
$node->safe_psql('doomed', q{
CREATE EXTENSION jobqueue;
SELECT jobqueue.jq_create_queue('pinned', rate_limit => 0.001, rate_burst => 1);
SELECT jobqueue.jq_enqueue('pinned', '{}');
});

my $locker = $node->background_psql('doomed');
$locker->query_safe('BEGIN; LOCK TABLE jobqueue.jobs IN ACCESS EXCLUSIVE MODE');
my $claimer = $node->background_psql('doomed', on_error_stop => 0);
my $pid = $claimer->query_safe('SELECT pg_backend_pid()');
$claimer->query_until(qr/start/, q{\echo start
SELECT * FROM jobqueue.jq_claim('pinned', 1, 'w');
});
wait_for($node, 'postgres', qq{
SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid},
	'the claim to wait for the jobs table');
ok($node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)") eq 't',
	'the waiting claim is terminated');
wait_for($node, 'postgres', "SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $pid)",
	'the terminated backend to exit');
eval { $claimer->quit };    # its server process is gone
$locker->quit;
$node->safe_psql('postgres', 'DROP DATABASE doomed');

# 256 queues that keep their buckets busy: burst 1, one token in 1000 s
$node->safe_psql('postgres', q{
CREATE EXTENSION jobqueue;
SELECT count(jobqueue.jq_create_queue('q' || i, rate_limit => 0.001, rate_burst => 1))
FROM generate_series(1, 256) AS i;
SELECT count(jobqueue.jq_enqueue('q' || i, '{}')) FROM generate_series(1, 256) AS i;
});
is($node->safe_psql('postgres', q{
SELECT count(*) FROM generate_series(1, 255) AS i,
  LATERAL jobqueue.jq_claim('q' || i, 1, 'w')}),
	'255', '255 other rate-limited queues claim a job each');

# the 256th takes the freed bucket, once it has been idle for a second
# (a bucket is reused only after that); before the fix it never is free
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 1 FROM jobqueue.jq_claim('q256', 1, 'w')}),
	'the 256th claims a job: the terminated claim gave its bucket back');
is($node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_rate_limits()}),
	'256', 'the 256 queues have a bucket each');
$node->stop;
done_testing();
