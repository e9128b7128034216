# The monitoring recipe: every query of contrib/prometheus/queries.yaml
# runs as a role given only jq_grant_monitor, and returns exactly the
# columns its metrics list declares, with the expected values after some
# traffic; postgres_exporter (Debian's prometheus-postgres-exporter) serves
# them as the metrics the alert rules of contrib/prometheus/alerts.yaml
# use, and promtool accepts the rules.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use HTTP::Tiny;
use Time::HiRes qw(usleep);

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
is_deeply([ sort keys %queries ],
	[qw(jobqueue_events jobqueue_queue jobqueue_rate_limit jobqueue_worker jobqueue_worker_task)],
	'the queries file has the queue, event, worker, worker task and rate limit queries');

my $node = jq_node('monitoring', worker => 'off');

$node->safe_psql(
	'postgres', q{
	CREATE ROLE jobqueue_exporter LOGIN;
	SELECT jobqueue.jq_grant_monitor('jobqueue_exporter');
	SELECT jobqueue.jq_create_queue('mon', lease_duration => '1 hour');
	SELECT jobqueue.jq_create_queue('mon_rl', rate_limit => 5, rate_burst => 2);
	SELECT count(*) FROM jobqueue.jq_enqueue_many('mon_rl', ARRAY['{}', '{}', '{}']::jsonb[]);
	SELECT count(*) FROM jobqueue.jq_claim('mon_rl', 3, 'w');
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

my $rl = $node->safe_psql('postgres',
	"SET ROLE jobqueue_exporter;\n" . $queries{jobqueue_rate_limit});
like($rl, qr/^postgres\|mon_rl\|5\|2\|[0-9.e-]+\|1\|2$/m,
	'rate limit bucket: 5/s, burst 2, one claim cut short, 2 jobs claimed');

# The rules file is valid for Prometheus.
my $promtool = `sh -c 'command -v promtool'`;
chomp $promtool;
ok($promtool, 'promtool is installed (Debian package prometheus)')
  or diag('scripts/test.sh installs it; apt-get install prometheus');
my $rules = 'contrib/prometheus/alerts.yaml';
my $check = `promtool check rules $rules 2>&1`;
is($?, 0, 'promtool check rules accepts alerts.yaml') or diag($check);
like($check, qr/SUCCESS: [1-9][0-9]* rules found/, 'alerts.yaml has rules');
# ... and they fire when they should, and only then (their unit tests)
my $utest = `cd contrib/prometheus && promtool test rules alerts_test.yaml 2>&1`;
is($?, 0, 'promtool test rules: the alerts fire as alerts_test.yaml expects') or diag($utest);

# The exporter serves the queries as metrics, and every metric the rules
# use is among them.
my $exporter = '/usr/bin/prometheus-postgres-exporter';
ok(-x $exporter, 'postgres_exporter is installed (Debian package prometheus-postgres-exporter)');
my $eport = PostgreSQL::Test::Cluster::get_free_port();
my $elog = $node->basedir . '/exporter.log';
my $pid = fork();
die "fork: $!" unless defined $pid;
if ($pid == 0)
{
	open(STDOUT, '>', $elog);
	open(STDERR, '>&', \*STDOUT);
	$ENV{DATA_SOURCE_NAME} = 'host=' . $node->host . ' port=' . $node->port
	  . ' user=jobqueue_exporter dbname=postgres sslmode=disable';
	exec($exporter, "--web.listen-address=127.0.0.1:$eport",
		'--extend.query-path=contrib/prometheus/queries.yaml',
		'--disable-default-metrics', '--disable-settings-metrics')
	  or die "exec: $!";
}
my $http = HTTP::Tiny->new(timeout => 10);
my $metrics = '';
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (time() < $deadline)
{
	my $r = $http->get("http://127.0.0.1:$eport/metrics");
	if ($r->{success} && $r->{content} =~ /^jobqueue_worker_configured\{/m)
	{
		$metrics = $r->{content};
		last;
	}
	usleep(100_000);
}
kill 'TERM', $pid;
waitpid($pid, 0);
ok($metrics ne '', 'postgres_exporter serves the jobqueue metrics')
  or diag(slurp_file($elog));
like($metrics, qr/^jobqueue_queue_ready\{[^}]*queue_name="mon"[^}]*\} 1$/m,
	'the exporter reports queue mon with 1 ready job');
like($metrics, qr/^jobqueue_queue_dead\{[^}]*queue_name="mon"[^}]*\} 1$/m,
	'... and 1 dead job');
like($metrics, qr/^jobqueue_rate_limit_claims_limited\{[^}]*queue_name="mon_rl"[^}]*\} 1$/m,
	'... and the rate limit bucket of mon_rl');
my %served = map { $_ => 1 } ($metrics =~ /^(jobqueue_\w+)\{/mg);
my %used = map { $_ => 1 } (slurp_file($rules) =~ /\b(jobqueue_\w+)\b/g);
# jq_worker_tasks() has no rows with the worker off: its metric names
# come from the queries file instead
$served{"jobqueue_worker_task_$_"} = 1 foreach @{ $columns{jobqueue_worker_task} };
my @missing = grep { !$served{$_} } sort keys %used;
is_deeply(\@missing, [], 'every metric of alerts.yaml is one the exporter serves');
ok(scalar(keys %used) >= 8, 'the rules use the metrics of several queries');

done_testing();
