# Debounce in use, with separate producer transactions:
#   - a key called 1,000 times in a row runs once, with the last payload;
#   - a steady stream of calls whose quiet period never comes (debounce
#     1 hour) still runs, at the latest debounce_max_wait after the first
#     call of each job, and runs again after each claim.
# The test waits for conditions only; no time is asserted but the ones the
# database recorded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use IPC::Run;

my $node = jq_node('debounce', worker => 'off', settings => { log_statement => 'none' });

$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('deb');
CREATE SEQUENCE calls;
-- claim one job of the key and complete it: true when there was one
CREATE FUNCTION take(key text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	c record;
BEGIN
	FOR c IN SELECT * FROM jobqueue.jq_claim('deb', 1, 'consumer') LOOP
		IF (SELECT debounce_key FROM jobqueue.jobs WHERE id = c.id) IS DISTINCT FROM key THEN
			RAISE EXCEPTION 'claimed a job of another key';
		END IF;
		PERFORM jobqueue.jq_complete(c.id, c.token);
		RETURN true;
	END LOOP;
	RETURN false;
END $$;
});

sub pgbench_file
{
	my ($name, $sql) = @_;
	my $f = $node->basedir . "/034_$name.sql";
	open my $fh, '>', $f or die "cannot write $f: $!";
	print $fh $sql;
	close $fh;
	return $f;
}

# 1,000 calls, one transaction each, one after the other; nobody claims
# meanwhile, so the job is replaced whether or not it has become due
my $burst = pgbench_file('burst', q{
SELECT jobqueue.jq_enqueue('deb', jsonb_build_object('n', nextval('calls')),
	debounce_key => 'doc', debounce => '10 milliseconds');
});
$node->command_ok(
	[   'pgbench', '--no-vacuum', '--client=1', '--transactions=1000',
		'-f', $burst, '-h', $node->host, '-p', $node->port, 'postgres'
	],
	'1,000 debounced calls of one key');
ok($node->poll_query_until('postgres', q{SELECT take('doc')}), 'the debounced job runs');
is( $node->safe_psql('postgres', q{
		SELECT count(*) || ' ' || min(payload->>'n') || ' ' || min(status::text)
		FROM jobqueue.jobs WHERE queue_name = 'deb' AND debounce_key = 'doc'}),
	'1 1000 succeeded', 'one job for the 1,000 calls, with the last payload');
is( $node->safe_psql('postgres', q{
		SELECT enqueued || ' ' || debounced FROM jobqueue.jq_counters() WHERE queue_name = 'deb'}),
	'1 999', 'counted as 1 enqueued and 999 debounced');

# a stream that never pauses for its debounce of 1 hour: without
# debounce_max_wait nothing would ever run
my $stream = pgbench_file('stream', q{
SELECT jobqueue.jq_enqueue('deb', jsonb_build_object('n', nextval('calls')),
	debounce_key => 'feed', debounce => '1 hour', debounce_max_wait => '200 milliseconds');
});
my $debounced_before = $node->safe_psql('postgres',
	q{SELECT debounced FROM jobqueue.jq_counters() WHERE queue_name = 'deb'});
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[   $node->installed_command('pgbench'), '--no-vacuum', '--client=1',
		'--time=300', '-f', $stream, '-h', $node->host, '-p', $node->port, 'postgres'
	],
	'>', \$out, '2>', \$err);
for my $run (1 .. 3)
{
	ok($node->poll_query_until('postgres', q{SELECT take('feed')}),
		"the stream's job runs (run $run)");
}
$h->kill_kill;
$h->finish;
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM jobqueue.jobs
		WHERE queue_name = 'deb' AND debounce_key = 'feed' AND status = 'succeeded'
		  AND debounce_until IS NULL
		  AND available_at <= created_at + interval '1 second'
		  AND started_at >= available_at}),
	'3', 'each run of the stream became due by its first call + debounce_max_wait');
# (the claim sets debounce_until NULL: the bound is checked against
# created_at, the start of the first call's transaction, which comes a
# moment before the clock reading that the bound is taken from)
ok( $node->safe_psql('postgres', qq{
		SELECT debounced > $debounced_before + 3 FROM jobqueue.jq_counters()
		WHERE queue_name = 'deb'}) eq 't',
	'the calls of the stream replaced the pending job meanwhile');
ok( $node->safe_psql('postgres', q{
		SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'deb' AND debounce_key = 'feed'
		  AND status = 'pending' AND lease_token = 0}) <= 1,
	'at most one pending job of the key at the end');

done_testing();
