# Strict order per group (group_ordered) with gaps and poison, then under
# load.
#  1. A group whose head fails for good is blocked (jq_group_stats says
#     so) while the other groups run; after jq_retry of the head it runs
#     first and the group continues in order.
#  2. A job cancelled in the middle of a group is skipped.
#  3. A head with run_at in the future holds up its group until it is due.
#  4. 10,000 jobs over 100 groups, each job with its group's sequence number
#     in the payload, run by 8 concurrent pgbench clients claiming batches
#     of 4: each claim and each completion takes a number from one sequence
#     in its transaction, so for every group the jobs must have started in
#     sequence order, and each one only after the one before it ended
#     (never two of a group at once).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('group_order', worker => 'off');

$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('ord', group_ordered => true, max_attempts => 1);
-- claim up to n jobs of queue q, complete them, and show them by name in
-- claim order
CREATE FUNCTION run(q text, n int) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(c.payload->>'name', ',' ORDER BY c.payload->>'name'), '')
	FROM jobqueue.jq_claim(q, n, 'test') c WHERE jobqueue.jq_complete(c.id, c.token)
$$;
CREATE FUNCTION job(name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM jobqueue.jobs WHERE payload->>'name' = name
$$;
SELECT count(*) FROM jobqueue.jq_enqueue_many('ord',
	ARRAY(SELECT jsonb_build_object('name', g || i)
		  FROM unnest(ARRAY['a', 'b', 'c']) g, generate_series(1, 3) i ORDER BY i, g),
	group_keys => ARRAY(SELECT g
		  FROM unnest(ARRAY['a', 'b', 'c']) g, generate_series(1, 3) i ORDER BY i, g));
});

# 1. poison: a1 fails for good
my ($id, $token) = split /\|/, $node->safe_psql('postgres', q{
	SELECT c.id, c.token FROM jobqueue.jq_claim('ord', 1, 'test') c});
is($node->safe_psql('postgres', "SELECT payload->>'name' FROM jobqueue.jobs WHERE id = $id"),
	'a1', 'the first claim takes the head of group a');
is( $node->safe_psql('postgres',
		"SELECT jobqueue.jq_fail($id, $token, 'POISON', 'bad input', retryable => false)"),
	'dead', 'a1 fails for good');

# 2. a gap: c2 is cancelled before it runs
$node->safe_psql('postgres', q{SELECT jobqueue.jq_cancel(job('c2'))});

is($node->safe_psql('postgres', q{SELECT run('ord', 10)}),
	'b1,c1', 'group a is blocked by its dead head, b and c run their heads');
is( $node->safe_psql('postgres',
		q{SELECT group_key, dead FROM jobqueue.jq_group_stats('ord') WHERE blocked}),
	'a|1', 'jq_group_stats shows group a blocked by one dead job');
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}),
	'b2,c3', 'the next claim: b2, and c3, since the cancelled c2 is skipped');
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}),
	'b3', 'b3; group a still blocked');
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}),
	'', 'nothing else runs while a1 is dead');

ok($node->safe_psql('postgres', q{SELECT jobqueue.jq_retry(job('a1'))}) eq 't',
	'a1 is replayed');
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}),
	'a1', 'the replayed head runs first');
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}), 'a2', 'then a2');
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}), 'a3', 'then a3');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(payload->>'name' || ':' || status, ',' ORDER BY id)
		  FROM jobqueue.jobs WHERE queue_name = 'ord'}),
	'a1:succeeded,b1:succeeded,c1:succeeded,a2:succeeded,b2:succeeded,'
	  . 'c2:cancelled,a3:succeeded,b3:succeeded,c3:succeeded',
	'every job ran once, but the cancelled one');

# 3. a delayed head: d1 is due in 2 seconds, d2 now
$node->safe_psql('postgres', q{
	SELECT jobqueue.jq_enqueue('ord', '{"name": "d1"}', run_at => now() + interval '2 seconds',
							   group_key => 'd');
	SELECT jobqueue.jq_enqueue('ord', '{"name": "d2"}', group_key => 'd');
	SELECT jobqueue.jq_enqueue('ord', '{"name": "e1"}', group_key => 'e');
	CREATE TABLE ran (ord serial, names text);
});
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}),
	'e1', 'group d waits for its head, due later; group e runs');
# claim until d1 has run, recording every claim
wait_for($node, 'postgres', q{
	WITH r AS (INSERT INTO ran (names) SELECT run('ord', 10) RETURNING names)
	SELECT EXISTS (SELECT FROM jobqueue.jobs WHERE payload->>'name' = 'd1'
				   AND status = 'succeeded') OR (SELECT names FROM r) LIKE '%d1%'},
	'd1 to run');
is( $node->safe_psql('postgres',
		q{SELECT string_agg(names, ',' ORDER BY ord) FROM ran WHERE names <> ''}),
	'd1', 'nothing of group d ran before its head was due, then only the head');
ok( $node->safe_psql('postgres', q{
		SELECT started_at >= available_at FROM jobqueue.jobs WHERE payload->>'name' = 'd1'}) eq 't',
	'd1 started after its run_at');
is($node->safe_psql('postgres', q{SELECT run('ord', 10)}), 'd2', 'then d2');

# 4. 10,000 jobs, 100 groups, 8 clients
my $groups = 100;
my $per_group = 100;
my $jobs = $groups * $per_group;
$node->safe_psql('postgres', qq{
SELECT jobqueue.jq_create_queue('big', group_ordered => true);
SELECT count(*) FROM jobqueue.jq_enqueue_many('big',
	ARRAY(SELECT jsonb_build_object('g', g, 'seq', s)
		  FROM generate_series(1, $per_group) s, generate_series(1, $groups) g ORDER BY s, g),
	group_keys => ARRAY(SELECT 'g' || g
		  FROM generate_series(1, $per_group) s, generate_series(1, $groups) g ORDER BY s, g));
CREATE SEQUENCE events;
CREATE TABLE runs (job_id bigint PRIMARY KEY, grp int, seq int, client int,
				   started bigint, ended bigint);
});

# claim a batch and record each job's start (in the claim's transaction),
# then complete the batch, recording each end before the completion commits
my $script = q{
INSERT INTO runs (job_id, grp, seq, client, started)
SELECT c.id, (c.payload->>'g')::int, (c.payload->>'seq')::int, :client_id, nextval('events')
  FROM jobqueue.jq_claim('big', 4, 'client' || :client_id) c;
UPDATE runs SET ended = nextval('events')
 WHERE client = :client_id AND ended IS NULL
   AND jobqueue.jq_complete(job_id, (SELECT lease_token FROM jobqueue.jobs j WHERE j.id = runs.job_id));
};
my $passes = 0;
while ($passes++ < 20
	&& $node->safe_psql('postgres', 'SELECT count(*) FROM runs WHERE ended IS NOT NULL') < $jobs)
{
	$node->pgbench(
		'--no-vacuum --client=8 --jobs=8 --transactions=250',
		0, [qr{processed: 2000/2000}], [qr{^$}],
		"pass $passes: 8 clients claim and complete in batches of 4",
		{ "031_ordered_$passes.sql" => $script });
}

is( $node->safe_psql('postgres', q{
		SELECT count(*), count(DISTINCT client) FROM runs WHERE ended IS NOT NULL}),
	"$jobs|8", "all $jobs jobs ran once, by all 8 clients");
is( $node->safe_psql('postgres',
		q{SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'big' AND status = 'succeeded'}),
	$jobs, "all $jobs jobs succeeded");
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT seq, lag(seq) OVER (PARTITION BY grp ORDER BY started) AS prev_seq
			FROM runs) s
		WHERE prev_seq IS NOT NULL AND seq <> prev_seq + 1}),
	'0', 'every group started its jobs in sequence order');
is( $node->safe_psql('postgres', q{
		SELECT count(*) FROM (
			SELECT started, lag(ended) OVER (PARTITION BY grp ORDER BY seq) AS prev_ended
			FROM runs) s
		WHERE prev_ended IS NOT NULL AND started < prev_ended}),
	'0', 'no job of a group started before the one before it ended');
ok( $node->safe_psql('postgres',
		q{SELECT count(*) FROM runs GROUP BY grp HAVING count(*) <> 100}) eq '',
	'each group ran its 100 jobs');
# the groups really ran side by side: some job of one group started while
# a job of another was running
ok( $node->safe_psql('postgres', q{
		SELECT count(*) FROM runs a JOIN runs b ON a.grp <> b.grp
		  AND b.started > a.started AND b.started < a.ended
		WHERE a.seq = 50}) > 0,
	'jobs of different groups ran at the same time');

$node->stop;
done_testing();
