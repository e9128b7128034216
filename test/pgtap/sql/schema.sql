--
-- pgTAP: the schema of jobqueue 1.0 -- types, tables, columns, keys,
-- indexes and the signatures of the SQL functions.  Objects added by later
-- versions are not checked here, and nothing asserts that these are the
-- only objects.
--
\set QUIET 1
\set ON_ERROR_STOP 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION pgtap;
CREATE EXTENSION jobqueue;
-- names in the expected text are schema-qualified; intervals in the
-- default style
SET LOCAL search_path = public;
SET LOCAL intervalstyle = postgres;

SELECT * FROM no_plan();

--
-- schema and extension
--
SELECT has_schema('jobqueue');
SELECT has_extension('jobqueue', 'jobqueue', 'extension jobqueue is in schema jobqueue');
SELECT is((SELECT extrelocatable FROM pg_extension WHERE extname = 'jobqueue'), false,
	'jobqueue is not relocatable');

--
-- job_status
--
SELECT has_enum('jobqueue', 'job_status', 'enum jobqueue.job_status exists');
SELECT enum_has_labels('jobqueue', 'job_status',
	ARRAY['waiting', 'pending', 'running', 'succeeded', 'dead', 'cancelled']);

--
-- jobqueue.queues
--
SELECT has_table('jobqueue', 'queues', 'table jobqueue.queues exists');
SELECT has_pk('jobqueue', 'queues', 'jobqueue.queues has a primary key');
SELECT col_is_pk('jobqueue', 'queues', 'queue_name', 'queues.queue_name is the primary key');

SELECT col_type_is('jobqueue', 'queues', c.col, c.typ, format('queues.%s is %s', c.col, c.typ))
FROM (VALUES ('queue_name', 'text'), ('max_attempts', 'integer'),
	('lease_duration', 'interval'), ('max_runtime', 'interval'),
	('backoff_base', 'interval'), ('backoff_max', 'interval'),
	('retention', 'interval'), ('paused', 'boolean'), ('notify', 'boolean'),
	('created_at', 'timestamp with time zone')) c(col, typ);
SELECT col_not_null('jobqueue', 'queues', c.col, format('queues.%s is not null', c.col))
FROM unnest(ARRAY['queue_name', 'max_attempts', 'lease_duration', 'max_runtime',
	'backoff_base', 'backoff_max', 'retention', 'paused', 'notify', 'created_at']) c(col);
SELECT col_default_is('jobqueue', 'queues', c.col, c.def, format('queues.%s defaults to %s', c.col, c.def))
FROM (VALUES ('max_attempts', '8'), ('lease_duration', '60 seconds'),
	('max_runtime', '1 hour'), ('backoff_base', '10 seconds'),
	('backoff_max', '1 hour'), ('retention', '7 days'), ('paused', 'false'),
	('notify', 'true'), ('created_at', 'now()')) c(col, def);
SELECT col_hasnt_default('jobqueue', 'queues', 'queue_name', 'queues.queue_name has no default');
SELECT col_has_check('jobqueue', 'queues', c.col, format('queues.%s has a check constraint', c.col))
FROM unnest(ARRAY['queue_name', 'max_attempts', 'lease_duration', 'max_runtime',
	'backoff_base', 'backoff_max', 'retention']) c(col);

--
-- jobqueue.jobs
--
SELECT has_table('jobqueue', 'jobs', 'table jobqueue.jobs exists');
SELECT has_pk('jobqueue', 'jobs', 'jobqueue.jobs has a primary key');
SELECT col_is_pk('jobqueue', 'jobs', 'id', 'jobs.id is the primary key');
SELECT is((SELECT attidentity::text FROM pg_attribute
	WHERE attrelid = 'jobqueue.jobs'::regclass AND attname = 'id'), 'a',
	'jobs.id is generated always as identity');

SELECT col_type_is('jobqueue', 'jobs', c.col, c.typ, format('jobs.%s is %s', c.col, c.typ))
FROM (VALUES ('id', 'bigint'), ('queue_name', 'text'), ('payload', 'jsonb'),
	('status', 'jobqueue.job_status'), ('priority', 'integer'),
	('available_at', 'timestamp with time zone'), ('attempt_count', 'integer'),
	('max_attempts', 'jobqueue.attempt_limit'), ('lease_owner', 'text'),
	('lease_token', 'jobqueue.fencing_token'),
	('lease_expires_at', 'timestamp with time zone'),
	('started_at', 'timestamp with time zone'),
	('finished_at', 'timestamp with time zone'),
	('created_at', 'timestamp with time zone'), ('idempotency_key', 'text'),
	('last_error_code', 'text'), ('errors', 'jsonb')) c(col, typ);
SELECT col_not_null('jobqueue', 'jobs', c.col, format('jobs.%s is not null', c.col))
FROM unnest(ARRAY['id', 'queue_name', 'payload', 'status', 'priority', 'available_at',
	'attempt_count', 'max_attempts', 'lease_token', 'created_at', 'errors']) c(col);
SELECT col_is_null('jobqueue', 'jobs', c.col, format('jobs.%s is nullable', c.col))
FROM unnest(ARRAY['lease_owner', 'lease_expires_at', 'started_at', 'finished_at',
	'idempotency_key', 'last_error_code']) c(col);
SELECT col_default_is('jobqueue', 'jobs', c.col, c.def, format('jobs.%s defaults to %s', c.col, c.def))
FROM (VALUES ('status', 'pending'), ('priority', '0'), ('available_at', 'now()'),
	('attempt_count', '0'), ('lease_token', '0'), ('created_at', 'now()'),
	('errors', '[]')) c(col, def);
SELECT col_hasnt_default('jobqueue', 'jobs', c.col, format('jobs.%s has no default', c.col))
FROM unnest(ARRAY['queue_name', 'payload', 'max_attempts', 'lease_owner',
	'lease_expires_at', 'started_at', 'finished_at', 'idempotency_key',
	'last_error_code']) c(col);

-- no foreign key from jobs to queues: its check would lock the queue's row
-- at every enqueue
SELECT hasnt_fk('jobqueue', 'jobs', 'jobqueue.jobs has no foreign key');
SELECT col_isnt_fk('jobqueue', 'jobs', 'queue_name', 'jobs.queue_name is not a foreign key');

--
-- indexes, with their columns and partial predicates
--
SELECT has_index('jobqueue', 'queues', 'queues_pkey', 'queue_name', 'index queues_pkey exists');
SELECT index_is_primary('jobqueue', 'queues', 'queues_pkey', 'queues_pkey is the primary key');
SELECT has_index('jobqueue', 'jobs', 'jobs_pkey', 'id', 'index jobs_pkey exists');
SELECT index_is_primary('jobqueue', 'jobs', 'jobs_pkey', 'jobs_pkey is the primary key');
SELECT has_index('jobqueue', 'jobs', i.name, i.cols, format('index %s exists on (%s)', i.name, array_to_string(i.cols, ', ')))
FROM (VALUES ('jobs_claim_idx', ARRAY['queue_name', 'priority', 'available_at', 'id']::name[]),
	('jobs_lease_idx', ARRAY['lease_expires_at']::name[]),
	('jobs_status_idx', ARRAY['status', 'queue_name', 'finished_at']::name[]),
	('jobs_idempotency_key_idx', ARRAY['queue_name', 'idempotency_key']::name[])) i(name, cols);
SELECT index_is_type('jobqueue', 'jobs', i.name, 'btree', format('%s is a btree index', i.name))
FROM unnest(ARRAY['jobs_claim_idx', 'jobs_lease_idx', 'jobs_status_idx',
	'jobs_idempotency_key_idx']) i(name);
SELECT index_is_unique('jobqueue', 'jobs', 'jobs_idempotency_key_idx',
	'jobs_idempotency_key_idx is unique');
SELECT isnt((SELECT indisunique FROM pg_index WHERE indexrelid = 'jobqueue.jobs_claim_idx'::regclass),
	true, 'jobs_claim_idx is not unique');
SELECT is(pg_get_indexdef(format('jobqueue.%s', i.name)::regclass), i.def,
	format('definition of %s', i.name))
FROM (VALUES
	('jobs_claim_idx', 'CREATE INDEX jobs_claim_idx ON jobqueue.jobs USING btree (queue_name, priority DESC, available_at, id) WHERE (status = ''pending''::jobqueue.job_status)'),
	('jobs_lease_idx', 'CREATE INDEX jobs_lease_idx ON jobqueue.jobs USING btree (lease_expires_at) WHERE (status = ''running''::jobqueue.job_status)'),
	('jobs_status_idx', 'CREATE INDEX jobs_status_idx ON jobqueue.jobs USING btree (status, queue_name, finished_at) WHERE ((status < ''pending''::jobqueue.job_status) OR (status > ''running''::jobqueue.job_status))'),
	('jobs_idempotency_key_idx', 'CREATE UNIQUE INDEX jobs_idempotency_key_idx ON jobqueue.jobs USING btree (queue_name, idempotency_key) WHERE (idempotency_key IS NOT NULL)')
) i(name, def);

--
-- the functions of 1.0: arguments with their names and defaults, result,
-- language C, volatile, SECURITY DEFINER with a fixed search_path, and not
-- strict (a NULL argument is an error that names it, not a NULL result)
--
CREATE TEMP TABLE fn (ord int, name name, argtypes name[], args text, result text);
INSERT INTO fn VALUES
	(1, 'jq_create_queue', '{text,integer,interval,interval,interval,interval,interval,boolean,integer,boolean,text,interval,double precision,integer,double precision,integer,interval,integer,integer,interval}',
	 'queue_name text, max_attempts integer DEFAULT 8, lease_duration interval DEFAULT ''00:01:00''::interval, max_runtime interval DEFAULT ''01:00:00''::interval, backoff_base interval DEFAULT ''00:00:10''::interval, backoff_max interval DEFAULT ''01:00:00''::interval, retention interval DEFAULT ''7 days''::interval, notify_finished boolean DEFAULT false, group_concurrency integer DEFAULT NULL::integer, group_ordered boolean DEFAULT false, fairness text DEFAULT ''priority''::text, priority_aging interval DEFAULT NULL::interval, rate_limit double precision DEFAULT NULL::double precision, rate_burst integer DEFAULT NULL::integer, group_rate_limit double precision DEFAULT NULL::double precision, group_rate_burst integer DEFAULT NULL::integer, max_wait interval DEFAULT NULL::interval, max_pending integer DEFAULT NULL::integer, group_max_pending integer DEFAULT NULL::integer, fair_share_half_life interval DEFAULT ''01:00:00''::interval',
	 'void'),
	(2, 'jq_alter_queue', '{text,integer,interval,interval,interval,interval,interval,boolean,boolean,integer,boolean,text,interval,double precision,integer,double precision,integer,interval,integer,integer,interval}',
	 'queue_name text, max_attempts integer DEFAULT NULL::integer, lease_duration interval DEFAULT NULL::interval, max_runtime interval DEFAULT NULL::interval, backoff_base interval DEFAULT NULL::interval, backoff_max interval DEFAULT NULL::interval, retention interval DEFAULT NULL::interval, notify boolean DEFAULT NULL::boolean, notify_finished boolean DEFAULT NULL::boolean, group_concurrency integer DEFAULT NULL::integer, group_ordered boolean DEFAULT NULL::boolean, fairness text DEFAULT NULL::text, priority_aging interval DEFAULT NULL::interval, rate_limit double precision DEFAULT NULL::double precision, rate_burst integer DEFAULT NULL::integer, group_rate_limit double precision DEFAULT NULL::double precision, group_rate_burst integer DEFAULT NULL::integer, max_wait interval DEFAULT NULL::interval, max_pending integer DEFAULT NULL::integer, group_max_pending integer DEFAULT NULL::integer, fair_share_half_life interval DEFAULT NULL::interval',
	 'void'),
	(3, 'jq_drop_queue', '{text,boolean}', 'queue_name text, force boolean DEFAULT false', 'void'),
	(4, 'jq_pause_queue', '{text}', 'queue_name text', 'void'),
	(5, 'jq_resume_queue', '{text}', 'queue_name text', 'void'),
	(6, 'jq_enqueue', '{text,jsonb,integer,timestamp with time zone,integer,text,bigint[],text,text,text,text,interval,interval,timestamp with time zone,double precision}',
	 'queue_name text, payload jsonb, priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, max_attempts integer DEFAULT NULL::integer, idempotency_key text DEFAULT NULL::text, depends_on bigint[] DEFAULT NULL::bigint[], group_key text DEFAULT NULL::text, traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text, debounce_key text DEFAULT NULL::text, debounce interval DEFAULT NULL::interval, debounce_max_wait interval DEFAULT NULL::interval, start_by timestamp with time zone DEFAULT NULL::timestamp with time zone, cost double precision DEFAULT NULL::double precision',
	 'bigint'),
	(7, 'jq_enqueue_many', '{text,jsonb[],integer,timestamp with time zone,bigint[],text[],text,text,timestamp with time zone,double precision}',
	 'queue_name text, payloads jsonb[], priority integer DEFAULT 0, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone, depends_on bigint[] DEFAULT NULL::bigint[], group_keys text[] DEFAULT NULL::text[], traceparent text DEFAULT NULL::text, tracestate text DEFAULT NULL::text, start_by timestamp with time zone DEFAULT NULL::timestamp with time zone, cost double precision DEFAULT NULL::double precision',
	 'SETOF bigint'),
	(8, 'jq_claim', '{text,integer,text,interval}',
	 'queue_name text, n integer, owner text, lease interval DEFAULT NULL::interval',
	 'TABLE(id bigint, payload jsonb, attempt integer, token bigint, lease_expires_at timestamp with time zone, traceparent text, tracestate text, trace_origin text)'),
	(9, 'jq_complete', '{bigint,bigint,jsonb}', 'id bigint, token bigint, result jsonb DEFAULT NULL::jsonb', 'boolean'),
	(10, 'jq_complete_many', '{bigint[],bigint[],jsonb[]}', 'ids bigint[], tokens bigint[], results jsonb[] DEFAULT NULL::jsonb[]', 'SETOF bigint'),
	(11, 'jq_fail', '{bigint,bigint,text,text,boolean,interval,jsonb,text}',
	 'id bigint, token bigint, error_code text, error_message text DEFAULT NULL::text, retryable boolean DEFAULT true, retry_in interval DEFAULT NULL::interval, error_detail jsonb DEFAULT NULL::jsonb, stack text DEFAULT NULL::text',
	 'jobqueue.job_status'),
	(12, 'jq_heartbeat', '{bigint,bigint,interval}',
	 'id bigint, token bigint, extend interval DEFAULT NULL::interval', 'timestamp with time zone'),
	(13, 'jq_release', '{bigint,bigint,interval}',
	 'id bigint, token bigint, delay interval DEFAULT ''00:00:00''::interval', 'boolean'),
	(14, 'jq_cancel', '{bigint}', 'id bigint', 'boolean'),
	(15, 'jq_retry', '{bigint,timestamp with time zone}',
	 'id bigint, run_at timestamp with time zone DEFAULT NULL::timestamp with time zone', 'boolean'),
	(16, 'jq_retry_dead', '{text,text,integer}',
	 'queue_name text, error_code text DEFAULT NULL::text, max_jobs integer DEFAULT 1000', 'bigint'),
	(17, 'jq_reap', '{integer}', 'max_jobs integer DEFAULT 10000', 'bigint'),
	(18, 'jq_purge', '{text,interval,integer}',
	 'queue_name text, older_than interval DEFAULT NULL::interval, max_jobs integer DEFAULT 10000', 'bigint'),
	(19, 'jq_explain_claim', '{text,integer}', 'queue_name text, n integer DEFAULT 1', 'SETOF text'),
	(20, 'jq_progress', '{bigint,bigint,jsonb}', 'id bigint, token bigint, progress jsonb', 'boolean'),
	(21, 'jq_job', '{bigint}', 'id bigint',
	 'TABLE(id bigint, queue_name text, status jobqueue.job_status, attempt integer, max_attempts integer, priority integer, result jsonb, progress jsonb, last_error_code text, errors jsonb, created_at timestamp with time zone, available_at timestamp with time zone, started_at timestamp with time zone, finished_at timestamp with time zone, waiting_for bigint[], debounce_key text, start_by timestamp with time zone, cost double precision)'),
	(22, 'jq_complete_and_claim', '{text,bigint[],bigint[],integer,text,interval,jsonb[]}',
	 'queue_name text, ids bigint[], tokens bigint[], n integer, owner text, lease interval DEFAULT NULL::interval, results jsonb[] DEFAULT NULL::jsonb[]',
	 'TABLE(id bigint, payload jsonb, attempt integer, token bigint, lease_expires_at timestamp with time zone, traceparent text, tracestate text, trace_origin text)'),
	(23, 'jq_jobs', '{text,jobqueue.job_status,integer,bigint,text,text,"timestamp with time zone",bigint}',
	 'queue_name text, status jobqueue.job_status DEFAULT NULL::jobqueue.job_status, max_jobs integer DEFAULT 100, before_id bigint DEFAULT NULL::bigint, group_key text DEFAULT NULL::text, error_code text DEFAULT NULL::text, before_finished_at timestamp with time zone DEFAULT NULL::timestamp with time zone, job_id bigint DEFAULT NULL::bigint',
	 'TABLE(id bigint, queue_name text, status jobqueue.job_status, priority integer, group_key text, attempt integer, max_attempts integer, created_at timestamp with time zone, available_at timestamp with time zone, started_at timestamp with time zone, finished_at timestamp with time zone, lease_owner text, lease_expires_at timestamp with time zone, last_error_code text, last_error_message text, payload jsonb, result jsonb, progress jsonb, errors jsonb)'),
	(24, 'jq_schedules', '{}', '',
	 'TABLE(schedule_name text, queue_name text, cron text, timezone text, enabled boolean, catch_up text, priority integer, next_run_at timestamp with time zone, last_run_at timestamp with time zone, last_job_id bigint, created_at timestamp with time zone, payload jsonb)');

-- the function of each row, by its argument types
CREATE FUNCTION pg_temp.fn_oid(fname name, argtypes name[]) RETURNS regprocedure
LANGUAGE sql AS $$
	SELECT to_regprocedure(format('jobqueue.%I(%s)', fname, array_to_string(argtypes, ',')))
$$;

SELECT has_function('jobqueue', name, argtypes) FROM fn ORDER BY ord;
SELECT is(pg_get_function_arguments(pg_temp.fn_oid(name, argtypes)), args,
	format('arguments of %s', name)) FROM fn ORDER BY ord;
SELECT is(pg_get_function_result(pg_temp.fn_oid(name, argtypes)), result,
	format('result of %s', name)) FROM fn ORDER BY ord;
SELECT function_returns('jobqueue', 'jq_claim', ARRAY['text', 'integer', 'text', 'interval'],
	'setof record');
SELECT function_returns('jobqueue', 'jq_complete_and_claim',
	ARRAY['text', 'bigint[]', 'bigint[]', 'integer', 'text', 'interval', 'jsonb[]'], 'setof record');
SELECT function_returns('jobqueue', 'jq_fail',
	ARRAY['bigint', 'bigint', 'text', 'text', 'boolean', 'interval', 'jsonb', 'text'], 'jobqueue.job_status');
SELECT function_lang_is('jobqueue', name, argtypes, 'c') FROM fn ORDER BY ord;
SELECT volatility_is('jobqueue', name, argtypes, 'volatile') FROM fn ORDER BY ord;
SELECT is_definer('jobqueue', name, argtypes) FROM fn ORDER BY ord;
SELECT is(p.proconfig, ARRAY['search_path=pg_catalog, pg_temp'],
	format('%s runs with search_path = pg_catalog, pg_temp', fn.name))
FROM fn JOIN pg_proc p ON p.oid = pg_temp.fn_oid(fn.name, fn.argtypes) ORDER BY fn.ord;
SELECT is(p.proisstrict, false, format('%s is not strict', fn.name))
FROM fn JOIN pg_proc p ON p.oid = pg_temp.fn_oid(fn.name, fn.argtypes) ORDER BY fn.ord;
SELECT is(p.prosrc, fn.name::text, format('%s is the C function %s', fn.name, fn.name))
FROM fn JOIN pg_proc p ON p.oid = pg_temp.fn_oid(fn.name, fn.argtypes) ORDER BY fn.ord;

--
-- the extension owns its objects (pg_dump and DROP EXTENSION see them)
--
SELECT is((SELECT count(*)::int FROM pg_depend d
	WHERE d.refclassid = 'pg_extension'::regclass
	  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'jobqueue')
	  AND d.deptype = 'e'
	  AND ((d.classid = 'pg_proc'::regclass AND d.objid IN (SELECT pg_temp.fn_oid(name, argtypes) FROM fn))
	    OR (d.classid = 'pg_class'::regclass AND d.objid IN ('jobqueue.jobs'::regclass, 'jobqueue.queues'::regclass))
	    OR (d.classid = 'pg_type'::regclass AND d.objid = 'jobqueue.job_status'::regtype))),
	27, 'the 24 functions, 2 tables and the enum belong to the extension');
-- jq_complete_and_claim (1.3): not for PUBLIC, in the worker's set of rights
SELECT ok(NOT has_function_privilege('public',
	'jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])', 'EXECUTE'),
	'PUBLIC may not execute jq_complete_and_claim');
SELECT ok('jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])'::regprocedure
	IN (SELECT * FROM jobqueue.jq_role_functions('worker')), 'jq_grant_worker hands out jq_complete_and_claim');
SELECT ok('jobqueue.jq_complete_and_claim(text, bigint[], bigint[], integer, text, interval, jsonb[])'::regprocedure
	NOT IN (SELECT * FROM jobqueue.jq_role_functions('producer')), 'jq_grant_producer does not');
SELECT ok((SELECT 'jobqueue.jobs'::regclass = ANY (extconfig) AND 'jobqueue.queues'::regclass = ANY (extconfig)
	FROM pg_extension WHERE extname = 'jobqueue'), 'pg_dump keeps the rows of jobs and queues');

--
-- results, progress and dependencies (1.2)
--
SELECT col_type_is('jobqueue', 'jobs', c.col, c.typ, format('jobs.%s is %s', c.col, c.typ))
FROM (VALUES ('result', 'jsonb'), ('progress', 'jsonb'), ('dependencies_left', 'jobqueue.dependency_count'),
	('has_dependents', 'boolean')) c(col, typ);
SELECT col_is_null('jobqueue', 'jobs', c.col, format('jobs.%s is nullable', c.col))
FROM unnest(ARRAY['result', 'progress']) c(col);
SELECT col_not_null('jobqueue', 'jobs', c.col, format('jobs.%s is not null', c.col))
FROM unnest(ARRAY['dependencies_left', 'has_dependents']) c(col);
SELECT col_default_is('jobqueue', 'jobs', 'dependencies_left', '0', 'jobs.dependencies_left defaults to 0');
SELECT col_default_is('jobqueue', 'jobs', 'has_dependents', 'false', 'jobs.has_dependents defaults to false');
SELECT col_type_is('jobqueue', 'queues', 'notify_finished', 'boolean', 'queues.notify_finished is boolean');
SELECT col_not_null('jobqueue', 'queues', 'notify_finished', 'queues.notify_finished is not null');
SELECT col_default_is('jobqueue', 'queues', 'notify_finished', 'false', 'queues.notify_finished defaults to false');
SELECT has_table('jobqueue', 'job_dependencies', 'table jobqueue.job_dependencies exists');
SELECT col_is_pk('jobqueue', 'job_dependencies', ARRAY['job_id', 'depends_on'],
	'job_dependencies is keyed by (job_id, depends_on)');
SELECT col_not_null('jobqueue', 'job_dependencies', c.col, format('job_dependencies.%s is not null', c.col))
FROM unnest(ARRAY['job_id', 'depends_on', 'queue_name', 'job_queue', 'deferred']) c(col);
SELECT has_index('jobqueue', 'job_dependencies', 'job_dependencies_depends_on_idx', 'depends_on',
	'index job_dependencies_depends_on_idx exists on (depends_on)');
SELECT col_type_is('jobqueue', 'job_dependencies', 'deferred', 'boolean', 'job_dependencies.deferred is boolean');
SELECT col_default_is('jobqueue', 'job_dependencies', 'deferred', 'false', 'job_dependencies.deferred defaults to false');
SELECT ok(pg_get_expr(i.indpred, i.indrelid) = 'deferred',
	'job_dependencies_deferred_idx holds deferred rows only')
FROM pg_index i WHERE i.indexrelid = 'jobqueue.job_dependencies_deferred_idx'::regclass;
SELECT ok(ARRAY(SELECT e.enumlabel::text FROM pg_catalog.pg_enum e
		WHERE e.enumtypid = 'jobqueue.job_status'::regtype
		  AND e.enumsortorder < (SELECT p.enumsortorder FROM pg_catalog.pg_enum p
								 WHERE p.enumtypid = e.enumtypid AND p.enumlabel = 'pending')
		ORDER BY e.enumsortorder) = '{waiting}',
	'waiting sorts before pending, alone (jobs_status_idx holds it, and its readers test = ''waiting'')');
-- waiting jobs never enter the claim index
SELECT ok(pg_get_expr(i.indpred, i.indrelid) = '(status = ''pending''::jobqueue.job_status)',
	'jobs_claim_idx holds pending jobs only')
FROM pg_index i WHERE i.indexrelid = 'jobqueue.jobs_claim_idx'::regclass;
-- 1.2, ordering and fairness: the group of a job, the queue policy, the
-- groups table and its indexes, the trigger that keeps it
--
SELECT col_type_is('jobqueue', 'jobs', 'group_key', 'text', 'jobs.group_key is text');
SELECT col_is_null('jobqueue', 'jobs', 'group_key', 'jobs.group_key is nullable');
SELECT col_type_is('jobqueue', 'queues', c.col, c.typ, format('queues.%s is %s', c.col, c.typ))
FROM (VALUES ('group_concurrency', 'integer'), ('group_ordered', 'boolean'),
	('fairness', 'text'), ('priority_aging', 'interval')) c(col, typ);
SELECT col_default_is('jobqueue', 'queues', c.col, c.def, format('queues.%s defaults to %s', c.col, c.def))
FROM (VALUES ('group_ordered', 'false'), ('fairness', 'priority')) c(col, def);
SELECT col_has_check('jobqueue', 'queues', c.col, format('queues.%s has a check constraint', c.col))
FROM unnest(ARRAY['group_concurrency', 'fairness', 'priority_aging']) c(col);
SELECT has_table('jobqueue', 'groups', 'table jobqueue.groups exists');
SELECT col_is_pk('jobqueue', 'groups', ARRAY['queue_name', 'group_key'],
	'groups has the primary key (queue_name, group_key)');
SELECT col_type_is('jobqueue', 'groups', 'running', 'integer', 'groups.running is integer');
SELECT has_index('jobqueue', 'jobs', i.name, i.cols, format('index %s exists on (%s)', i.name, array_to_string(i.cols, ', ')))
FROM (VALUES ('jobs_group_idx', ARRAY['queue_name', 'group_key', 'priority', 'available_at', 'id']::name[]),
	('jobs_group_head_idx', ARRAY['queue_name', 'group_key', 'id']::name[])) i(name, cols);
SELECT has_trigger('jobqueue', 'jobs', t, format('trigger %s exists', t))
FROM unnest(ARRAY['jobs_group_insert', 'jobs_group_status', 'jobs_group_delete']::name[]) t;
SELECT has_function('jobqueue', 'jq_group_stats', ARRAY['text']);
SELECT is(pg_get_function_result('jobqueue.jq_group_stats(text)'::regprocedure),
	'SETOF record', 'result of jq_group_stats');
SELECT is_definer('jobqueue', 'jq_group_stats', ARRAY['text']);

--
-- 1.3: the value rules of jobs as domains (checked only when a column is
-- assigned), no CHECK constraint left on jobs, lighter group triggers
--
SELECT has_domain('jobqueue', d, format('domain jobqueue.%s exists', d))
FROM unnest(ARRAY['attempt_limit', 'fencing_token', 'dependency_count', 'debounce_key', 'job_cost']::name[]) d;
SELECT domain_type_is('jobqueue', d.name, d.base, format('domain jobqueue.%s is over %s', d.name, d.base))
FROM (VALUES ('attempt_limit', 'integer'), ('fencing_token', 'bigint'),
	('dependency_count', 'integer'), ('debounce_key', 'text'), ('job_cost', 'double precision')) d(name, base);
SELECT set_eq(
	$$SELECT t.typname::text, c.conname::text, pg_get_constraintdef(c.oid)
	  FROM pg_constraint c JOIN pg_type t ON t.oid = c.contypid
	  WHERE t.typnamespace = 'jobqueue'::regnamespace AND c.contype = 'c'$$,
	$$VALUES ('attempt_limit', 'jobs_max_attempts_positive', 'CHECK ((VALUE >= 1))'),
	  ('fencing_token', 'jobs_lease_token_in_range',
	   'CHECK (((VALUE >= 0) AND (VALUE < ''9223372036854775807''::bigint)))'),
	  ('dependency_count', 'jobs_dependencies_left_nonnegative', 'CHECK ((VALUE >= 0))'),
	  ('debounce_key', 'jobs_debounce_key_length',
	   'CHECK (((octet_length(VALUE) >= 1) AND (octet_length(VALUE) <= 512)))'),
	  ('job_cost', 'jobs_cost_valid',
	   'CHECK (((VALUE > (0)::double precision) AND (VALUE <= (''1000000000''::numeric)::double precision)))')$$,
	'the domains keep the rules and the names of the former constraints of jobs');
SELECT is_empty(
	$$SELECT c.conname FROM pg_constraint c
	  WHERE c.conrelid = 'jobqueue.jobs'::regclass AND c.contype = 'c'$$,
	'jobs has no CHECK constraint (each would be re-planned by every UPDATE)');
SELECT is(pg_get_triggerdef(t.oid), t.expected, format('trigger %s', t.tgname))
FROM (SELECT tg.oid, tg.tgname, e.expected
	  FROM pg_trigger tg
	  JOIN (VALUES
		('jobs_group_insert', 'CREATE TRIGGER jobs_group_insert AFTER INSERT ON jobqueue.jobs FOR EACH ROW WHEN ((new.group_key IS NOT NULL)) EXECUTE FUNCTION jobqueue.jq_group_count()'),
		('jobs_group_status', 'CREATE TRIGGER jobs_group_status AFTER UPDATE OF status, group_key, queue_name ON jobqueue.jobs FOR EACH ROW WHEN (((old.group_key IS NOT NULL) OR (new.group_key IS NOT NULL))) EXECUTE FUNCTION jobqueue.jq_group_count()')
	  ) e(name, expected) ON e.name = tg.tgname
	  WHERE tg.tgrelid = 'jobqueue.jobs'::regclass) t;

--
-- 1.4: no index of jobs beyond these (every write of a job pays for each)
--
SELECT set_eq(
	$$SELECT c.relname::text FROM pg_catalog.pg_index i
	  JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
	  WHERE i.indrelid = 'jobqueue.jobs'::regclass$$,
	ARRAY['jobs_pkey', 'jobs_claim_idx', 'jobs_lease_idx', 'jobs_status_idx',
		'jobs_idempotency_key_idx', 'jobs_group_idx',
		'jobs_group_head_idx', 'jobs_debounce_key_idx', 'jobs_start_by_idx'],
	'the indexes of jobs');

--
-- 1.4: group bookkeeping: the counter follows a move to another queue, a
-- TRUNCATE empties the groups, an operator can force a recount, and the
-- round_robin rotation is shared by every session
--
SELECT is(pg_get_triggerdef(tg.oid),
	'CREATE TRIGGER jobs_group_truncate AFTER TRUNCATE ON jobqueue.jobs FOR EACH STATEMENT EXECUTE FUNCTION jobqueue.jq_group_count()',
	'trigger jobs_group_truncate')
FROM pg_trigger tg WHERE tg.tgrelid = 'jobqueue.jobs'::regclass AND tg.tgname = 'jobs_group_truncate';
SELECT has_function('jobqueue', 'jq_recount_groups', ARRAY['text']);
SELECT is_definer('jobqueue', 'jq_recount_groups', ARRAY['text']);
SELECT function_returns('jobqueue', 'jq_recount_groups', ARRAY['text'], 'bigint');
SELECT has_table('jobqueue', 'group_rotation', 'table jobqueue.group_rotation exists');
SELECT col_is_pk('jobqueue', 'group_rotation', 'queue_name', 'group_rotation has the primary key queue_name');
SELECT fk_ok('jobqueue', 'group_rotation', 'queue_name', 'jobqueue', 'queues', 'queue_name');
SELECT has_table('jobqueue', 'group_limits', 'table jobqueue.group_limits exists');
SELECT col_is_pk('jobqueue', 'group_limits', ARRAY['queue_name', 'group_key'], 'group_limits has the primary key (queue_name, group_key)');
SELECT fk_ok('jobqueue', 'group_limits', 'queue_name', 'jobqueue', 'queues', 'queue_name');
SELECT col_type_is('jobqueue', 'group_limits', 'concurrency', 'integer', 'group_limits.concurrency is integer');
SELECT col_type_is('jobqueue', 'group_limits', 'rate_limit', 'double precision', 'group_limits.rate_limit is double precision');
SELECT col_type_is('jobqueue', 'group_limits', 'rate_burst', 'integer', 'group_limits.rate_burst is integer');
SELECT col_type_is('jobqueue', 'group_limits', 'weight', 'double precision', 'group_limits.weight is double precision');
SELECT has_function('jobqueue', 'jq_set_group_limit', ARRAY['text', 'text', 'integer', 'double precision', 'integer', 'double precision']);
SELECT is_definer('jobqueue', 'jq_set_group_limit', ARRAY['text', 'text', 'integer', 'double precision', 'integer', 'double precision']);
SELECT function_returns('jobqueue', 'jq_set_group_limit', ARRAY['text', 'text', 'integer', 'double precision', 'integer', 'double precision'], 'void');
SELECT has_function('jobqueue', 'jq_group_limits', ARRAY['text']);
SELECT is_definer('jobqueue', 'jq_group_limits', ARRAY['text']);
SELECT col_type_is('jobqueue', 'groups', 'usage', 'double precision', 'groups.usage is double precision');
SELECT col_not_null('jobqueue', 'groups', 'usage', 'groups.usage is not null');
SELECT col_type_is('jobqueue', 'groups', 'usage_epoch', 'double precision', 'groups.usage_epoch is double precision');
SELECT col_not_null('jobqueue', 'groups', 'usage_epoch', 'groups.usage_epoch is not null');
SELECT col_type_is('jobqueue', 'groups', 'rate_tokens', 'double precision', 'groups.rate_tokens is double precision');
SELECT col_type_is('jobqueue', 'groups', 'rate_epoch', 'double precision', 'groups.rate_epoch is double precision');

--
-- 1.4: the trace context of jobs and schedules, defaulting to the session's
--
SELECT col_type_is('jobqueue', t.tab, t.col, 'text', format('%s.%s is text', t.tab, t.col))
FROM (VALUES ('jobs', 'traceparent'), ('jobs', 'tracestate'), ('jobs', 'trace_origin'),
	('schedules', 'traceparent'), ('schedules', 'tracestate')) t(tab, col);
SELECT col_default_is('jobqueue', t.tab, 'traceparent',
	$$NULLIF(current_setting('jobqueue.traceparent'::text, true), ''::text)$$,
	format('%s.traceparent defaults to jobqueue.traceparent', t.tab))
FROM (VALUES ('jobs'), ('schedules')) t(tab);
SELECT col_hasnt_default('jobqueue', 'jobs', 'trace_origin', 'jobs.trace_origin has no default');

SELECT * FROM finish();
ROLLBACK;
