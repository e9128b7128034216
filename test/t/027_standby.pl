# A streaming standby: nothing of jobqueue runs there, and
# jq_worker_status() says why ("in recovery", not "waiting for the
# launcher"); reading works.  After promotion the launcher starts by itself
# and a worker serves the database.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $primary = jq_node('standby_primary', worker => 'quick', streaming => 1);
$primary->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('q');
SELECT jobqueue.jq_enqueue('q', '{"n": 1}');
});
wait_for_worker($primary);

$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->safe_psql('postgres', q{SELECT jobqueue.jq_enqueue('q', '{"n": 2}')});
$primary->wait_for_catchup($standby);

is( $standby->safe_psql('postgres',
		'SELECT configured, attached, state, pid IS NULL FROM jobqueue.jq_worker_status()'),
	't|f|in recovery|t', 'on the standby, jq_worker_status() says "in recovery"');
is( $standby->safe_psql('postgres',
		q{SELECT count(*) FROM jobqueue.jq_jobs('q') WHERE status = 'pending'}),
	'2', 'the standby lists the jobs streamed to it');
is( $standby->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type LIKE 'jobqueue%'}),
	'0', 'no jobqueue process runs on the standby');
my ($ret, $out, $err) = $standby->psql('postgres',
	q{SELECT * FROM jobqueue.jq_claim('q', 1, 'w')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/ERROR:  25006/, 'a claim on the standby fails with 25006 (read-only transaction)');

$standby->promote;
ok(worker_attached($standby), 'after promotion a worker serves the database');
isnt($standby->safe_psql('postgres', 'SELECT state FROM jobqueue.jq_worker_status()'),
	'in recovery', 'and jq_worker_status() no longer says "in recovery"');
is($standby->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_claim('q', 5, 'w')}),
	'2', 'and the promoted server claims the jobs');

$standby->stop;
$primary->stop;
done_testing();
