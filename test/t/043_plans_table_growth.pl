# A session that prepared its claim while the jobs table was empty claims
# through the indexes once the table is large, without an ANALYZE.
#  A session claims from an empty queue (its kept claim plan is built for an
#  empty table), then another loads 100,000 jobs with autovacuum off (no
#  ANALYZE ever runs).  jq_explain_claim, which shows the session's kept
#  plan, shows the claim index and no sequential scan of jobs; the plan the
#  claim then runs (logged by auto_explain) has none either.
# The same for jobqueue.groups, which the group trigger probes by key for
#  every job it moves: a session that made that plan while groups was
#  empty and vacuumed (a sequential scan) probes it through its primary key
#  once a statement of its own has given 20,000 jobs groups of their own.
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

# groups: empty and vacuumed, then a session's own statement fills it
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('grow_groups', group_concurrency => 1);
VACUUM jobqueue.groups;
});
my $groups = $node->background_psql('postgres');
$groups->query_safe(q{LOAD 'auto_explain'});
$groups->query_safe(q{SET auto_explain.log_min_duration = 0});
$groups->query_safe(q{SET auto_explain.log_nested_statements = on});
$offset = -s $node->logfile;
$groups->query_safe(q{SELECT jobqueue.jq_enqueue('grow_groups', '{}', group_key => 'first')});
my ($first_probe) = grep { /INSERT INTO jobqueue.groups/ && /FOR KEY SHARE/ }
  split /\n(?=\S)/, slurp_file($node->logfile, $offset);
note "the group probe planned on the empty table:\n" . ($first_probe // '');
$groups->query_safe(q{
SELECT count(*) FROM jobqueue.jq_enqueue_many('grow_groups',
	ARRAY(SELECT '{}'::jsonb FROM generate_series(1, 20000)),
	group_keys => ARRAY(SELECT 'g' || i FROM generate_series(1, 20000) i))});
my $probe_ok = 0;
my $probe = '';
foreach my $try (1 .. 600)
{
	$offset = -s $node->logfile;
	$groups->query_safe(qq{SELECT jobqueue.jq_enqueue('grow_groups', '{}', group_key => 'late-$try')});
	($probe) = grep { /INSERT INTO jobqueue.groups/ && /FOR KEY SHARE/ }
	  split /\n(?=\S)/, slurp_file($node->logfile, $offset);
	$probe //= '';
	$probe_ok = $probe =~ /Index Scan using groups_pkey on groups/ && $probe !~ /Seq Scan on groups/;
	last if $probe_ok;
	$groups->query_safe('SELECT pg_sleep(0.05)');
}
ok($probe_ok, 'after 20,000 groups the session probes groups through its primary key')
  or diag $probe;
$groups->quit;
$node->stop;
done_testing();
