--
-- The privileges table of docs/operations.md is the list of
-- jq_role_functions(kind): for each jq_grant_<kind>(role) row, the
-- functions named in the "may call" column (and queue_stats) must be
-- exactly those the helper grants.
--
\getenv abs_srcdir PG_ABS_SRCDIR
\set doc_path :abs_srcdir '/docs/operations.md'
\set doc `cat :doc_path`
CREATE TEMP TABLE doc_rows AS
SELECT m[1] AS kind, m[2] AS may_call
FROM regexp_matches(:'doc', '\n\| `jq_grant_([a-z]+)\(role\)` \| ([^|\n]*) \|', 'g') m;
-- the four sets, each once
SELECT kind, count(*) AS rows FROM doc_rows GROUP BY kind ORDER BY kind;
CREATE TEMP TABLE doc_names AS
SELECT d.kind, n[1] AS name
FROM doc_rows d, regexp_matches(d.may_call, '`((jq_[a-z_]+)|queue_stats)`', 'g') n;
CREATE TEMP TABLE granted AS
SELECT k.kind, p.proname::text AS name
FROM unnest(ARRAY['producer', 'worker', 'admin', 'monitor']) k(kind),
	jobqueue.jq_role_functions(k.kind) f(p_oid) JOIN pg_proc p ON p.oid = f.p_oid
UNION
SELECT k.kind, 'queue_stats' FROM unnest(ARRAY['admin', 'monitor']) k(kind);
-- what the table says and the helpers do not, and the reverse: nothing
(SELECT kind, name, 'documented, not granted' AS problem FROM doc_names
 EXCEPT SELECT kind, name, 'documented, not granted' FROM granted)
UNION ALL
(SELECT kind, name, 'granted, not documented' FROM granted
 EXCEPT SELECT kind, name, 'granted, not documented' FROM doc_names)
ORDER BY 1, 2;
-- the comparison saw every function of every set
SELECT kind, count(DISTINCT name) AS names FROM doc_names GROUP BY kind ORDER BY kind;
-- and the grant of queue_stats is what the helper does
CREATE ROLE regress_jq_doc_monitor;
SELECT jobqueue.jq_grant_monitor('regress_jq_doc_monitor');
SELECT has_table_privilege('regress_jq_doc_monitor', 'jobqueue.queue_stats', 'SELECT') AS queue_stats;
SELECT jobqueue.jq_revoke_monitor('regress_jq_doc_monitor');
DROP ROLE regress_jq_doc_monitor;
