# The worker pool serves every database that has the extension, however
# many there are, with a bounded number of processes.
#
# 40 databases, 20 with the extension and 20 without, max_worker_processes
# at its default (8) and jobqueue.max_workers at its default (2):
#  1. in every database with the extension, an expired lease is reaped;
#  2. once the launcher knows the databases, no worker process starts in a
#     database without the extension;
#  3. CREATE EXTENSION in a new database is picked up at once;
#  4. DROP DATABASE of a database a worker is serving is not blocked;
#  5. never more than jobqueue.max_workers workers at once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = jq_node('worker_pool', extension => 0, settings => {
		'jobqueue.reap_interval' => '200ms',
		'jobqueue.launcher_interval' => '1s',
		log_min_messages => 'debug1' });

my @with = map { sprintf('with_%02d', $_) } 1 .. 20;
my @without = map { sprintf('without_%02d', $_) } 1 .. 20;

# a template with the extension and a queue, so each copy has both
$node->safe_psql('postgres', 'CREATE DATABASE tpl');
$node->safe_psql('tpl', q{
CREATE EXTENSION jobqueue;
SELECT jobqueue.jq_create_queue('q', lease_duration => '1 second',
                                backoff_base => '10 milliseconds',
                                backoff_max => '10 milliseconds');
});
$node->safe_psql('postgres', 'ALTER DATABASE tpl IS_TEMPLATE true');
$node->safe_psql('postgres', "CREATE DATABASE $_ TEMPLATE tpl") for @with;
$node->safe_psql('postgres', "CREATE DATABASE $_") for @without;

my %oid_of = map { $_ => $node->safe_psql('postgres',
		"SELECT oid FROM pg_database WHERE datname = '$_'") } (@with, @without);

# the launcher visits each new database once to learn whether it has the
# extension
sub attached_oids
{
	my ($offset) = @_;
	my $log = slurp_file($node->logfile, $offset);
	return $log =~ /jobqueue worker attached for database (\d+)/g;
}
my $deadline = time() + 60;
my %seen;
while (time() < $deadline)
{
	%seen = map { $_ => 1 } attached_oids(0);
	last if !grep { !$seen{ $oid_of{$_} } } (@with, @without);
	usleep(100_000);
}
is(scalar(grep { !$seen{ $oid_of{$_} } } (@with, @without)), 0,
	'every new database was visited once');
my $log_offset = -s $node->logfile;

# 1. one expiring lease per database with the extension
my %claimed_at;
for my $db (@with)
{
	$node->safe_psql($db, q{
SELECT jobqueue.jq_enqueue('q', '{}');
SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'vanishing');
});
	$claimed_at{$db} = time();
}
my $worst = 0;
my $all_reaped = 1;
for my $db (@with)
{
	my $ok = $node->poll_query_until($db, q{
SELECT status = 'pending' AND last_error_code = 'LEASE_EXPIRED' FROM jobqueue.jobs});
	$all_reaped &&= $ok;
	my $delay = time() - $claimed_at{$db} - 1;
	$worst = $delay if $delay > $worst;
}
ok($all_reaped, 'the expired lease was reaped in all 20 databases');
diag(sprintf('worst delay from lease expiry to reap, polled: %.2f s', $worst));

# 2. and 5.: which databases workers started in since the discovery
my $max_seen = 0;
for (1 .. 20)
{
	my $n = $node->safe_psql('postgres',
		q{SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'jobqueue worker'});
	$max_seen = $n if $n > $max_seen;
	usleep(100_000);
}
cmp_ok($max_seen, '<=', 2, "at most jobqueue.max_workers workers at once (saw $max_seen)");

my @started = attached_oids($log_offset);
my %without_oid = map { $oid_of{$_} => 1 } @without;
is(scalar(grep { $without_oid{$_} } @started), 0,
	'no worker started in a database without the extension since');
cmp_ok(scalar(@started), '>', 0, 'workers did start in databases with the extension');

# 3. CREATE EXTENSION in a new database
$node->safe_psql('postgres', 'CREATE DATABASE late');
$node->safe_psql('late', q{
CREATE EXTENSION jobqueue;
SELECT jobqueue.jq_create_queue('q', lease_duration => '1 second');
SELECT jobqueue.jq_enqueue('q', '{}');
SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'vanishing');
});
my $t0 = time();
ok( $node->poll_query_until('late', q{
SELECT status = 'pending' FROM jobqueue.jobs}),
	'the new database is served');
diag(sprintf('new database: lease of 1 s reaped after %.2f s', time() - $t0));

# 4. DROP DATABASE of a database with a worker in it: new work brings a
# worker there, which stays while no other database waits
my $served = 'with_05';
$node->safe_psql($served, q{SELECT jobqueue.jq_enqueue('q', '{}')});
$node->poll_query_until('postgres', qq{
SELECT count(*) > 0 FROM pg_stat_activity
WHERE backend_type = 'jobqueue worker' AND datname = '$served'})
  or die "no worker came to $served";
$t0 = time();
my ($ret, $out, $err) = $node->psql('postgres', "DROP DATABASE $served");
my $drop_time = time() - $t0;
is($ret, 0, "DROP DATABASE $served succeeds while a worker serves it")
  or diag($err);
diag(sprintf('DROP DATABASE of a served database took %.3f s', $drop_time));

# every other database is still served
$node->safe_psql('with_01', q{
SELECT jobqueue.jq_enqueue('q', '{}');
SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'vanishing');
});
ok( $node->poll_query_until('with_01', q{
SELECT count(*) = 0 FROM jobqueue.jobs WHERE status = 'running'}),
	'the others are still served');

$node->stop;
done_testing();
