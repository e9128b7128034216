--
-- Facts of docs/operations.md checked against the installation: the
-- column table of queue_stats names exactly the view's columns, and the
-- jobs table has the fillfactor the "Table care" section gives.
--
\getenv abs_srcdir PG_ABS_SRCDIR
\set doc_path :abs_srcdir '/docs/operations.md'
\set doc `cat :doc_path`
-- the first cells of the rows of the table after "**`jobqueue.queue_stats`**"
-- (the text up to the table has no asterisk)
CREATE TEMP TABLE doc_columns AS
SELECT DISTINCT c[1] AS name
FROM regexp_matches(
		substring(:'doc' FROM '\*\*`jobqueue\.queue_stats`\*\*[^*]*\| column \| meaning \|\n\|---\|---\|\n((?:\|[^\n]*\n)+)'),
		'(?:^|\n)\| ([^|\n]*) \|', 'g') r,
	regexp_matches(r[1], '`([a-z_]+)`', 'g') c;
-- what the table documents and the view lacks, and the reverse: nothing
(SELECT name, 'documented, not a column' AS problem FROM doc_columns
 EXCEPT SELECT attname::text, 'documented, not a column' FROM pg_attribute
 WHERE attrelid = 'jobqueue.queue_stats'::regclass AND attnum > 0)
UNION ALL
(SELECT attname::text, 'a column, not documented' FROM pg_attribute
 WHERE attrelid = 'jobqueue.queue_stats'::regclass AND attnum > 0
 EXCEPT SELECT name, 'a column, not documented' FROM doc_columns)
ORDER BY 1;
SELECT count(*) AS documented_columns FROM doc_columns;
-- "fillfactor | 50"
SELECT (regexp_match(:'doc', '\| `fillfactor` \| ([0-9]+) \|'))[1] AS documented,
       (SELECT option_value FROM pg_options_to_table(
			(SELECT reloptions FROM pg_class WHERE oid = 'jobqueue.jobs'::regclass))
		WHERE option_name = 'fillfactor') AS installed;
