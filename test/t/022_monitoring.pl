# The monitoring recipe: every query of contrib/prometheus/queries.yaml
# runs as a role given only jq_grant_monitor, and returns exactly the
# columns its metrics list declares, with the expected values after some
# traffic.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

# Read the queries file: top-level keys, their "query: |" blocks and the
# metric (column) names.  A small reader for the subset of YAML used there.
my $file = 'contrib/prometheus/queries.yaml';
open(my $fh, '<', $file) or die "could not open $file: $!";
my (%queries, %columns, $name, $in_query);
while (my $line = <$fh>)
{
	next if $line =~ /^\s*#/;
	if ($line =~ /^(\w+):\s*$/)
	{
		$name = $1;
		$in_query = 0;
		$queries{$name} = '';
		$columns{$name} = [];
	}
	elsif ($line =~ /^  query: \|\s*$/)
	{
		$in_query = 1;
	}
	elsif ($in_query && $line =~ /^    (.*)$/)
	{
		$queries{$name} .= "$1\n";
	}
	elsif ($line =~ /^    - (\w+):\s*$/)
	{
		$in_query = 0;
		push @{ $columns{$name} }, $1;
	}
	else
	{
		$in_query = 0;
	}
}
close $fh;
is_deeply([ sort keys %queries ], [qw(jobqueue_events jobqueue_queue jobqueue_worker)],
	'the queries file has the queue, event and worker queries');

my $node = jq_node('monitoring', worker => 'off');

$node->safe_psql(
	'postgres', q{
	CREATE ROLE jobqueue_exporter LOGIN;
	SELECT jobqueue.jq_grant_monitor('jobqueue_exporter');
	SELECT jobqueue.jq_create_queue('mon', lease_duration => '1 hour');
	SELECT count(*) FROM jobqueue.jq_enqueue_many('mon', ARRAY['{}', '{}', '{}', '{}']::jsonb[]);
	SELECT jobqueue.jq_complete(id, token) FROM jobqueue.jq_claim('mon', 1, 'w');
	SELECT jobqueue.jq_complete(id, token + 1) FROM jobqueue.jq_claim('mon', 1, 'w');
	SELECT jobqueue.jq_fail(id, token, 'E', retryable => false) FROM jobqueue.jq_claim('mon', 1, 'w');
});

foreach my $q (sort keys %queries)
{
	my ($ret, $stdout, $stderr) = $node->psql(
		'postgres',
		"SET ROLE jobqueue_exporter;\n\\pset footer off\n\\pset tuples_only off\n"
		  . "\\pset format unaligned\n$queries{$q}",
		on_error_stop => 1);
	is($ret, 0, "$q runs as a role with jq_grant_monitor only") or diag($stderr);
	my ($header) = grep { !/^(SET|Output format|Tuples only|Default footer)/ } split /\n/, $stdout;
	is_deeply([ split /\|/, ($header // '') ], $columns{$q}, "$q returns the columns its metrics declare");
}

my $row = $node->safe_psql('postgres',
	"SET ROLE jobqueue_exporter;\n" . $queries{jobqueue_queue} =~ s/FROM jobqueue.queue_stats s/FROM jobqueue.queue_stats s WHERE s.queue_name = 'mon'/r);
like($row, qr/^postgres\|mon\|0\|1\|1\|0\|1\|0\|1\|1\|0\|/,
	'queue gauges: 1 pending (ready), 1 running, 1 succeeded, 1 dead, 0 cancelled');

my $events = $node->safe_psql('postgres',
	"SET ROLE jobqueue_exporter;\n" . $queries{jobqueue_events} =~ s/FROM jobqueue.jq_counters\(\) c/FROM jobqueue.jq_counters() c WHERE c.queue_name = 'mon'/r);
like($events, qr/^postgres\|mon\|4\|3\|1\|1\|0\|0\|1\|0\|0\|1\|0\|0\|3\|/,
	'event counters: 4 enqueued, 3 claimed, 1 completed, 1 fenced, 1 permanent failure dead-lettered, 3 claim calls');

done_testing();
