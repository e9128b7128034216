# Background worker across crashes and terminations.
#  3. pg_ctl stop -m immediate while 10,000 jobs are enqueued and 100 are
#     claimed: after restart every job id is still there, in a valid state,
#     the worker comes back, and the claimed jobs are reaped once their
#     leases expire.
#  4. The per-database worker is terminated (pg_terminate_backend): the
#     launcher brings it back and it keeps working.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('crash_restart', worker => 'quick');
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('q', lease_duration => '4 seconds',
                                backoff_base => '1 hour');
SELECT count(*) FROM jobqueue.jq_enqueue_many('q',
    (SELECT array_agg(jsonb_build_object('n', g)) FROM generate_series(1, 10000) g));
CREATE TABLE expected_ids AS SELECT id FROM jobqueue.jobs;
CREATE TABLE claimed_ids AS SELECT id FROM jobqueue.jq_claim('q', 100, 'crasher');
});
wait_for_worker($node);
is($node->safe_psql('postgres', q{SELECT count(*) FROM claimed_ids}),
	'100', '100 of 10,000 jobs claimed');

# 3. crash
$node->stop('immediate');
$node->start;

is( $node->safe_psql(
		'postgres', q{
SELECT count(*), count(*) FILTER (WHERE e.id IS NULL), count(*) FILTER (WHERE j.id IS NULL)
FROM jobqueue.jobs j FULL JOIN expected_ids e USING (id)}),
	'10000|0|0',
	'after the crash every job id is still there, and no other');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM jobqueue.jobs j
WHERE NOT ((j.status = 'pending' AND j.lease_expires_at IS NULL AND j.attempt_count = 0)
        OR (j.status = 'running' AND j.lease_expires_at IS NOT NULL
            AND j.attempt_count = 1 AND j.lease_owner = 'crasher'
            AND j.id IN (SELECT id FROM claimed_ids))
        OR (j.status = 'pending' AND j.last_error_code = 'LEASE_EXPIRED'
            AND j.id IN (SELECT id FROM claimed_ids)))}),
	'0',
	'every job is in a valid state');

ok(worker_attached($node), 'the worker is back after the restart');
ok( $node->poll_query_until(
		'postgres', q{SELECT count(*) = 0 FROM jobqueue.jobs WHERE status = 'running'}),
	'the claimed jobs were reaped once their leases expired');
is( $node->safe_psql(
		'postgres', q{
SELECT count(*) FROM jobqueue.jobs
WHERE last_error_code = 'LEASE_EXPIRED' AND status = 'pending' AND attempt_count = 1
  AND id IN (SELECT id FROM claimed_ids)}),
	'100',
	'exactly the 100 claimed jobs were reaped, back to pending');
is($node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jobs WHERE status = 'pending'}),
	'10000', 'all 10,000 jobs are pending again');

# 4. terminate the worker
my $pid = $node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()');
is( $node->safe_psql(
		'postgres', qq{
SELECT backend_type, application_name FROM pg_stat_activity WHERE pid = $pid}),
	'jobqueue worker|jobqueue worker',
	'the worker shows in pg_stat_activity');
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok( $node->poll_query_until(
		'postgres', qq{
SELECT attached AND pid <> $pid FROM jobqueue.jq_worker_status()}),
	'a new worker replaced the terminated one');

$node->safe_psql('postgres', q{
CREATE TABLE claimed_again AS SELECT id FROM jobqueue.jq_claim('q', 10, 'crasher', '1 second');
});
ok( $node->poll_query_until(
		'postgres', q{
SELECT count(*) = 10 FROM jobqueue.jobs
WHERE id IN (SELECT id FROM claimed_again) AND status = 'pending' AND attempt_count = 1}),
	'and it keeps reaping');

$node->stop;
done_testing();
