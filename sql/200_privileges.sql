--
-- Privileges: nothing for PUBLIC after CREATE EXTENSION, the role helpers
-- (jq_grant_producer/worker/admin and their revokes), and immunity of our
-- functions to hostile objects on the caller's search_path.
--

CREATE ROLE regress_jq_nobody;
CREATE ROLE regress_jq_producer;
CREATE ROLE regress_jq_worker;
CREATE ROLE regress_jq_admin;
CREATE ROLE regress_jq_attacker;
CREATE ROLE regress_jq_monitor;

SELECT jobqueue.jq_create_queue('q_priv', lease_duration => '1 hour');
SELECT jobqueue.jq_enqueue('q_priv', '{"secret": "payload"}') IS NOT NULL AS enqueued;

-- Nothing of the extension is granted to PUBLIC, in 1.0 or in 1.1.
SELECT pg_describe_object(d.classid, d.objid, 0) AS granted_to_public
FROM pg_depend d
JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'jobqueue'
LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
WHERE d.deptype = 'e'
  AND EXISTS (SELECT FROM aclexplode(COALESCE(p.proacl, c.relacl)) a WHERE a.grantee = 0)
ORDER BY 1;

-- An unprivileged role can use nothing: every function, table, view and
-- sequence of the extension is refused.
SELECT count(*) FILTER (WHERE has_function_privilege('regress_jq_nobody', p.oid, 'EXECUTE')) AS executable,
       count(*) AS functions
FROM pg_proc p WHERE p.pronamespace = 'jobqueue'::regnamespace;
SELECT count(*) FILTER (WHERE has_table_privilege('regress_jq_nobody', c.oid,
                               'SELECT, INSERT, UPDATE, DELETE, TRUNCATE')) AS accessible,
       count(*) AS relations
FROM pg_class c WHERE c.relnamespace = 'jobqueue'::regnamespace AND c.relkind IN ('r', 'v');
SELECT has_sequence_privilege('regress_jq_nobody', 'jobqueue.jobs_id_seq', 'USAGE, SELECT, UPDATE') AS seq,
       has_schema_privilege('regress_jq_nobody', 'jobqueue', 'USAGE') AS schema_usage;

SET ROLE regress_jq_nobody;
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('q_priv', '{}')$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_claim('q_priv', 1, 'w')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_complete(1, 1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('q_nobody')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_reap()$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jobs$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.queues$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.queue_stats$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_counters()$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_grant_producer('regress_jq_nobody')$$);
RESET ROLE;

-- The helpers check the role.
SELECT test_helpers.try($$SELECT jobqueue.jq_grant_producer('regress_jq_no_such_role')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_grant_worker(NULL)$$);

SELECT jobqueue.jq_grant_producer('regress_jq_producer');
SELECT jobqueue.jq_grant_worker('regress_jq_worker');
SELECT jobqueue.jq_grant_admin('regress_jq_admin');
SELECT jobqueue.jq_grant_monitor('regress_jq_monitor');

-- What each role may execute now.
SELECT r.rolname, string_agg(p.proname, ', ' ORDER BY p.proname) AS functions
FROM pg_roles r, pg_proc p
WHERE r.rolname IN ('regress_jq_producer', 'regress_jq_worker', 'regress_jq_admin', 'regress_jq_monitor')
  AND p.pronamespace = 'jobqueue'::regnamespace
  AND has_function_privilege(r.oid, p.oid, 'EXECUTE')
GROUP BY r.rolname ORDER BY r.rolname;

-- A producer enqueues, and can neither claim nor read payloads.
SET ROLE regress_jq_producer;
SELECT jobqueue.jq_enqueue('q_priv', '{"from": "producer"}') IS NOT NULL AS enqueued;
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_priv', ARRAY['{"n": 1}', '{"n": 2}']::jsonb[]);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_claim('q_priv', 1, 'producer')$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_complete_and_claim('q_priv', '{}', '{}', 1, 'producer')$$);
SELECT test_helpers.try($$SELECT payload FROM jobqueue.jobs$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.queue_stats$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_cancel(1)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('q_producer')$$);
SELECT test_helpers.try($$INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts) VALUES ('q_priv', '{}', 1)$$);
RESET ROLE;

-- A worker claims and completes, and cannot create or drop queues, enqueue
-- or read the table.
SET ROLE regress_jq_worker;
CREATE TEMP TABLE claimed AS SELECT * FROM jobqueue.jq_claim('q_priv', 2, 'worker-1');
SELECT count(*) AS claimed FROM claimed;
SELECT jobqueue.jq_complete(id, token) FROM claimed ORDER BY id LIMIT 1;
SELECT jobqueue.jq_heartbeat(id, token) IS NOT NULL AS extended FROM claimed ORDER BY id DESC LIMIT 1;
SELECT jobqueue.jq_fail(id, token, 'E_TEST') FROM claimed ORDER BY id DESC LIMIT 1;
SELECT count(*) AS complete_and_claim FROM jobqueue.jq_complete_and_claim('q_priv', '{}', '{}', 0, 'worker-1');
SELECT test_helpers.try($$SELECT jobqueue.jq_create_queue('q_worker')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_drop_queue('q_priv', true)$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_pause_queue('q_priv')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('q_priv', '{}')$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_purge('q_priv')$$);
SELECT test_helpers.try($$SELECT count(*) FROM jobqueue.jobs$$);
SELECT test_helpers.try($$UPDATE jobqueue.jobs SET status = 'succeeded'$$);
RESET ROLE;

-- An admin manages queues and reads statistics, but does not handle jobs,
-- read payloads, or hand out rights.
SET ROLE regress_jq_admin;
SELECT jobqueue.jq_create_queue('q_admin_made');
SELECT jobqueue.jq_pause_queue('q_admin_made');
SELECT queue_name, paused, pending FROM jobqueue.queue_stats WHERE queue_name = 'q_admin_made';
SELECT jobqueue.jq_drop_queue('q_admin_made');
SELECT count(*) >= 0 AS counters_readable FROM jobqueue.jq_counters();
SELECT jobqueue.jq_reap() >= 0 AS reaped;
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_claim('q_priv', 1, 'admin')$$);
SELECT test_helpers.try($$SELECT payload FROM jobqueue.jobs$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_grant_admin('regress_jq_nobody')$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_counters(all_databases => true)$$);
RESET ROLE;

-- A monitor (a metrics exporter) reads statistics and counters, nothing else.
SET ROLE regress_jq_monitor;
SELECT count(*) > 0 AS stats_readable FROM jobqueue.queue_stats;
SELECT count(*) >= 0 AS counters_readable FROM jobqueue.jq_counters();
SELECT test_helpers.try($$SELECT jobqueue.jq_counters_reset()$$);
SELECT test_helpers.try($$SELECT jobqueue.jq_pause_queue('q_priv')$$);
SELECT test_helpers.try($$SELECT payload FROM jobqueue.jobs$$);
RESET ROLE;

-- Revoking takes the rights back, and the schema with the last of them.
SELECT jobqueue.jq_revoke_producer('regress_jq_producer');
SELECT has_schema_privilege('regress_jq_producer', 'jobqueue', 'USAGE') AS producer_usage;
SET ROLE regress_jq_producer;
SELECT test_helpers.try($$SELECT jobqueue.jq_enqueue('q_priv', '{}')$$);
RESET ROLE;
-- a role that is worker and producer keeps the schema when one goes
SELECT jobqueue.jq_grant_producer('regress_jq_worker');
SELECT jobqueue.jq_revoke_producer('regress_jq_worker');
SELECT has_schema_privilege('regress_jq_worker', 'jobqueue', 'USAGE') AS worker_usage,
       has_function_privilege('regress_jq_worker', 'jobqueue.jq_claim(text, int, text, interval)', 'EXECUTE') AS worker_claims,
       has_function_privilege('regress_jq_worker', 'jobqueue.jq_enqueue(text, jsonb, int, timestamptz, int, text, bigint[], text, text, text, text, interval, interval, timestamptz, float8)', 'EXECUTE') AS worker_enqueues;

--
-- The search_path attack.  A role that may create objects puts its own
-- schema before pg_catalog on its search_path, with a now(), a random()
-- and operators that shadow the ones our statements use; each records that
-- it ran.  Our functions pin search_path and qualify every name, so none of
-- them may run.
--
SELECT jobqueue.jq_grant_producer('regress_jq_attacker');
SELECT jobqueue.jq_grant_worker('regress_jq_attacker');
CREATE SCHEMA regress_jq_evil AUTHORIZATION regress_jq_attacker;
SET ROLE regress_jq_attacker;
CREATE TABLE regress_jq_evil.hits (what text);
CREATE FUNCTION regress_jq_evil.hit(what text) RETURNS boolean
LANGUAGE sql AS $$ INSERT INTO regress_jq_evil.hits VALUES (what) RETURNING true $$;
CREATE FUNCTION regress_jq_evil.now() RETURNS timestamptz
LANGUAGE sql AS $$ SELECT regress_jq_evil.hit('now()'); SELECT timestamptz '2000-01-01' $$;
CREATE FUNCTION regress_jq_evil.random() RETURNS float8
LANGUAGE sql AS $$ SELECT regress_jq_evil.hit('random()'); SELECT 0.5::float8 $$;
CREATE FUNCTION regress_jq_evil.eq_int8(bigint, bigint) RETURNS boolean
LANGUAGE sql AS $$ SELECT regress_jq_evil.hit('=(bigint,bigint)') AND $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR regress_jq_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = regress_jq_evil.eq_int8);
CREATE FUNCTION regress_jq_evil.eq_text(text, text) RETURNS boolean
LANGUAGE sql AS $$ SELECT regress_jq_evil.hit('=(text,text)') AND $1 OPERATOR(pg_catalog.=) $2 $$;
CREATE OPERATOR regress_jq_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = regress_jq_evil.eq_text);
CREATE FUNCTION regress_jq_evil.le_tstz(timestamptz, timestamptz) RETURNS boolean
LANGUAGE sql AS $$ SELECT regress_jq_evil.hit('<=(timestamptz,timestamptz)') AND $1 OPERATOR(pg_catalog.<=) $2 $$;
CREATE OPERATOR regress_jq_evil.<= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = regress_jq_evil.le_tstz);
CREATE FUNCTION regress_jq_evil.plus_tstz(timestamptz, interval) RETURNS timestamptz
LANGUAGE sql AS $$ SELECT regress_jq_evil.hit('+(timestamptz,interval)'); SELECT $1 OPERATOR(pg_catalog.+) $2 $$;
CREATE OPERATOR regress_jq_evil.+ (LEFTARG = timestamptz, RIGHTARG = interval, FUNCTION = regress_jq_evil.plus_tstz);
CREATE FUNCTION regress_jq_evil.concat_jsonb(jsonb, jsonb) RETURNS jsonb
LANGUAGE sql AS $$ SELECT regress_jq_evil.hit('||(jsonb,jsonb)'); SELECT $1 OPERATOR(pg_catalog.||) $2 $$;
CREATE OPERATOR regress_jq_evil.|| (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = regress_jq_evil.concat_jsonb);

SET search_path = regress_jq_evil, pg_catalog, jobqueue, pg_temp;
-- the traps work: a plain query of the attacker's falls into each of them
SELECT now() = timestamptz '2000-01-01' AS fake_now, random() AS fake_random,
       1::bigint = 1::bigint AS eq_int8, 'a'::text = 'a'::text AS eq_text,
       timestamptz '2000-01-01' <= timestamptz '2000-01-02' AS le,
       (timestamptz '2000-01-01' + interval '1 day') IS NOT NULL AS plus,
       ('[]'::jsonb || '[1]'::jsonb) IS NOT NULL AS concat;
SELECT what FROM regress_jq_evil.hits ORDER BY what;
DELETE FROM regress_jq_evil.hits;

-- our functions, called with that search_path, never fall into them
SELECT jobqueue.jq_enqueue('q_priv', '{"n": 3}', priority => 100) IS NOT NULL AS enqueued;
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_priv', ARRAY['{"n": 4}']::jsonb[], 100);
CREATE TEMP TABLE evil_claimed AS SELECT * FROM jobqueue.jq_claim('q_priv', 2, 'attacker');
SELECT count(*) AS claimed, bool_and(lease_expires_at > pg_catalog.clock_timestamp()) AS real_clock
FROM evil_claimed;
SELECT jobqueue.jq_heartbeat(id, token, interval '2 hours') IS NOT NULL AS extended
FROM evil_claimed ORDER BY id LIMIT 1;
SELECT jobqueue.jq_complete(id, token) FROM evil_claimed ORDER BY id LIMIT 1;
SELECT count(*) FROM jobqueue.jq_complete_many(ARRAY(SELECT id FROM evil_claimed ORDER BY id DESC LIMIT 1),
                                               ARRAY(SELECT token FROM evil_claimed ORDER BY id DESC LIMIT 1));
SELECT jobqueue.jq_enqueue('q_priv', '{"n": 5}', priority => 100) IS NOT NULL AS enqueued;
SELECT jobqueue.jq_fail(c.id, c.token, 'E_EVIL', 'fails', true)
FROM jobqueue.jq_claim('q_priv', 1, 'attacker') c;
SELECT jobqueue.jq_enqueue('q_priv', '{"n": 6}', priority => 200) IS NOT NULL AS enqueued;
SELECT jobqueue.jq_release(c.id, c.token) FROM jobqueue.jq_claim('q_priv', 1, 'attacker') c;
SELECT count(*) AS hits FROM regress_jq_evil.hits;
RESET search_path;
RESET ROLE;

-- The admin side, with the same search_path (as the admin role).
GRANT USAGE ON SCHEMA regress_jq_evil TO regress_jq_admin;
SET ROLE regress_jq_admin;
SET search_path = regress_jq_evil, pg_catalog, jobqueue, pg_temp;
SELECT jobqueue.jq_reap() >= 0 AS reaped;
SELECT jobqueue.jq_purge('q_priv', interval '1 microsecond') >= 0 AS purged;
SELECT jobqueue.jq_retry_dead('q_priv') >= 0 AS replayed;
SELECT queue_name, pending >= 0 AS has_pending FROM jobqueue.queue_stats
WHERE queue_name OPERATOR(pg_catalog.=) 'q_priv';
RESET search_path;
RESET ROLE;
SELECT count(*) AS hits FROM regress_jq_evil.hits;

-- clean up
DROP TABLE claimed, evil_claimed;
DROP SCHEMA regress_jq_evil CASCADE;
SELECT jobqueue.jq_revoke_producer(r) FROM unnest(ARRAY['regress_jq_worker', 'regress_jq_attacker']::regrole[]) r;
SELECT jobqueue.jq_revoke_worker(r) FROM unnest(ARRAY['regress_jq_worker', 'regress_jq_attacker']::regrole[]) r;
SELECT jobqueue.jq_revoke_admin('regress_jq_admin');
SELECT jobqueue.jq_revoke_monitor('regress_jq_monitor');
SELECT count(*) AS grants_left
FROM pg_roles r
WHERE r.rolname LIKE 'regress_jq_%'
  AND (has_schema_privilege(r.oid, 'jobqueue', 'USAGE')
       OR EXISTS (SELECT FROM pg_proc p WHERE p.pronamespace = 'jobqueue'::regnamespace
                  AND has_function_privilege(r.oid, p.oid, 'EXECUTE')));
SELECT jobqueue.jq_drop_queue('q_priv', force => true);
DROP ROLE regress_jq_nobody, regress_jq_producer, regress_jq_worker, regress_jq_admin, regress_jq_attacker,
	regress_jq_monitor;
