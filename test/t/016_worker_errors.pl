# Background worker: an error in a pass is logged, shown by
# jq_worker_status(), and retried at the next pass -- not in a tight loop,
# and without the worker exiting.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('errors', worker => 'quick');
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('q', backoff_base => '1 hour');
SELECT jobqueue.jq_enqueue('q', '{}');
-- every reap of this queue now fails
ALTER TABLE jobqueue.jobs ADD CONSTRAINT no_reap
    CHECK (last_error_code IS DISTINCT FROM 'LEASE_EXPIRED') NOT VALID;
});
wait_for_worker($node);
my $pid = $node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()');

my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'w', '10 milliseconds')});
ok( $node->poll_query_until(
		'postgres', q{SELECT last_error IS NOT NULL FROM jobqueue.jq_worker_status()}),
	'the failed pass is reported by jq_worker_status()');
like($node->safe_psql('postgres', 'SELECT last_error FROM jobqueue.jq_worker_status()'),
	qr/no_reap/, 'with the error message');

# watch it fail for a while
let_server_time_pass($node, 3);
my $log = slurp_file($node->logfile, $log_offset);
my $errors = () = $log =~ /ERROR:  new row for relation "jobs" violates check constraint "no_reap"/g;
cmp_ok($errors, '>=', 2, "the error is logged at each pass ($errors times)");
# 3 s at one pass per 0.5 s, plus the time until the poll: a tight loop
# would log thousands
cmp_ok($errors, '<=', 30, 'but not in a tight loop');
is($node->safe_psql('postgres', q{SELECT status FROM jobqueue.jobs}),
	'running', 'the failed reap changed nothing');
is($node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()'),
	$pid, 'the worker stayed up');

$node->safe_psql('postgres', 'ALTER TABLE jobqueue.jobs DROP CONSTRAINT no_reap');
ok( $node->poll_query_until(
		'postgres', q{SELECT status = 'pending' FROM jobqueue.jobs}),
	'once the cause is gone, the next pass reaps');
# (polled: during a pass it does have them, for a few milliseconds)
ok( $node->poll_query_until(
		'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
WHERE pid = (SELECT pid FROM jobqueue.jq_worker_status())
  AND state = 'idle' AND backend_xid IS NULL AND backend_xmin IS NULL}),
	'between passes it holds no transaction and no snapshot');

$node->stop;
done_testing();
