# Background worker: databases come and go, settings change.
#  5. CREATE EXTENSION in a second database after start-up: its expired
#     leases are reaped within the launcher interval; DROP EXTENSION there:
#     no errors in the server log afterwards; DROP DATABASE succeeds (also
#     with the worker attached), and so does ALTER DATABASE ... RENAME.
#  6. A reload with a changed jobqueue.reap_interval takes effect without a
#     restart.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use Time::HiRes qw(time);

my $node = jq_node('databases', worker => 'quick', extension => 0,
	settings => { 'jobqueue.launcher_interval' => '3s' });

# 5. a database created after start-up, the extension created later
$node->safe_psql('postgres', 'CREATE DATABASE db2');
$node->safe_psql('db2', q{
CREATE EXTENSION jobqueue;
SELECT jobqueue.jq_create_queue('q', backoff_base => '1 hour');
SELECT jobqueue.jq_enqueue('q', '{}');
});
my $t0 = time();
$node->safe_psql('db2', q{SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'w', '1 second')});
ok( $node->poll_query_until(
		'db2', q{SELECT count(*) = 1 FROM jobqueue.jobs WHERE status = 'pending' AND attempt_count = 1}),
	'the new database\'s expired lease was reaped');
my $elapsed = time() - $t0;
# lease 1 s + launcher interval 3 s, generous slack for a shared machine
cmp_ok($elapsed, '<', 1 + 3 + 5, "within the launcher interval (+ lease, slack): ${elapsed}s");
my $worker = $node->safe_psql('db2', 'SELECT pid FROM jobqueue.jq_worker_status()');
is( $node->safe_psql(
		'postgres', qq{SELECT datname, backend_type FROM pg_stat_activity WHERE pid = $worker}),
	'db2|jobqueue worker',
	'db2 has its own worker');

# rename with the worker attached: it steps aside and comes back
$node->safe_psql('postgres', 'ALTER DATABASE db2 RENAME TO db2r');
ok(worker_attached($node, 'db2r'), 'the renamed database has a worker again');

# DROP EXTENSION: the worker leaves quietly
my $log_offset = -s $node->logfile;
$node->safe_psql('db2r', 'DROP EXTENSION jobqueue');
ok( $node->poll_query_until(
		'postgres', q{
SELECT count(*) = 0 FROM pg_stat_activity
WHERE datname = 'db2r' AND backend_type = 'jobqueue worker'}),
	'the worker left the database without the extension');
# let the launcher try the database again at least once
let_server_time_pass($node, 4);

# DROP DATABASE of a database with an attached worker
$node->safe_psql('postgres', 'CREATE DATABASE db3');
$node->safe_psql('db3', 'CREATE EXTENSION jobqueue');
ok(worker_attached($node, 'db3'), 'db3 has a worker');
my ($ret, $stdout, $stderr) = $node->psql('postgres', 'DROP DATABASE db3');
is($ret, 0, 'DROP DATABASE succeeds while the worker is attached');
is($stderr, '', 'without a complaint');

($ret, $stdout, $stderr) = $node->psql('postgres', 'DROP DATABASE db2r');
is($ret, 0, 'DROP DATABASE of the database that dropped the extension succeeds');

# CREATE DATABASE ... TEMPLATE a database with a worker
$node->safe_psql('postgres', 'CREATE EXTENSION jobqueue');
ok(worker_attached($node, 'postgres'), 'postgres has a worker');
# from another database: the copying session itself would not count
($ret, $stdout, $stderr) = $node->psql('template1',
	'CREATE DATABASE copy TEMPLATE postgres');
is($ret, 0, 'CREATE DATABASE ... TEMPLATE of a database with a worker succeeds');
ok(worker_attached($node, 'postgres'), 'the template\'s worker came back');
ok(worker_attached($node, 'copy'), 'and the copy got one');

my $log = slurp_file($node->logfile, $log_offset);
my @errors = grep { /(ERROR|FATAL|PANIC|WARNING):/ } split /\n/, $log;
is(scalar(@errors), 0, 'no errors in the server log after DROP EXTENSION')
  or diag(join("\n", @errors));

# 6. reload of jobqueue.reap_interval
$node->safe_psql('postgres', q{
ALTER SYSTEM SET jobqueue.reap_interval = '1h';
SELECT pg_reload_conf();
SELECT jobqueue.jq_create_queue('r', backoff_base => '1 hour');
SELECT jobqueue.jq_enqueue('r', '{}');
});
# the worker has read the new value once it sleeps for an hour
ok( $node->poll_query_until(
		'postgres', q{
SELECT wait_event = 'Extension' AND now() - state_change > interval '1 second'
FROM pg_stat_activity WHERE pid = (SELECT pid FROM jobqueue.jq_worker_status())}),
	'the worker sleeps');
$node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_claim('r', 1, 'w', '1 second')});
let_server_time_pass($node, 3);
is($node->safe_psql('postgres', q{SELECT status FROM jobqueue.jobs WHERE queue_name = 'r'}),
	'running', 'with a 1 h reap interval the expired lease is not reaped yet');

$node->safe_psql('postgres', q{
ALTER SYSTEM SET jobqueue.reap_interval = '200ms';
SELECT pg_reload_conf();
});
$t0 = time();
ok( $node->poll_query_until(
		'postgres', q{SELECT status = 'pending' FROM jobqueue.jobs WHERE queue_name = 'r'}),
	'after the reload it is reaped');
$elapsed = time() - $t0;
cmp_ok($elapsed, '<', 5, "promptly, without a restart: ${elapsed}s");
is($node->safe_psql('postgres', 'SHOW jobqueue.reap_interval'), '200ms',
	'the new value is in effect');

$node->stop;
done_testing();
