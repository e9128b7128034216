# The monitoring recipe: every query of contrib/prometheus/queries.yaml
# runs as a role given only jq_grant_monitor, and returns exactly the
# columns its metrics list declares, with the expected values after some
# traffic; postgres_exporter (Debian's prometheus-postgres-exporter) serves
# them with the values SQL gives (the latency histograms bucket by bucket,
# the error counts, releases and expired leases) as the metrics the alert
# rules of contrib/prometheus/alerts.yaml and the Grafana dashboard
# contrib/grafana/jobqueue.json use; promtool accepts the rules, their unit
# tests and the dashboard's queries.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;
use HTTP::Tiny;
use Time::HiRes qw(usleep);
use JSON::PP;

# Read the queries file: top-level keys, their "query: |" blocks and the
# metric (column) names; a HISTOGRAM column c is four columns (c: the
# bounds, c_bucket: the cumulative counts, c_sum, c_count).  A small
# reader for the subset of YAML used there.
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
	elsif ($line =~ /^        usage: "HISTOGRAM"\s*$/)
	{
		my $c = $columns{$name}[-1];
		push @{ $columns{$name} }, "${c}_bucket", "${c}_sum", "${c}_count";
	}
	else
	{
		$in_query = 0;
	}
}
close $fh;
is_deeply([ sort keys %queries ],
	[qw(jobqueue_errors jobqueue_events jobqueue_latency jobqueue_queue jobqueue_rate_limit jobqueue_worker jobqueue_worker_task)],
	'the queries file has the queue, event, latency, error, worker, worker task and rate limit queries');

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

# Latency, failures by code, releases and expired leases in a queue of
# their own: one job completed, one failed and retried, one released, one
# whose lease the reaper finds expired.
$node->safe_psql(
	'postgres', q{
	SELECT jobqueue.jq_create_queue('mon_obs', lease_duration => '1 hour');
	SELECT count(*) FROM jobqueue.jq_enqueue_many('mon_obs', ARRAY['{}', '{}', '{}', '{}']::jsonb[]);
	SELECT jobqueue.jq_complete(id, token) FROM jobqueue.jq_claim('mon_obs', 1, 'w');
	SELECT jobqueue.jq_fail(id, token, 'E_TIMEOUT', retry_in => '1 hour') FROM jobqueue.jq_claim('mon_obs', 1, 'w');
	SELECT jobqueue.jq_release(id, token, delay => '1 hour') FROM jobqueue.jq_claim('mon_obs', 1, 'w');
	SELECT count(*) FROM jobqueue.jq_claim('mon_obs', 1, 'w');
	UPDATE jobqueue.jobs SET lease_expires_at = pg_catalog.now() - interval '1 second'
	WHERE queue_name = 'mon_obs' AND status = 'running';
	SELECT jobqueue.jq_reap();
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
like($events, qr/^postgres\|mon\|4\|3\|1\|1\|0\|0\|1\|0\|0\|0\|0\|0\|1\|0\|0\|3\|/,
	'event counters: 4 enqueued, 3 claimed, 1 completed, 1 fenced, 1 permanent failure dead-lettered, 0 released, expired or debounced, 3 claim calls');

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

# The scrape as series: "name" => [ [ {labels}, value ], ... ]
my %scraped;
foreach my $l (split /\n/, $metrics)
{
	next unless $l =~ /^(jobqueue_\w+)\{([^}]*)\} (\S+)$/;
	my ($n, $ls, $v) = ($1, $2, $3);
	my %labels = ($ls =~ /(\w+)="([^"]*)"/g);
	push @{ $scraped{$n} }, [ \%labels, $v ];
}

# The value of series $n whose labels include %want (undef if none).
sub scraped
{
	my ($n, %want) = @_;
	foreach my $s (@{ $scraped{$n} // [] })
	{
		next if grep { ($s->[0]{$_} // "\0") ne $want{$_} } keys %want;
		return $s->[1];
	}
	return undef;
}
ok($metrics ne '', 'postgres_exporter serves the jobqueue metrics')
  or diag(slurp_file($elog));
like($metrics, qr/^jobqueue_queue_ready\{[^}]*queue_name="mon"[^}]*\} 1$/m,
	'the exporter reports queue mon with 1 ready job');
like($metrics, qr/^jobqueue_queue_dead\{[^}]*queue_name="mon"[^}]*\} 1$/m,
	'... and 1 dead job');
like($metrics, qr/^jobqueue_rate_limit_claims_limited\{[^}]*queue_name="mon_rl"[^}]*\} 1$/m,
	'... and the rate limit bucket of mon_rl');
# The histograms the exporter serves are those of jq_latency_buckets and
# jq_latency, bucket for bucket.
my $sql_buckets = $node->safe_psql('postgres', q{
	SELECT kind, le, count FROM jobqueue.jq_latency_buckets('mon_obs')
	WHERE bucket % 16 = 0 OR le = 'Infinity' ORDER BY kind, bucket});
my (%sql_hist, $hist_ok, $hist_n);
$hist_ok = 1;
$hist_n = 0;
foreach my $r (split /\n/, $sql_buckets)
{
	my ($kind, $le, $count) = split /\|/, $r;
	$le = '+Inf' if $le eq 'Infinity';
	my $got = scraped('jobqueue_latency_seconds_bucket',
		queue_name => 'mon_obs', kind => $kind, le => $le);
	$hist_n++;
	if (!defined $got || $got != $count)
	{
		$hist_ok = 0;
		diag("$kind le=$le: SQL $count, exporter " . ($got // 'none'));
	}
}
ok($hist_ok && $hist_n == 3 * 34,
	'jobqueue_latency_seconds_bucket: 34 buckets (one per octave and +Inf) of wait, run and total, as jq_latency_buckets says');
my $sql_lat = $node->safe_psql('postgres', q{
	SELECT kind, count, EXTRACT(epoch FROM sum) FROM jobqueue.jq_latency('mon_obs') ORDER BY kind});
is($node->safe_psql('postgres', q{
	SELECT string_agg(kind || ':' || count, ',' ORDER BY kind) FROM jobqueue.jq_latency('mon_obs')}),
	'run:4,total:1,wait:4',
	'jq_latency: 4 waits and 4 runs (completed, failed, released, reaped), 1 total (the completed job)');
foreach my $r (split /\n/, $sql_lat)
{
	my ($kind, $count, $sum) = split /\|/, $r;
	is(scraped('jobqueue_latency_seconds_count', queue_name => 'mon_obs', kind => $kind),
		$count, "jobqueue_latency_seconds_count of $kind is jq_latency's count ($count)");
	my $got = scraped('jobqueue_latency_seconds_sum', queue_name => 'mon_obs', kind => $kind);
	ok(defined $got && abs($got - $sum) <= 1e-6 * (1 + $sum),
		"jobqueue_latency_seconds_sum of $kind is jq_latency's sum ($sum)")
	  or diag('exporter: ' . ($got // 'none'));
}

# Failures by code and attempt, releases and expired leases
is($node->safe_psql('postgres', q{
	SELECT string_agg(error_code || '|' || attempt || '|' || retries || '|' || dead_lettered, ',' ORDER BY error_code)
	FROM jobqueue.jq_error_counts('mon_obs')}),
	'E_TIMEOUT|1|1|0,LEASE_EXPIRED|1|1|0',
	'jq_error_counts: E_TIMEOUT and LEASE_EXPIRED at attempt 1, each retried once');
foreach my $code (qw(E_TIMEOUT LEASE_EXPIRED))
{
	is(scraped('jobqueue_errors_retries', queue_name => 'mon_obs', error_code => $code, attempt => '1'),
		1, "jobqueue_errors_retries of $code at attempt 1: 1");
	is(scraped('jobqueue_errors_dead_lettered', queue_name => 'mon_obs', error_code => $code, attempt => '1'),
		0, "jobqueue_errors_dead_lettered of $code at attempt 1: 0");
}
is(scraped('jobqueue_errors_dead_lettered', queue_name => 'mon', error_code => 'E', attempt => '1'),
	1, 'jobqueue_errors_dead_lettered of the permanent failure in mon: 1');
is($node->safe_psql('postgres',
		"SELECT released || '|' || leases_expired FROM jobqueue.jq_counters() WHERE queue_name = 'mon_obs'"),
	'1|1', 'jq_counters: 1 released, 1 lease expired');
is(scraped('jobqueue_events_released', queue_name => 'mon_obs'), 1, 'jobqueue_events_released: 1');
is(scraped('jobqueue_events_leases_expired', queue_name => 'mon_obs'), 1, 'jobqueue_events_leases_expired: 1');

my %served = map { $_ => 1 } ($metrics =~ /^(jobqueue_\w+)\{/mg);
my %used = map { $_ => 1 } (slurp_file($rules) =~ /\b(jobqueue_\w+)\b/g);
# jq_worker_tasks() has no rows with the worker off: its metric names
# come from the queries file instead
$served{"jobqueue_worker_task_$_"} = 1 foreach @{ $columns{jobqueue_worker_task} };
my @missing = grep { !$served{$_} } sort keys %used;
is_deeply(\@missing, [], 'every metric of alerts.yaml is one the exporter serves');
ok(scalar(keys %used) >= 8, 'the rules use the metrics of several queries');

# The Grafana dashboard: valid JSON, every panel has queries, every query
# parses as PromQL (promtool checks them as recording rules, Grafana's
# variables replaced as Grafana does), and uses only metrics and labels
# the exporter serves.
my $dfile = 'contrib/grafana/jobqueue.json';
my $dash = eval { decode_json(slurp_file($dfile)) };
ok($dash, "$dfile is valid JSON") or diag($@);
my @panels = map { ($_, @{ $_->{panels} // [] }) } @{ $dash->{panels} // [] };
my @graphs = grep { $_->{type} ne 'row' } @panels;
is_deeply([ map { $_->{title} } grep { !@{ $_->{targets} // [] } } @graphs ], [],
	'every panel of the dashboard has a query');
my @exprs = map { map { $_->{expr} } @{ $_->{targets} } } @graphs;
my @vars = map { $_->{definition} =~ /^label_values\((.*), \w+\)$/ ? $1 : () }
  grep { $_->{type} eq 'query' } @{ $dash->{templating}{list} };
is(scalar(@vars), 2, 'the dashboard\'s database and queue variables are label_values of a metric');
my $drules = $node->basedir . '/dashboard_rules.yaml';
my $json = JSON::PP->new->allow_nonref;
open(my $dr, '>', $drules) or die "could not write $drules: $!";
print $dr "groups:\n  - name: dashboard\n    rules:\n";
my $i = 0;
foreach my $e (@exprs, @vars)
{
	my $promql = $e =~ s/\$__rate_interval/5m/gr =~ s/\$(datname|queue)\b/.*/gr;
	$i++;
	print $dr "      - record: jobqueue:dashboard_$i\n        expr: " . $json->encode($promql) . "\n";
}
close $dr;
my $dcheck = `promtool check rules $drules 2>&1`;
is($?, 0, 'every query of the dashboard parses as PromQL (promtool check rules)') or diag($dcheck);
like($dcheck, qr/SUCCESS: $i rules found/, "... all $i of them");
my @dmissing = grep { !$served{$_} } sort keys %{ { map { $_ => 1 } (join("\n", @exprs, @vars) =~ /\b(jobqueue_\w+)\b/g) } };
is_deeply(\@dmissing, [], 'every metric of the dashboard is one the exporter serves');
my %labels = (le => 1);
foreach my $n (keys %scraped)
{
	$labels{$_} = 1 foreach map { keys %{ $_->[0] } } @{ $scraped{$n} };
}
$labels{task} = 1;    # jobqueue_worker_task_*: no rows with the worker off
my @dlabels = map { (/\bby \(([^)]*)\)/g, /(\w+)=~?"/g) } @exprs;
my @unknown = grep { !$labels{$_} } sort keys %{ { map { $_ => 1 } map { split /,\s*/ } @dlabels } };
is_deeply(\@unknown, [], 'every label the dashboard groups or filters by is one the exporter serves');
ok(scalar(grep { /histogram_quantile\(0\.99, .*kind="wait"/ } @exprs) == 1
	  && scalar(grep { /histogram_quantile\(0\.5, .*kind="run"/ } @exprs) == 1
	  && scalar(grep { /jobqueue_errors_\w+.*by \(queue_name, error_code\)|by \(queue_name, error_code\).*jobqueue_errors_/ } @exprs) >= 1,
	'the dashboard has the p99 wait, the p50 run time and the errors by code');

done_testing();
