# Recurring schedules run by the background worker.
#  1. A '1 seconds' schedule enqueues one job per second, each with its own
#     slot; jq_worker_tasks() shows the scheduler.
#  2. kill -9 of the worker (the postmaster restarts everything): no slot is
#     enqueued twice, and catch_up 'all' misses none.
#  3. An immediate stop and 10 s of downtime: 'all' enqueues every missed
#     slot, 'latest' only the most recent one, 'none' none of them; each
#     then goes on.  No slot is enqueued twice.
#  4. Two databases with schedules each get their own jobs.
#  5. jq_schedule() of a new schedule is picked up by a running worker.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

# restart_after_crash: the postmaster restarts the server after kill -9
my $node = jq_node('schedules', worker => 'quick',
	settings => { restart_after_crash => 'on' });
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('s');
SELECT jobqueue.jq_schedule('all', 's', '1 seconds', '{"p": 1}', catch_up => 'all');
SELECT jobqueue.jq_schedule('latest', 's', '1 seconds', catch_up => 'latest');
SELECT jobqueue.jq_schedule('none', 's', '1 seconds', catch_up => 'none');
});
wait_for_worker($node);

# the slots of schedule $s, from the jobs
my $slots = sub {
	my ($s, $db) = @_;
	return qq{(SELECT (j.payload ->> 'jq_slot')::timestamptz AS slot, j.created_at
	  FROM jobqueue.jobs j WHERE j.payload ->> 'jq_schedule' = '$s')};
};
# "count|distinct|contiguous": the slots of $s, one per second without a gap
my $shape = sub {
	my ($s, $db) = @_;
	return $node->safe_psql($db // 'postgres', qq{
SELECT count(*) >= 1, count(*) = count(DISTINCT slot),
       max(slot) - min(slot) = (count(*) - 1) * interval '1 second'
FROM } . $slots->($s) . ' x');
};

# 1. one job per second
wait_for($node, 'postgres',
	"SELECT count(*) >= 6 FROM " . $slots->('all') . ' x', 'six slots');
is($shape->('all'), 't|t|t', "'1 seconds': one job per second, each slot once");
is($node->safe_psql('postgres', q{
SELECT bool_and(j.idempotency_key = 'jq_schedule:' || (j.payload ->> 'jq_schedule') || ':' || (j.payload ->> 'jq_slot'))
   AND bool_and(j.payload ->> 'p' = '1')
   AND bool_and(date_trunc('second', (j.payload ->> 'jq_slot')::timestamptz) = (j.payload ->> 'jq_slot')::timestamptz)
FROM jobqueue.jobs j WHERE j.payload ->> 'jq_schedule' = 'all'}),
	't', 'the payload and the idempotency key carry the schedule and the slot');
is($node->safe_psql('postgres', q{
SELECT runs > 0 AND items > 0 AND consecutive_errors = 0
FROM jobqueue.jq_worker_tasks() WHERE task = 'schedule'}),
	't', 'jq_worker_tasks() shows the scheduler at work');

# 2. kill -9 of the worker
my $pid = $node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()');
my $before = $node->safe_psql('postgres', 'SELECT count(*) FROM jobqueue.jobs');
kill 'KILL', $pid;
wait_for($node, 'postgres', 'SELECT pg_postmaster_start_time() IS NOT NULL',
	'the restart after the crash');
wait_for($node, 'postgres',
	"SELECT count(*) > $before + 9 FROM jobqueue.jobs", 'jobs after the crash');
is($shape->('all'), 't|t|t', "after kill -9 of the worker: each slot once, none missed ('all')");
is($node->safe_psql('postgres', q{
SELECT count(*) = count(DISTINCT idempotency_key) FROM jobqueue.jobs}),
	't', 'after kill -9 of the worker: no slot enqueued twice');

# 3. immediate stop, 10 s of downtime
my $stop_at = $node->safe_psql('postgres', 'SELECT now()');
$node->stop('immediate');
sleep 10;    # the downtime is the scenario
$node->start;
wait_for($node, 'postgres', qq{
SELECT count(*) = 3 FROM (SELECT j.payload ->> 'jq_schedule' FROM jobqueue.jobs j
  WHERE (j.payload ->> 'jq_slot')::timestamptz > pg_postmaster_start_time() + interval '3 seconds'
  GROUP BY 1) x}, 'every schedule going on after the restart');
is($shape->('all'), 't|t|t', "after 10 s of downtime 'all' enqueued every missed slot");
# the first pass after the restart: its jobs share the transaction's now()
# (the first job of each schedule after the restart is looked up for it:
# on a busy machine the schedules may be served by different passes)
my $first = $node->safe_psql('postgres', q{
SELECT min(j.created_at) FROM jobqueue.jobs j WHERE j.created_at > pg_postmaster_start_time()});
is($node->safe_psql('postgres', qq{
SELECT count(*) FROM jobqueue.jobs j
WHERE j.payload ->> 'jq_schedule' = 'all' AND j.created_at = (SELECT min(x.created_at)
    FROM } . $slots->('all') . qq{ x WHERE x.created_at > pg_postmaster_start_time())
  AND (j.payload ->> 'jq_slot')::timestamptz > '$stop_at'}) >= 10 ? 1 : 0,
	1, "'all': the first pass after the restart caught up at least 10 slots");
# 'latest': the first pass that served it after the restart (it may be
# another transaction than the first pass of all, on a busy machine)
my $latest_first = $node->safe_psql('postgres', qq{
SELECT min(x.created_at) FROM } . $slots->('latest') . q{ x WHERE x.created_at > pg_postmaster_start_time()});
is($node->safe_psql('postgres', qq{
SELECT count(*), max(slot) >= date_trunc('second', pg_postmaster_start_time()) - interval '1 second'
FROM } . $slots->('latest') . qq{ x WHERE x.created_at = '$latest_first'}),
	'1|t', "'latest': one job, for the most recent missed slot");
is($node->safe_psql('postgres', qq{
SELECT count(*) FROM } . $slots->('latest') . qq{ x
WHERE x.slot > '$stop_at' AND x.slot < (SELECT max(y.slot) FROM } . $slots->('latest') . qq{ y WHERE y.created_at = '$latest_first')}),
	'0', "'latest': no job for the older missed slots");
is($node->safe_psql('postgres', qq{
SELECT count(*) FROM } . $slots->('none') . qq{ x
WHERE x.slot > '$stop_at' AND x.slot <= '$first'}),
	'0', "'none': no job for any missed slot");
is($node->safe_psql('postgres', qq{
SELECT count(*) > 0 FROM } . $slots->('none') . qq{ x WHERE x.slot > '$first'}),
	't', "'none': goes on with the next slots");
is($node->safe_psql('postgres', q{
SELECT count(*) = count(DISTINCT idempotency_key) FROM jobqueue.jobs}),
	't', 'after the immediate stop: no slot enqueued twice');

# 4. two databases, each with its own schedule
$node->safe_psql('postgres', 'SELECT jobqueue.jq_unschedule(s) FROM unnest(ARRAY[\'latest\', \'none\']) s');
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', q{
CREATE EXTENSION jobqueue;
SELECT jobqueue.jq_create_queue('s');
SELECT jobqueue.jq_schedule('other', 's', '1 seconds', catch_up => 'all');
});
wait_for($node, 'other',
	"SELECT count(*) >= 3 FROM " . $slots->('other') . ' x', 'jobs in the second database');
is($shape->('other', 'other'), 't|t|t', 'the second database gets its own jobs');
is($node->safe_psql('other', q{SELECT count(*) FROM jobqueue.jobs j WHERE j.payload ->> 'jq_schedule' <> 'other'}),
	'0', "the second database has none of the first one's jobs");
my $n = $node->safe_psql('postgres', 'SELECT count(*) FROM jobqueue.jobs');
wait_for($node, 'postgres', "SELECT count(*) > $n + 2 FROM jobqueue.jobs",
	'the first database going on');
is($shape->('all'), 't|t|t', 'the first database goes on beside it');

# 5. a new schedule in a database whose worker is running
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_schedule('new', 's', '2 seconds', catch_up => 'none')});
wait_for($node, 'postgres',
	"SELECT count(*) >= 2 FROM " . $slots->('new') . ' x', 'the new schedule');
pass('a new schedule is picked up by the running worker');

$node->stop;
done_testing();
