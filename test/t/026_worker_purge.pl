# The worker purges finished jobs across queues in batches: 300 queues whose
# finished jobs all come due at once are purged in a few transactions (one
# batch covers every queue), not in one transaction per queue.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('purge', worker => 'quick', extension => 0,
	settings => { 'jobqueue.purge_interval' => '200ms' });
$node->safe_psql('postgres', 'CREATE DATABASE pdb');
$node->safe_psql('pdb', q{
CREATE EXTENSION jobqueue;
SELECT count(jobqueue.jq_create_queue('p' || g, retention => '1 hour'))
FROM generate_series(1, 300) g;
SELECT count(jobqueue.jq_enqueue('p' || g, '{}')) FROM generate_series(1, 300) g;
SELECT count(*) FILTER (WHERE jobqueue.jq_complete(c.id, c.token))
FROM generate_series(1, 300) g, jobqueue.jq_claim('p' || g, 1, 'w') c;
});
wait_for_worker($node, 'pdb');
wait_for($node, 'pdb', q{
SELECT runs > 0 FROM jobqueue.jq_worker_tasks() WHERE task = 'purge'},
	'a first purge run');

# commits in pdb, counted from another database (the worker flushes its
# statistics after every pass)
my $commits_sql = q{SELECT xact_commit FROM pg_stat_database WHERE datname = 'pdb'};
my $before = $node->safe_psql('postgres', $commits_sql);

# every job comes due at the same moment
$node->safe_psql('pdb', q{
SELECT count(jobqueue.jq_alter_queue(q.queue_name, retention => '1 millisecond'))
FROM jobqueue.queues q});
wait_for($node, 'pdb',
	q{SELECT count(*) = 0 FROM jobqueue.jobs}, 'every finished job purged');
wait_for($node, 'pdb', q{
SELECT items = 300 FROM jobqueue.jq_worker_tasks() WHERE task = 'purge'},
	'the purge task counted 300 jobs');
my $commits = $node->safe_psql('postgres', $commits_sql) - $before;
# a pass is a few transactions (reap, announce, purge); one transaction per
# queue would be 300 and more
cmp_ok($commits, '<', 100, "300 queues purged in few transactions ($commits in pdb meanwhile)");
is( $node->safe_psql('pdb',
		q{SELECT purged FROM jobqueue.jq_counters() WHERE queue_name = 'p17'}),
	'1', 'each queue counts its own purged job');

$node->stop;
done_testing();
