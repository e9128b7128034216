# Background worker: an error in a pass is logged, shown by
# jq_worker_status() and jq_worker_tasks() (cut on a character boundary),
# and retried later with a growing delay -- not in a tight loop, and without
# the worker exiting.  An error in the repair of group counters is only a
# warning: it does not undo the reaps before it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('errors', worker => 'quick');
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('q', backoff_base => '1 hour');
SELECT jobqueue.jq_enqueue('q', '{}');
-- every reap now fails (an error raised by a trigger; an error of the
-- data, such as a violated constraint, only skips the job: 024_reap_skip.pl)
CREATE FUNCTION public.no_reap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.last_error_code = 'LEASE_EXPIRED' THEN
        RAISE EXCEPTION 'no_reap: reaping is refused %', repeat('ü', 300);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER no_reap BEFORE UPDATE ON jobqueue.jobs
    FOR EACH ROW EXECUTE FUNCTION public.no_reap();
});
wait_for_worker($node);
my $pid = $node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()');

my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_claim('q', 1, 'w', '10 milliseconds')});
ok( $node->poll_query_until(
		'postgres', q{SELECT last_error IS NOT NULL FROM jobqueue.jq_worker_status()}),
	'the failed pass is reported by jq_worker_status()');
like($node->safe_psql('postgres', 'SELECT last_error FROM jobqueue.jq_worker_status()'),
	qr/no_reap/, 'with the error message');
# the message is longer than what is kept: it is cut on a character boundary
is( $node->safe_psql('postgres', q{
SELECT octet_length(last_error) <= 255
   AND convert_from(textsend(last_error), 'UTF8') LIKE 'no_reap: reaping is refused %ü'
FROM jobqueue.jq_worker_status()}),
	't', 'the kept message is cut on a character boundary');

# watch it fail for a while
let_server_time_pass($node, 3);
my $log = slurp_file($node->logfile, $log_offset);
my $errors = () = $log =~ /ERROR:  no_reap: reaping is refused/g;
cmp_ok($errors, '>=', 2, "the error is logged at each try ($errors times)");
# 3 s with tries 0.5, 1, 2 s apart, plus the time until the poll: a tight
# loop would log thousands
cmp_ok($errors, '<=', 30, 'but not in a tight loop');
is( $node->safe_psql('postgres', q{
SELECT consecutive_errors >= 2 AND last_error LIKE 'no_reap%'
FROM jobqueue.jq_worker_tasks() WHERE task = 'reap'}),
	't', 'jq_worker_tasks() shows the failing task and its consecutive errors');
is($node->safe_psql('postgres', q{SELECT status FROM jobqueue.jobs}),
	'running', 'the failed reap changed nothing');
is($node->safe_psql('postgres', 'SELECT pid FROM jobqueue.jq_worker_status()'),
	$pid, 'the worker stayed up');

$node->safe_psql('postgres', 'DROP TRIGGER no_reap ON jobqueue.jobs');
ok( $node->poll_query_until(
		'postgres', q{SELECT status = 'pending' FROM jobqueue.jobs}),
	'once the cause is gone, the next pass reaps');
# (polled: during a pass it does have them, for a few milliseconds)
ok( $node->poll_query_until(
		'postgres', q{
SELECT count(*) = 1 FROM pg_stat_activity
WHERE pid = (SELECT pid FROM jobqueue.jq_worker_status())
  AND state = 'idle' AND backend_xid IS NULL AND backend_xmin IS NULL}),
	'between passes it holds no transaction and no snapshot');

# An error in the repair of the group counters (here a trigger that
# refuses to correct one queue's row) is a WARNING: the reaps of the unit it
# ends stand, and the repair is tried again at the next pass.
$node->safe_psql('postgres', q{
SELECT jobqueue.jq_create_queue('g', group_concurrency => 2, backoff_base => '1 hour');
SELECT jobqueue.jq_create_queue('h', group_concurrency => 2);
SELECT jobqueue.jq_enqueue('g', '{}', group_key => 'a');
SELECT jobqueue.jq_enqueue('h', '{}', group_key => 'x');
UPDATE jobqueue.groups SET running = 42 WHERE queue_name = 'h';
CREATE FUNCTION public.no_repair() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.running = 42 THEN
        RAISE EXCEPTION 'no_repair: this row stays as it is';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER no_repair BEFORE UPDATE ON jobqueue.groups
    FOR EACH ROW EXECUTE FUNCTION public.no_repair();
});
$log_offset = -s $node->logfile;
$node->safe_psql('postgres', q{SELECT count(*) FROM jobqueue.jq_claim('g', 1, 'w', '10 milliseconds')});
ok( $node->poll_query_until(
		'postgres', q{SELECT status = 'pending' FROM jobqueue.jobs WHERE queue_name = 'g'}),
	'an expired lease is reaped while the repair of the group counters fails');
ok( $node->poll_query_until(
		'postgres', q{SELECT running = 0 FROM jobqueue.groups WHERE queue_name = 'g'}),
	'and the reap counted the job off its group');
$log = slurp_file($node->logfile, $log_offset);
like($log, qr/WARNING:  could not repair the group counters: no_repair: this row stays as it is/,
	'the failed repair is a warning');
is($node->safe_psql('postgres', q{SELECT running FROM jobqueue.groups WHERE queue_name = 'h'}),
	'42', 'the row the trigger protects is left as it is');
$node->safe_psql('postgres', 'DROP TRIGGER no_repair ON jobqueue.groups');
ok( $node->poll_query_until(
		'postgres', q{SELECT running = 0 FROM jobqueue.groups WHERE queue_name = 'h'}),
	'once the cause is gone, a later pass repairs it');

$node->stop;
done_testing();
