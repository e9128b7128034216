# What the server's limits do to the background worker, said plainly.
#  1. max_worker_processes leaves no slot for the launcher: the server log
#     says the launcher could not be registered and what to raise, and
#     jq_worker_status() says so in every database.
#  2. jobqueue.reap_interval has a floor (100 ms): a smaller value is
#     refused instead of turning a worker into a busy loop.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('limits', settings => { max_worker_processes => 0 });
like(slurp_file($node->logfile),
	qr/WARNING:  could not register the jobqueue launcher/,
	'the log says the launcher could not be registered');
like(slurp_file($node->logfile), qr/HINT:  Increase max_worker_processes/,
	'and what to raise');
is( $node->safe_psql('postgres',
		'SELECT configured, state FROM jobqueue.jq_worker_status()'),
	'f|launcher not registered: raise max_worker_processes',
	'jq_worker_status() says so');

my ($ret, $out, $err) = $node->psql('postgres',
	q{ALTER SYSTEM SET jobqueue.reap_interval = '10ms'});
isnt($ret, 0, 'a reap interval below 100 ms is refused');
like($err, qr/10 ms is outside the valid range for parameter "jobqueue.reap_interval" \(100 \.\. /,
	'with the valid range');

$node->stop;
done_testing();
