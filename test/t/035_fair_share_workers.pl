# Fair share charged by run time, with real workers.  Two tenants of a
# fair_share queue: "slow" with 200-ms jobs and "fast" with 20-ms jobs,
# each with more work than four workers can do in the run.  Four pgbench
# clients claim one job at a time, sleep for the job's time outside any
# transaction, and complete it.  Worker time is measured from the jobs
# (finished_at - started_at of the succeeded ones):
#  1. weights 1:1: each tenant gets 50 +/- 10 % of the worker time, and
#     not of the jobs (fast runs far more of them);
#  2. weights 3:1 (slow 3): 75 / 25 +/- 10 %.
# The shares are ratios of times measured on the same machine in the same
# run, so a slow machine slows both tenants alike.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $seconds = 60;
my $workers = 4;
my $node = jq_node('fair_share_workers', worker => 'off');

# worker time and job count of each tenant, in percent of the queue's
sub shares
{
	my ($queue) = @_;
	my %share;
	for my $row (split /\n/, $node->safe_psql('postgres', qq{
		SELECT j.group_key,
			   round(100 * sum(extract(epoch FROM j.finished_at - j.started_at))
					 / sum(sum(extract(epoch FROM j.finished_at - j.started_at))) OVER (), 1),
			   round(100.0 * count(*) / sum(count(*)) OVER (), 1)
		FROM jobqueue.jobs j WHERE j.queue_name = '$queue' AND j.status = 'succeeded'
		GROUP BY j.group_key}))
	{
		my ($tenant, $time, $jobs) = split /\|/, $row;
		$share{$tenant} = { time => $time, jobs => $jobs };
	}
	return \%share;
}

sub run_workers
{
	my ($queue) = @_;
	$node->safe_psql('postgres', qq{
SELECT count(*) FROM jobqueue.jq_enqueue_many('$queue',
	array_fill('{"ms": 200}'::jsonb, ARRAY[$seconds * $workers * 6]),
	group_keys => array_fill('slow'::text, ARRAY[$seconds * $workers * 6]));
SELECT count(*) FROM jobqueue.jq_enqueue_many('$queue',
	array_fill('{"ms": 20}'::jsonb, ARRAY[$seconds * $workers * 60]),
	group_keys => array_fill('fast'::text, ARRAY[$seconds * $workers * 60]));
});
	# no job claimed (a moment between two): a short pause, then again
	my $script = qq{
SELECT coalesce(max(c.id), 0) AS id, coalesce(max(c.token), 0) AS token,
	   coalesce(max((c.payload->>'ms')::int), 5) AS ms
  FROM jobqueue.jq_claim('$queue', 1, 'worker' || :client_id) c \\gset
\\sleep :ms ms
SELECT CASE WHEN :id > 0 THEN jobqueue.jq_complete(:id, :token) END;
};
	$node->pgbench(
		"--no-vacuum --client=$workers --jobs=$workers --time=$seconds",
		0, [qr{processed: \d+}], [qr{^$}],
		"$workers workers on $queue for $seconds s",
		{ "035_$queue.sql" => $script });
	ok( $node->safe_psql('postgres', qq{
			SELECT bool_and(n > 0) FROM (SELECT count(*) AS n FROM jobqueue.jobs
				WHERE queue_name = '$queue' AND status = 'pending' GROUP BY group_key) p}) eq 't',
		"$queue: both tenants still had work at the end");
}

# 1. weights 1:1
$node->safe_psql('postgres',
	q{SELECT jobqueue.jq_create_queue('fs_even', fairness => 'fair_share')});
run_workers('fs_even');
my $even = shares('fs_even');
for my $tenant ('slow', 'fast')
{
	my $t = $even->{$tenant}{time} // 0;
	ok($t >= 40 && $t <= 60, "weights 1:1: $tenant got $t % of the worker time (50 +/- 10)");
}
ok( ($even->{fast}{jobs} // 0) > 75,
	"and not of the jobs: fast ran $even->{fast}{jobs} % of them");

# 2. weights 3:1
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('fs_weighted', fairness => 'fair_share');
SELECT jobqueue.jq_set_group_limit('fs_weighted', 'slow', weight => 3);
});
run_workers('fs_weighted');
my $weighted = shares('fs_weighted');
my ($slow, $fast) = map { $weighted->{$_}{time} // 0 } ('slow', 'fast');
ok($slow >= 65 && $slow <= 85, "weights 3:1: slow got $slow % of the worker time (75 +/- 10)");
ok($fast >= 15 && $fast <= 35, "and fast $fast % (25 +/- 10)");

$node->stop;
done_testing();
