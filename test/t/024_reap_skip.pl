# The reaper skips a job it cannot process instead of failing every batch:
# a row that makes reaping fail (here a queue whose backoff overflows the
# timestamp range, which the CHECK constraints of 1.2 refuse, so the test
# drops one) is reported once per session with its job id, and the other
# expired jobs are reaped.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('reap_skip');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'jobqueue'");
$node->append_conf('postgresql.conf', 'jobqueue.worker_enabled = off');
$node->start;

$node->safe_psql(
	'postgres', q{
	CREATE EXTENSION jobqueue;
	SELECT jobqueue.jq_create_queue('good');
	SELECT jobqueue.jq_create_queue('bad');
	ALTER TABLE jobqueue.queues DROP CONSTRAINT queues_intervals_bounded;
	UPDATE jobqueue.queues SET backoff_base = '1000000 years', backoff_max = '1000000 years'
	WHERE queue_name = 'bad';
	SELECT jobqueue.jq_enqueue('good', '{}') FROM generate_series(1, 3);
	SELECT jobqueue.jq_enqueue('bad', '{}');
	SELECT count(*) FROM jobqueue.jq_claim('good', 3, 'w', lease => '1 millisecond');
	SELECT count(*) FROM jobqueue.jq_claim('bad', 1, 'w', lease => '1 millisecond');
	SELECT pg_sleep(0.05);
});
my $bad_id = $node->safe_psql('postgres', "SELECT id FROM jobqueue.jobs WHERE queue_name = 'bad'");

# the batch fails on the bad row; the jobs are then reaped one by one
my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"SELECT jobqueue.jq_reap()");
is($ret, 0, 'jq_reap() does not fail');
is($stdout, '3', 'it reaps the three good jobs');
like($stderr, qr/WARNING:  could not reap job $bad_id: /, 'and warns about the bad one, naming it');

is( $node->safe_psql('postgres',
		"SELECT queue_name, status, count(*) FROM jobqueue.jobs GROUP BY 1, 2 ORDER BY 1, 2"),
	"bad|running|1\ngood|pending|3", 'the bad job is left as it was');

# in one session, the bad job is reported once and then left out
($ret, $stdout, $stderr) = $node->psql('postgres',
	"SELECT jobqueue.jq_reap(); SELECT jobqueue.jq_reap();");
is($stdout, "0\n0", 'nothing else to reap');
my @warnings = ($stderr =~ /could not reap job/g);
is(scalar @warnings, 1, 'one warning per job and session');

# once the row is fixed, it is reaped
$node->safe_psql('postgres',
	"UPDATE jobqueue.queues SET backoff_base = '10 seconds', backoff_max = '1 hour' WHERE queue_name = 'bad'");
($ret, $stdout, $stderr) = $node->psql('postgres', 'SELECT jobqueue.jq_reap()');
is($stdout, '1', 'a fixed row is reaped');
is($stderr, '', 'without a warning');

# errors that are not about a row are still raised
($ret, $stdout, $stderr) = $node->psql('postgres',
	"BEGIN READ ONLY; SELECT jobqueue.jq_reap(); COMMIT;");
like($stderr, qr/read-only transaction/, 'a read-only transaction still refuses to reap');

$node->stop;
done_testing();
