# Queue rate limits across sessions.
#  1. 8 sessions claim from a queue with rate_limit = 20, rate_burst = 5 for
#     10 s: between its first and its last start, t seconds apart, at most
#     5 + 20 * t jobs start and not much fewer than 20 * t; a queue without
#     a limit, claimed from in the same 10 s, is not held to it.
#  2. Without shared_preload_libraries a claim on a rate-limited queue
#     fails, naming the setting; a queue without a limit is served.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use IPC::Run;

my $node = jq_node('rate_limit', worker => 'off');
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('limited', rate_limit => 20, rate_burst => 5);
SELECT jobqueue.jq_create_queue('free');
SELECT count(*) FROM jobqueue.jq_enqueue_many('limited', array_fill('{}'::jsonb, ARRAY[2000]));
SELECT count(*) FROM jobqueue.jq_enqueue_many('free', array_fill('{}'::jsonb, ARRAY[20000]));
});

# every session claims until the same end, each claim committed on its own;
# an empty claim is followed by a short pause (the recommended pattern)
my $end = $node->safe_psql('postgres', q{SELECT clock_timestamp() + interval '12 seconds'});
my $start = $node->safe_psql('postgres', q{SELECT clock_timestamp() + interval '2 seconds'});
sub claimer
{
	my ($queue, $n, $name) = @_;
	my $sql = qq{
DO \$\$
BEGIN
	WHILE clock_timestamp() < '$end' LOOP
		IF NOT EXISTS (SELECT FROM jobqueue.jq_claim('$queue', $n, '$name')) THEN
			PERFORM pg_sleep(0.01);
		END IF;
		COMMIT;
	END LOOP;
END
\$\$;};
	return IPC::Run::start(
		[
			'psql', '-X', '-q', '-d', $node->connstr('postgres'),
			'-c', "SELECT pg_sleep_until('$start')", '-c', $sql
		],
		'>', \my $out, '2>', \my $err);
}
my @h;
push @h, claimer('limited', 3, "l$_") for 1 .. 8;
push @h, claimer('free', 10, "f$_") for 1 .. 2;
$_->finish for @h;
$_->result == 0 or die 'a claiming session failed' for @h;

# measured between the first and the last start (the sessions may begin
# late on a busy machine): at most burst + rate x t, and not far below
# rate x t (the sessions claim all the time); one claim's 3 jobs of slack,
# since the bucket and started_at read the clock apart
my ($limited, $free, $span) = split /\|/, $node->safe_psql('postgres', q{
SELECT count(*) FILTER (WHERE queue_name = 'limited'), count(*) FILTER (WHERE queue_name = 'free'),
       extract(epoch FROM max(started_at) FILTER (WHERE queue_name = 'limited')
                        - min(started_at) FILTER (WHERE queue_name = 'limited'))
FROM jobqueue.jobs WHERE status = 'running'});
note "limited: $limited jobs started in $span s, free: $free";
ok($limited <= 5 + 20 * $span + 3,
	"rate_limit 20, rate_burst 5, 8 sessions: $limited jobs started in $span s, at most 5 + 20 x t");
ok($span >= 5 && $limited >= 0.75 * 20 * $span,
	"the sessions were held to the rate, not far below it ($limited jobs in $span s)");
ok($free > 2 * (5 + 20 * $span), "the queue without a limit was not held to it ($free jobs)");
is($node->safe_psql('postgres', q{
SELECT claims_limited > 0 AND jobs_claimed = } . $limited . q{ FROM jobqueue.jq_rate_limits()
WHERE queue_name = 'limited'}),
	't', 'jq_rate_limits() counts the claims the limit cut short and the jobs claimed');
is($node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_rate_limits() WHERE queue_name = 'free'}),
	'0', 'a queue without a limit has no bucket');
$node->stop;

# 2. not preloaded
my $plain = jq_node('rate_limit_plain', preload => 0);
$plain->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('limited', rate_limit => 5);
SELECT jobqueue.jq_create_queue('free');
SELECT jobqueue.jq_enqueue('limited', '{}'), jobqueue.jq_enqueue('free', '{}');
});
my ($ret, $stdout, $stderr) = $plain->psql('postgres',
	q{SELECT count(*) FROM jobqueue.jq_claim('limited', 1, 'w')},
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($stderr, qr/55000.*shared_preload_libraries/s,
	'without preloading, a claim on a rate-limited queue fails naming shared_preload_libraries');
is($plain->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_claim('free', 1, 'w')}),
	'1', 'without preloading, a queue without a limit is served');
$plain->stop;

done_testing();
