# Backup and restore with pg_dump / pg_restore.
#
# The queues and jobs tables and the jobs' identity sequence are
# registered with pg_extension_config_dump, so a dump of a database with
# the extension holds CREATE EXTENSION plus the rows.  Jobs in every state
# (pending, scheduled, running, succeeded, dead, cancelled, replayed, with
# error histories and idempotency keys) are dumped in the custom format and
# restored into a new database: every row must be identical, a restored
# lease must still be completable with its token, the role helpers' grants
# must come back, and a new job must get an id above every restored one.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('dump_restore', worker => 'off', extension => 0);

$node->safe_psql('postgres', 'CREATE DATABASE jq_src');
$node->safe_psql('postgres', 'CREATE ROLE jq_app_producer');
$node->safe_psql(
	'jq_src', q{
	CREATE EXTENSION jobqueue;
	SELECT jobqueue.jq_create_queue('mail', max_attempts => 3, lease_duration => '1 hour',
		backoff_base => '1 second', retention => '30 days');
	SELECT jobqueue.jq_create_queue('reports', max_attempts => 1);
	SELECT jobqueue.jq_pause_queue('reports');
	SELECT jobqueue.jq_alter_queue('reports', notify => false);
	SELECT jobqueue.jq_grant_producer('jq_app_producer');

	-- pending: plain, with a key, with a priority, scheduled for later
	SELECT jobqueue.jq_enqueue('mail', jsonb_build_object('to', 'a@example.com', 'n', i))
	FROM generate_series(1, 20) i;
	SELECT jobqueue.jq_enqueue('mail', '{"k": 1}', idempotency_key => 'order-17');
	SELECT jobqueue.jq_enqueue('mail', '{"later": true}', run_at => now() + interval '1 day');

	-- running (leases held), succeeded
	CREATE TABLE held AS SELECT * FROM jobqueue.jq_claim('mail', 6, 'worker-1');
	SELECT jobqueue.jq_complete(id, token) FROM (SELECT * FROM held ORDER BY id LIMIT 3) h;

	-- a failed attempt rescheduled (error history), a dead job with two
	-- failures, a cancelled job, and a dead job replayed
	SELECT jobqueue.jq_fail(id, token, 'E_SMTP', 'connection refused', retry_in => '1 second')
	FROM (SELECT * FROM held ORDER BY id DESC LIMIT 1) h;
	UPDATE jobqueue.jobs SET available_at = '2000-01-01' WHERE last_error_code = 'E_SMTP';
	SELECT jobqueue.jq_fail(c.id, c.token, 'E_SMTP', 'still refused', retryable => false)
	FROM jobqueue.jq_claim('mail', 1, 'worker-2') c;
	SELECT jobqueue.jq_cancel(max(id)) FROM jobqueue.jobs WHERE status = 'pending' AND queue_name = 'mail'
		AND available_at <= now();
	SELECT jobqueue.jq_enqueue('reports', '{"r": 1}');
	UPDATE jobqueue.jobs SET status = 'dead', finished_at = now(), last_error_code = 'E_OLD',
		errors = '[{"code": "E_OLD", "attempt": 1}]' WHERE queue_name = 'reports';
	SELECT jobqueue.jq_retry(id) FROM jobqueue.jobs WHERE queue_name = 'reports';
	SELECT jobqueue.jq_fail(id, token, 'E_X', 'dies', retryable => false)
	FROM (SELECT * FROM held ORDER BY id LIMIT 1 OFFSET 3) h;
	SELECT jobqueue.jq_enqueue('mail', '{"vip": true}', priority => 10);
});

my $states = $node->safe_psql('jq_src',
	"SELECT string_agg(DISTINCT status::text, ',' ORDER BY status::text) FROM jobqueue.jobs");
is($states, 'cancelled,dead,pending,running,succeeded', 'jobs in every state before the dump');

# Everything that must survive, as text: every column of every job and
# queue, in id order, and the identity sequence.
my $snapshot_sql = q{
	SELECT (SELECT string_agg(pg_catalog.row_to_json(j)::text, E'\n' ORDER BY j.id) FROM jobqueue.jobs j)
	|| E'\n' ||
	(SELECT string_agg(pg_catalog.row_to_json(q)::text, E'\n' ORDER BY q.queue_name) FROM jobqueue.queues q)
};
my $before = $node->safe_psql('jq_src', $snapshot_sql);
my $max_id = $node->safe_psql('jq_src', 'SELECT max(id) FROM jobqueue.jobs');
my ($held_id, $held_token) = split /\|/,
  $node->safe_psql('jq_src',
	"SELECT id, token FROM held h JOIN jobqueue.jobs j USING (id) WHERE j.status = 'running' ORDER BY id LIMIT 1");
ok($held_id, 'a job is running with a lease');

my $dump = $node->basedir . '/jq_src.dump';
$node->command_ok([ 'pg_dump', '-Fc', '-f', $dump, '-d', $node->connstr('jq_src') ],
	'pg_dump -Fc of the database');
$node->safe_psql('postgres', 'CREATE DATABASE jq_dst');
my ($stdout, $stderr);
my $rc = $node->run_log([ 'pg_restore', '-d', $node->connstr('jq_dst'), $dump ]);
ok($rc, 'pg_restore into a new database succeeds');

my $after = $node->safe_psql('jq_dst', $snapshot_sql);
is($after, $before, 'every job and queue is identical after the restore');
is( $node->safe_psql('jq_dst', 'SELECT count(*) FROM jobqueue.jobs'),
	$node->safe_psql('jq_src', 'SELECT count(*) FROM jobqueue.jobs'),
	'as many jobs');
is( $node->safe_psql('jq_dst',
		"SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'"),
	$node->safe_psql('jq_src',
		"SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'"),
	'the extension is restored at its version');

# The restored lease is still held: its token completes it, a stale token
# is refused.
is($node->safe_psql('jq_dst', "SELECT jobqueue.jq_complete($held_id, $held_token - 1)"),
	'f', 'a stale token is still fenced after the restore');
is($node->safe_psql('jq_dst', "SELECT jobqueue.jq_complete($held_id, $held_token)"),
	't', 'the lease holder completes its job after the restore');

# New ids continue after the restored ones (the identity sequence is
# dumped too).
my $new_id = $node->safe_psql('jq_dst', "SELECT jobqueue.jq_enqueue('mail', '{\"new\": true}')");
cmp_ok($new_id, '>', $max_id, "a new job's id ($new_id) is above every restored id ($max_id)");
is($node->safe_psql('jq_dst', "SELECT count(*) FROM jobqueue.jobs WHERE id = $new_id"),
	1, 'no id collision');

# The idempotency key is enforced on the restored rows.
is( $node->safe_psql('jq_dst',
		"SELECT jobqueue.jq_enqueue('mail', '{}', idempotency_key => 'order-17') = "
		  . "(SELECT id FROM jobqueue.jobs WHERE idempotency_key = 'order-17')"),
	't', 'a restored idempotency key still returns the existing job');

# Rights given with the role helpers are part of the dump.
is( $node->safe_psql('jq_dst',
		"SELECT has_function_privilege('jq_app_producer', "
		  . "'jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text, text, text, text, interval, interval, timestamptz, float8)', 'EXECUTE'), "
		  . "has_function_privilege('jq_app_producer', 'jobqueue.jq_claim(text, int, text, interval)', 'EXECUTE'), "
		  . "has_table_privilege('jq_app_producer', 'jobqueue.jobs', 'SELECT')"),
	't|f|f', 'the producer grant is restored, and nothing more');

# The claim order and the reaper work on the restored table.
is( $node->safe_psql('jq_dst',
		"SELECT payload->>'vip' FROM jobqueue.jq_claim('mail', 1, 'after-restore')"),
	'true', 'the highest priority job is claimed first after the restore');

done_testing();
