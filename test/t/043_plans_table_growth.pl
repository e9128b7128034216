# A session that prepared its claim while the jobs table was empty claims
# through the indexes once the table is large, without an ANALYZE.
#  A session claims from an empty queue (its kept claim plan is built for an
#  empty table), then another loads 100,000 jobs with autovacuum off (no
#  ANALYZE ever runs).  jq_explain_claim, which shows the session's kept
#  plan, shows the claim index and no sequential scan of jobs; the plan the
#  claim then runs (logged by auto_explain) has none either.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('plans_table_growth', worker => 'off',
	settings => { autovacuum => 'off' });
$node->safe_psql('postgres', q{SELECT jobqueue.jq_create_queue('grow')});

my $old = $node->background_psql('postgres');
is($old->query_safe(q{SELECT count(*) FROM jobqueue.jq_claim('grow', 64, 'w')}),
	'0', 'the old session claims from the empty table');
my $empty_plan = $old->query_safe(q{SELECT string_agg(p, E'\n') FROM jobqueue.jq_explain_claim('grow', 64) AS p});
note "plan on the empty table:\n$empty_plan";

$node->safe_psql('postgres', q{
SELECT count(*) FROM jobqueue.jq_enqueue_many('grow',
	ARRAY(SELECT jsonb_build_object('n', i) FROM generate_series(1, 100000) i),
	run_at => now() - interval '1 minute');
});
is($node->safe_psql('postgres', q{
SELECT reltuples < 0 OR relpages = 0 FROM pg_class WHERE oid = 'jobqueue.jobs'::regclass}),
	't', 'the table was never analyzed or vacuumed');

# the session looks at the table's size at most once a second
my $plan_ok = q{
SELECT t !~ 'Seq Scan on jobs' AND t ~ 'Index Scan using jobs_claim_idx on jobs'
FROM (SELECT string_agg(p, E'\n') AS t FROM jobqueue.jq_explain_claim('grow', 64) AS p) x};
my $ok = 0;
foreach my $try (1 .. 600)
{
	$ok = $old->query_safe($plan_ok) eq 't';
	last if $ok;
	$old->query_safe('SELECT pg_sleep(0.05)');
}
ok($ok, 'the old session\'s kept claim plan uses jobs_claim_idx and no sequential scan of jobs');
note "plan after 100,000 jobs:\n"
  . $old->query_safe(q{SELECT string_agg(p, E'\n') FROM jobqueue.jq_explain_claim('grow', 64) AS p});

# what the claim runs, as auto_explain logs it
$old->query_safe(q{LOAD 'auto_explain'});
$old->query_safe(q{SET auto_explain.log_min_duration = 0});
$old->query_safe(q{SET auto_explain.log_nested_statements = on});
my $offset = -s $node->logfile;
is($old->query_safe(q{SELECT count(*) FROM jobqueue.jq_claim('grow', 64, 'w')}),
	'64', 'the old session claims 64 jobs');
my @plans = grep { /Update on jobs j/ && /jobs_claim_idx/ }
  split /\n(?=\S)/, slurp_file($node->logfile, $offset);
is(scalar(@plans), 1, 'auto_explain logged the claim statement');
unlike($plans[0] // '', qr/Seq Scan on jobs/,
	'the claim it ran reads jobs through indexes only');
$old->quit;
$node->stop;
done_testing();
