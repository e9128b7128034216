# Upgrades: ALTER EXTENSION jobqueue UPDATE from every earlier release.
#
# For each earlier version: install it, fill it with jobs in several
# states, update to the current version, and check that
#   - the extension's catalog entries (every member object, function
#     definitions with their settings, columns, defaults, constraints,
#     indexes, reloptions, views, statistics objects, comments, ACLs,
#     initial privileges and pg_dump configuration) are identical to a fresh
#     CREATE EXTENSION in another database;
#   - every job is unchanged, and the functions (old and new) work on them.
#
# The server runs without shared_preload_libraries, which also shows that
# everything but the shared-memory features works then, and that the
# counters say why they are missing.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use JobqueueTest;
use Test::More;

my @earlier_versions = ('1.0', '1.1', '1.2', '1.3');

my $node = jq_node('upgrade', preload => 0, extension => 0);

$node->safe_psql('postgres', 'CREATE DATABASE jq_fresh');
$node->safe_psql('jq_fresh', 'CREATE EXTENSION jobqueue');
my $current = $node->safe_psql('jq_fresh',
	"SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'");
is($current, $node->safe_psql('postgres',
		"SELECT default_version FROM pg_available_extensions WHERE name = 'jobqueue'"),
	"a fresh install is at the default version ($current)");

# Everything the extension consists of, as text without OIDs.
my $catalog_sql = q{
WITH ext AS (SELECT oid, extconfig, extcondition FROM pg_extension WHERE extname = 'jobqueue'),
members AS (
	SELECT d.classid, d.objid FROM pg_depend d, ext
	WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
),
lines AS (
	-- every member object
	SELECT 'object ' || pg_describe_object(m.classid, m.objid, 0) AS line FROM members m
	-- functions: full definition (language, volatility, SECURITY DEFINER,
	-- search_path, body), ACL
	UNION ALL
	SELECT 'function ' || p.oid::regprocedure || E'\n' || pg_get_functiondef(p.oid)
		|| E'\nacl ' || coalesce(p.proacl::text, '(default)')
	FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
	WHERE p.prokind <> 'a'
	-- relations: kind, options, ACL
	UNION ALL
	SELECT 'relation ' || c.oid::regclass || ' kind ' || c.relkind::text
		|| ' options ' || coalesce(c.reloptions::text, '{}')
		|| ' acl ' || coalesce(c.relacl::text, '(default)')
		|| ' persistence ' || c.relpersistence::text
	FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
	-- columns
	UNION ALL
	SELECT 'column ' || a.attrelid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
		|| CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
		|| CASE WHEN a.attidentity <> '' THEN ' identity ' || a.attidentity::text ELSE '' END
		|| coalesce(' default ' || pg_get_expr(ad.adbin, ad.adrelid), '')
		|| ' position ' || a.attnum
		|| coalesce(' acl ' || a.attacl::text, '')
	FROM pg_attribute a
	JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = a.attrelid
	LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
	WHERE a.attnum > 0 AND NOT a.attisdropped
	-- constraints and indexes (of the member tables)
	UNION ALL
	SELECT 'constraint ' || co.conrelid::regclass || ' ' || co.conname || ' ' || pg_get_constraintdef(co.oid)
	FROM pg_constraint co JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = co.conrelid
	UNION ALL
	SELECT 'index ' || pg_get_indexdef(i.indexrelid)
		|| ' options ' || coalesce((SELECT c.reloptions::text FROM pg_class c WHERE c.oid = i.indexrelid), '{}')
	FROM pg_index i JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = i.indrelid
	-- views, statistics objects, sequences, types
	UNION ALL
	SELECT 'view ' || c.oid::regclass || E'\n' || pg_get_viewdef(c.oid)
	FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
	WHERE c.relkind = 'v'
	UNION ALL
	SELECT 'statistics ' || pg_get_statisticsobjdef(s.oid)
	FROM pg_statistic_ext s JOIN members m ON m.classid = 'pg_statistic_ext'::regclass AND m.objid = s.oid
	UNION ALL
	SELECT 'sequence ' || s.seqrelid::regclass || ' ' || format_type(s.seqtypid, NULL) || ' start ' || s.seqstart
		|| ' increment ' || s.seqincrement || ' max ' || s.seqmax || ' min ' || s.seqmin
		|| ' cache ' || s.seqcache || ' cycle ' || s.seqcycle::text
	FROM pg_sequence s
	WHERE s.seqrelid IN (SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'jobqueue'::regnamespace)
	UNION ALL
	SELECT 'enum ' || e.enumtypid::regtype || ' ' || string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder)
	FROM pg_enum e JOIN members m ON m.classid = 'pg_type'::regclass AND m.objid = e.enumtypid
	GROUP BY e.enumtypid
	-- comments on members, on their columns too
	UNION ALL
	SELECT 'comment ' || pg_describe_object(de.classoid, de.objoid, de.objsubid) || ': ' || de.description
	FROM pg_description de JOIN members m ON m.classid = de.classoid AND m.objid = de.objoid
	-- the schema and its ACL
	UNION ALL
	SELECT 'schema ' || n.nspname || ' acl ' || coalesce(n.nspacl::text, '(default)')
	FROM pg_namespace n WHERE n.nspname = 'jobqueue'
	-- initial privileges (what pg_dump compares grants against)
	UNION ALL
	SELECT 'init_privs ' || pg_describe_object(ip.classoid, ip.objoid, ip.objsubid) || ' ' || ip.privtype::text
		|| ' ' || ip.initprivs::text
	FROM pg_init_privs ip JOIN members m ON m.classid = ip.classoid AND m.objid = ip.objoid
	-- what pg_dump dumps the data of
	UNION ALL
	SELECT 'config_dump ' || cfg.rel::regclass || ' condition ' || quote_literal(coalesce(ext.extcondition[cfg.n], ''))
	FROM ext, unnest(ext.extconfig) WITH ORDINALITY AS cfg(rel, n)
)
SELECT string_agg(line, E'\n' ORDER BY line) FROM lines
};

my $fresh_catalog = $node->safe_psql('jq_fresh', $catalog_sql);
like($fresh_catalog, qr/^object view jobqueue\.queue_stats$/m, 'the catalog listing sees the 1.1 objects');
like($fresh_catalog, qr/^config_dump jobqueue\.jobs_id_seq/m, 'and the dump configuration');

# Jobs as text, with every column of the version installed first (columns
# an update adds are left out: they did not exist before it).
my $columns_sql = q{
	SELECT string_agg(quote_literal(a.attname), ', ' ORDER BY a.attnum) FROM pg_attribute a
	WHERE a.attrelid = 'jobqueue.jobs'::regclass AND a.attnum > 0 AND NOT a.attisdropped
};
sub jobs_sql
{
	my ($columns) = @_;
	return qq{
	SELECT string_agg((SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(to_jsonb(j)) e
					   WHERE e.key IN ($columns))::text, E'\n' ORDER BY j.id)
	FROM jobqueue.jobs j};
}

foreach my $version (@earlier_versions)
{
	my $db = 'jq_from_' . ($version =~ s/\W/_/gr);
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION jobqueue VERSION '$version'");
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'"),
		$version, "version $version installed");

	# fill it with jobs in several states, as the old functions leave them.
	# Written as SQL: the library is the new one, and its statements need
	# the current schema (install it, then ALTER EXTENSION UPDATE at once).
	$node->safe_psql(
		$db, q{
		INSERT INTO jobqueue.queues (queue_name, max_attempts, lease_duration)
		VALUES ('old', 2, '1 hour');
		INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts)
		SELECT 'old', jsonb_build_object('n', i), 2 FROM generate_series(1, 50) i;
		INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, idempotency_key)
		VALUES ('old', '{"k": true}', 2, 'key-1');
		INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, available_at)
		VALUES ('old', '{"later": true}', 2, now() + interval '1 day');
		CREATE TABLE held AS
		WITH c AS (SELECT j.id FROM jobqueue.jobs j
				   WHERE j.status = 'pending' AND j.available_at <= now()
				   ORDER BY j.priority DESC, j.available_at, j.id LIMIT 10),
		u AS (UPDATE jobqueue.jobs j SET status = 'running', attempt_count = j.attempt_count + 1,
				lease_owner = 'old-worker', lease_token = j.lease_token + 1, started_at = now(),
				lease_expires_at = now() + interval '1 hour'
			  FROM c WHERE j.id = c.id RETURNING j.id, j.lease_token AS token)
		SELECT * FROM u;
		UPDATE jobqueue.jobs SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL
		WHERE id IN (SELECT id FROM held ORDER BY id LIMIT 5);
		UPDATE jobqueue.jobs j SET status = 'dead', finished_at = now(), lease_owner = NULL,
			lease_expires_at = NULL, last_error_code = 'E_OLD',
			errors = j.errors || jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(),
				'code', 'E_OLD', 'message', 'failed before the upgrade', 'retryable', false,
				'owner', 'old-worker'))
		WHERE id IN (SELECT id FROM held ORDER BY id LIMIT 1 OFFSET 5);
		UPDATE jobqueue.jobs j SET status = 'pending', available_at = now() + interval '1 hour',
			lease_owner = NULL, lease_expires_at = NULL, last_error_code = 'E_OLD',
			errors = j.errors || jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now(),
				'code', 'E_OLD', 'message', 'retried', 'retryable', true, 'owner', 'old-worker'))
		WHERE id IN (SELECT id FROM held ORDER BY id LIMIT 1 OFFSET 6);
		UPDATE jobqueue.jobs SET status = 'cancelled', finished_at = now(), lease_expires_at = NULL
		WHERE id IN (SELECT id FROM held ORDER BY id LIMIT 1 OFFSET 7);
	});
	# the current library on a schema not updated yet: a job function that
	# needs a newer column says so (42703, as docs/operations.md says), also
	# jq_cancel, whose statement names a status that 1.2 added
	if ($version eq '1.0' || $version eq '1.1')
	{
		my ($ret, $out, $err) = $node->psql($db,
			q{SELECT jobqueue.jq_cancel(id) FROM jobqueue.jobs ORDER BY id LIMIT 1},
			extra_params => [ '-v', 'VERBOSITY=verbose' ]);
		like($err, qr/ERROR:  42703/,
			"before the update from $version, jq_cancel fails with 42703 (undefined column)");
	}
	my $jobs_sql = jobs_sql($node->safe_psql($db, $columns_sql));
	my $jobs_before = $node->safe_psql($db, $jobs_sql);

	$node->safe_psql($db, 'ALTER EXTENSION jobqueue UPDATE');
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'jobqueue'"),
		$current, "ALTER EXTENSION UPDATE takes $version to $current");

	my $upgraded_catalog = $node->safe_psql($db, $catalog_sql);
	is($upgraded_catalog, $fresh_catalog,
		"after the update from $version the catalog equals a fresh install");

	is($node->safe_psql($db, $jobs_sql), $jobs_before, "every job is unchanged by the update from $version");

	# old functions on old jobs, and the new objects, after the update
	is( $node->safe_psql($db,
			"SELECT bool_or(jobqueue.jq_complete(id, token)) FROM (SELECT * FROM held ORDER BY id LIMIT 5) h"),
		'f', 'jobs completed before the update cannot be completed again');
	is( $node->safe_psql($db,
			"SELECT bool_and(jobqueue.jq_heartbeat(id, token) IS NOT NULL) FROM (SELECT * FROM held ORDER BY id OFFSET 8) h"),
		't', 'leases taken before the update are extended after it');
	is( $node->safe_psql($db,
			"SELECT count(*) FROM jobqueue.jq_complete_many("
			  . "ARRAY(SELECT id FROM held ORDER BY id OFFSET 8), ARRAY(SELECT token FROM held ORDER BY id OFFSET 8))"),
		'2', 'and completed with their tokens');
	is( $node->safe_psql($db, "SELECT count(*) FROM jobqueue.jq_claim('old', 5, 'new-worker')"),
		'5', 'jobs enqueued before the update are claimed after it');
	is( $node->safe_psql($db,
			"SELECT pending, ready, scheduled, running, succeeded, dead, cancelled FROM jobqueue.queue_stats"),
		'38|36|2|5|7|1|1', 'queue_stats counts the jobs made before the update');
	$node->safe_psql($db, "CREATE ROLE jq_upgrade_worker_$db");
	is( $node->safe_psql($db,
			"SELECT jobqueue.jq_grant_worker('jq_upgrade_worker_$db'); "
			  . "SELECT has_function_privilege('jq_upgrade_worker_$db', 'jobqueue.jq_claim(text, int, text, interval)', 'EXECUTE')"
		),
		"\nt", 'the role helpers work on the updated extension');
}

# A role given a set of rights before the update keeps it whole: the
# worker's set gains jq_complete_and_claim (1.3), the producer's does not.
foreach my $version ('1.1', '1.2')
{
	my $v = $version =~ s/\W/_/gr;
	my $db = "jq_rights_from_$v";
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql(
		$db, qq{
		CREATE EXTENSION jobqueue VERSION '$version';
		CREATE ROLE jq_old_worker_$v;
		CREATE ROLE jq_old_producer_$v;
		SELECT jobqueue.jq_grant_worker('jq_old_worker_$v');
		SELECT jobqueue.jq_grant_producer('jq_old_producer_$v');
	});
	$node->safe_psql($db, 'ALTER EXTENSION jobqueue UPDATE');
	my $cac = 'jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])';
	is( $node->safe_psql($db,
			"SELECT has_function_privilege('jq_old_worker_$v', '$cac', 'EXECUTE'), "
			  . "has_function_privilege('jq_old_producer_$v', '$cac', 'EXECUTE'), "
			  . "has_function_privilege('public', '$cac', 'EXECUTE')"),
		't|f|f', "a worker role from $version may call jq_complete_and_claim after the update, a producer and PUBLIC may not");
	$node->safe_psql($db, "SELECT jobqueue.jq_create_queue('r'); SELECT jobqueue.jq_enqueue('r', '{}')");
	is( $node->safe_psql($db,
			"SET ROLE jq_old_worker_$v; SELECT count(*) FROM jobqueue.jq_complete_and_claim('r', '{}', '{}', 1, 'w')"),
		'1', "and it claims with it");
}

# 1.4 gives each row of job_dependencies the queues of its two jobs: the
# update fills them in from the jobs (a row naming a job that is gone gets
# the other's queue; a row naming neither goes).  The rows are written as
# the enqueues of those versions wrote them (this library enqueues on
# their schemas only without depends_on).
foreach my $version (grep { $_ ge '1.2' } @earlier_versions)
{
	(my $v = $version) =~ tr/./_/;
	my $db = "jq_deps_$v";
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	my ($a, $b, $c) = split /\n/, $node->safe_psql(
		$db, qq{
		CREATE EXTENSION jobqueue VERSION '$version';
		INSERT INTO jobqueue.queues (queue_name) VALUES ('da'), ('db');
		INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, has_dependents)
		VALUES ('da', '{"n": "a"}', 3, true) RETURNING id AS a \\gset
		INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, status, dependencies_left, has_dependents)
		VALUES ('db', '{"n": "b"}', 3, 'waiting', 1, true) RETURNING id AS b \\gset
		INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts, status, dependencies_left)
		VALUES ('da', '{"n": "c"}', 3, 'waiting', 2) RETURNING id AS c \\gset
		INSERT INTO jobqueue.job_dependencies (job_id, depends_on)
		VALUES (:b, :a), (:c, :b), (:c, -7), (-8, :a), (-9, -10);
		SELECT :a UNION ALL SELECT :b UNION ALL SELECT :c;
	});
	$node->safe_psql($db, 'ALTER EXTENSION jobqueue UPDATE');
	is( $node->safe_psql(
			$db, qq{
			SELECT string_agg(format('%s>%s %s>%s', job_id, depends_on, job_queue, queue_name), ', '
				ORDER BY job_id, depends_on)
			FROM jobqueue.job_dependencies}),
		"-8>$a da>da, $b>$a db>da, $c>-7 da>da, $c>$b da>db",
		"from $version, every dependency row names the queues of its jobs");
	is( $node->safe_psql(
			$db, q{
			SELECT jobqueue.jq_complete('da', id, token) FROM jobqueue.jq_claim('da', 1, 'w');
			SELECT status FROM jobqueue.jobs WHERE queue_name = 'db';}),
		"t\npending", "and the dependent of a job completed after the update is released");
}

is_deeply(
	[ split /\n/,
		$node->safe_psql('postgres',
			"SELECT source || ' -> ' || target || ': ' || path FROM pg_extension_update_paths('jobqueue') "
			  . "WHERE path IS NOT NULL AND target = '$current' ORDER BY source") ],
	[ map {
			my $from = $_;
			my @chain = grep { $_ eq $from .. $_ eq $current } (@earlier_versions, $current);
			"$from -> $current: " . join('--', @chain)
		} @earlier_versions ],
	'every earlier version updates to the current one through the chain of releases');

# Without shared_preload_libraries: the counters say why they are missing,
# the hot path works (and counts nothing).
my ($ret, $stdout, $stderr) = $node->psql('jq_fresh', 'SELECT * FROM jobqueue.jq_counters()',
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
isnt($ret, 0, 'jq_counters() fails without shared_preload_libraries');
like($stderr, qr/55000: jobqueue event counters are not available/,
	'with SQLSTATE 55000 (object_not_in_prerequisite_state)');
like($stderr, qr/HINT:  Add jobqueue to shared_preload_libraries/, 'and a hint saying what to do');
($ret, $stdout, $stderr) = $node->psql('jq_fresh', 'SELECT jobqueue.jq_counters_reset()');
like($stderr, qr/jobqueue event counters are not available/, 'so does jq_counters_reset()');
is( $node->safe_psql(
		'jq_fresh', q{
		SELECT jobqueue.jq_create_queue('np');
		SELECT jobqueue.jq_enqueue('np', '{}');
		SELECT jobqueue.jq_complete(id, token) FROM jobqueue.jq_claim('np', 1, 'w');
	}),
	"\n1\nt", 'the hot path works without the preloaded library');

done_testing();
