# The background worker runs as the bootstrap superuser in every database.
# A database owner without any superuser right must not be able to make it
# run code of theirs, nor stop it from working through database settings.
#
#  1. The owner of database d creates operators for text =, bigint = and
#     timestamptz <, <= in a schema of theirs that would make them superuser
#     if called by one, and puts that schema first in d's search_path.  After
#     a restart (the worker connects afresh, with d's settings), the worker
#     reaps an expired lease and purges a finished job: none of the hostile
#     functions ran as a superuser and the owner is not superuser.
#  2. The owner sets default_transaction_read_only = on, statement_timeout =
#     1ms and other timeouts, a serializable default isolation and a role on
#     d: reaping and purging still work.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my $node = jq_node('worker_security', extension => 0, settings => {
		'jobqueue.reap_interval' => '100ms',
		'jobqueue.purge_interval' => '100ms',
		'jobqueue.launcher_interval' => '1s' });

# The test's own sessions must not fall into the trap either, nor be
# stopped by the settings of case 2: they pin what the database sets.
$ENV{PGOPTIONS} = '-c search_path=pg_catalog,pg_temp '
  . '-c default_transaction_read_only=off -c statement_timeout=0 '
  . '-c lock_timeout=0 -c idle_in_transaction_session_timeout=0 '
  . '-c default_transaction_isolation=read\ committed -c role=none';

$node->safe_psql('postgres', q{
CREATE ROLE dbowner LOGIN;
CREATE DATABASE d OWNER dbowner;
});
$node->safe_psql('d', q{
CREATE EXTENSION jobqueue;
SELECT jobqueue.jq_create_queue('x', lease_duration => '1 second',
                                backoff_base => '10 milliseconds',
                                backoff_max => '10 milliseconds',
                                retention => '1 second');
});

# What the database owner does, as the database owner.
$node->safe_psql('d', q{
CREATE SCHEMA evil;
CREATE TABLE evil.calls (fn text, usr name, super boolean);
GRANT ALL ON SCHEMA evil TO PUBLIC;
GRANT ALL ON evil.calls TO PUBLIC;

-- records every call; escalates when called by a superuser
CREATE FUNCTION evil.trap(fn text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  su boolean := (SELECT r.rolsuper FROM pg_catalog.pg_roles r
                 WHERE r.rolname OPERATOR(pg_catalog.=) current_user);
BEGIN
  INSERT INTO evil.calls VALUES (fn, current_user, su);
  IF su THEN
    EXECUTE 'ALTER ROLE dbowner SUPERUSER';
  END IF;
END $$;

CREATE FUNCTION evil.texteq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.trap('texteq'); RETURN pg_catalog.texteq(a, b); END $$;
CREATE FUNCTION evil.int8eq(a bigint, b bigint) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.trap('int8eq'); RETURN pg_catalog.int8eq(a, b); END $$;
CREATE FUNCTION evil.tslt(a timestamptz, b timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.trap('timestamptz_lt'); RETURN pg_catalog.timestamptz_lt(a, b); END $$;
CREATE FUNCTION evil.tsle(a timestamptz, b timestamptz) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN PERFORM evil.trap('timestamptz_le'); RETURN pg_catalog.timestamptz_le(a, b); END $$;

CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.texteq);
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8eq);
CREATE OPERATOR evil.< (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tslt);
CREATE OPERATOR evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = evil.tsle);

ALTER DATABASE d SET search_path = evil, pg_catalog;
}, extra_params => [ '-U', 'dbowner' ]);

# The trap is armed: a session with d's own search_path calls the operators.
{
	local $ENV{PGOPTIONS} = '';
	$node->safe_psql('d',
		q{SELECT 'a'::text = 'b', 1::bigint = 2::bigint, now() < now(), now() <= now()},
		extra_params => [ '-U', 'dbowner' ]);
}
is( $node->safe_psql('d',
		'SELECT string_agg(DISTINCT fn, \',\' ORDER BY fn) FROM evil.calls WHERE NOT super'),
	'int8eq,texteq,timestamptz_le,timestamptz_lt',
	'the hostile operators are found through the database search_path');
$node->safe_psql('d', 'TRUNCATE evil.calls');

# A job whose lease will expire, and a job that will be purged.
sub expiring_and_finished_jobs
{
	my ($tag) = @_;
	my ($expiring, $finished) = split /\|/, $node->safe_psql('d', qq{
SELECT jobqueue.jq_enqueue('x', '{"case": "$tag", "fate": "reaped"}', priority => 1),
       jobqueue.jq_enqueue('x', '{"case": "$tag", "fate": "purged"}');
});
	$node->safe_psql('d', q{
SELECT count(*) FROM jobqueue.jq_claim('x', 1, 'vanishing', lease => '1 second');
SELECT jobqueue.jq_complete(c.id, c.token) FROM jobqueue.jq_claim('x', 1, 'finisher') c;
});
	return ($expiring, $finished);
}

# After a restart (the worker connects afresh, with d's settings): the worker
# reaps and purges, and no hostile function ran as a superuser.
sub worker_works_unharmed
{
	my ($case) = @_;
	$node->restart;
	ok(worker_attached($node, 'd'), "$case: the worker is attached after the restart");
	my ($reaped, $purged) = expiring_and_finished_jobs($case);
	ok( $node->poll_query_until('d', qq{
SELECT status = 'pending' AND last_error_code = 'LEASE_EXPIRED'
FROM jobqueue.jobs WHERE id = $reaped}),
		"$case: the worker reaped the expired lease");
	ok( $node->poll_query_until('d',
			"SELECT NOT EXISTS (SELECT FROM jobqueue.jobs WHERE id = $purged)"),
		"$case: the worker purged the finished job");
	is($node->safe_psql('d', 'SELECT last_error FROM jobqueue.jq_worker_status()'),
		'', "$case: the worker recorded no error");
	is($node->safe_psql('d', 'SELECT count(*) FROM evil.calls WHERE super'),
		'0', "$case: no hostile function ran as a superuser");
	is($node->safe_psql('postgres',
			"SELECT rolsuper FROM pg_roles WHERE rolname = 'dbowner'"),
		'f', "$case: the database owner is not superuser");
	return;
}

# 1. search_path hijacking
worker_works_unharmed('hostile search_path');

# 2. settings that would stop the worker's transactions, or run it as
# another role
$node->safe_psql('d', q{
ALTER DATABASE d SET default_transaction_read_only = on;
ALTER DATABASE d SET statement_timeout = '1ms';
ALTER DATABASE d SET lock_timeout = '1ms';
ALTER DATABASE d SET idle_in_transaction_session_timeout = '1ms';
ALTER DATABASE d SET default_transaction_isolation = 'serializable';
ALTER DATABASE d SET role = 'dbowner';
}, extra_params => [ '-U', 'dbowner' ]);
$node->safe_psql('d', 'DELETE FROM jobqueue.jobs');
worker_works_unharmed('read-only, 1 ms timeouts, serializable, a role');

$node->stop;
done_testing();
