--
-- jq_jobs and jq_schedules: what admins and monitors list without rights
-- on the tables.  Newest first, keyset pages by id, filters, errors, who
-- sees payloads, and the plans (through indexes, not a scan of the table).
--
SELECT jobqueue.jq_create_queue('q_list', max_attempts => 1);
SELECT jobqueue.jq_create_queue('q_other');
-- 12 jobs: 3 pending in group g1, 3 pending in g2, 2 running, 2 dead
-- (one BAD, one SMTP), 1 succeeded, 1 waiting for the running one
SELECT count(*) FROM (
	SELECT jobqueue.jq_enqueue('q_list', jsonb_build_object('n', i),
							   group_key => CASE WHEN i <= 3 THEN 'g1' ELSE 'g2' END)
	FROM generate_series(1, 6) i) e;
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_other', ARRAY['{}', '{}']::jsonb[]);
SELECT array_agg(id ORDER BY id) AS ids FROM (
	SELECT jobqueue.jq_enqueue('q_list', jsonb_build_object('n', i)) AS id
	FROM generate_series(7, 11) i) e \gset
-- the claim order is priority, then available_at: claim 7..11 by making them urgent
UPDATE jobqueue.jobs SET priority = 10 WHERE id = ANY (:'ids');
CREATE TEMP TABLE claimed AS SELECT * FROM jobqueue.jq_claim('q_list', 5, 'w-list');
SELECT count(*) FILTER (WHERE id = ANY (:'ids')) AS claimed_urgent FROM claimed;
SELECT jobqueue.jq_fail(id, token, 'BAD', 'bad address', stack => 'trace')
FROM claimed ORDER BY id LIMIT 1;
SELECT jobqueue.jq_fail(id, token, 'SMTP', 'timeout')
FROM claimed ORDER BY id OFFSET 1 LIMIT 1;
SELECT jobqueue.jq_complete(id, token, '{"ok": true}')
FROM claimed ORDER BY id OFFSET 2 LIMIT 1;
SELECT jobqueue.jq_enqueue('q_list', '{"n": 12}',
	depends_on => ARRAY[(SELECT max(id) FROM claimed)]) AS waiting_id \gset

-- everything, newest first
SELECT status, group_key, attempt, last_error_code,
       last_error_message, payload ->> 'n' AS payload_n, result
FROM jobqueue.jq_jobs('q_list');

-- one status at a time; the counts agree with queue_stats
SELECT s, (SELECT count(*) FROM jobqueue.jq_jobs('q_list', s)) AS listed
FROM unnest(enum_range(NULL::jobqueue.job_status)) s;
SELECT pending, running, dead, succeeded FROM jobqueue.queue_stats WHERE queue_name = 'q_list';

-- filters: group, last error code, and both with a status
SELECT payload ->> 'n' AS n FROM jobqueue.jq_jobs('q_list', group_key => 'g1');
SELECT payload ->> 'n' AS n, errors -> 0 ->> 'stack' AS stack
FROM jobqueue.jq_jobs('q_list', error_code => 'BAD');
SELECT count(*) FROM jobqueue.jq_jobs('q_list', 'pending', group_key => 'g2');
SELECT count(*) FROM jobqueue.jq_jobs('q_list', 'pending', error_code => 'BAD');

-- keyset pages of 5 (the cursor: the last row's id, and its finished_at if
-- it was finished): every job once, in order, the last page short, then empty
CREATE FUNCTION pg_temp.pages(q text, size int, st jobqueue.job_status DEFAULT NULL)
RETURNS TABLE(page int, ids bigint[]) LANGUAGE plpgsql AS $$
DECLARE
	before bigint := NULL;
	before_at timestamptz := NULL;
	r record;
BEGIN
	page := 0;
	LOOP
		page := page + 1;
		ids := '{}';
		FOR r IN SELECT j.id, j.status, j.finished_at
				 FROM jobqueue.jq_jobs(q, st, size, before, before_finished_at => before_at) j
		LOOP
			ids := ids || r.id;
			before := r.id;
			before_at := CASE WHEN r.status > 'running' THEN r.finished_at END;
		END LOOP;
		RETURN NEXT;
		EXIT WHEN ids = '{}';
	END LOOP;
END
$$;
SELECT page, array_length(ids, 1) AS jobs FROM pg_temp.pages('q_list', 5);
-- unfinished jobs newest first, then finished ones most recently finished first
SELECT (SELECT array_agg(i ORDER BY p.page, n) FROM pg_temp.pages('q_list', 5) p,
               unnest(p.ids) WITH ORDINALITY u(i, n))
     = (SELECT array_agg(id ORDER BY status > 'running',
                         CASE WHEN status > 'running' THEN finished_at END DESC, id DESC)
        FROM jobqueue.jobs WHERE queue_name = 'q_list')
       AS pages_are_the_queue_in_order;
-- with a finished job's cursor, the unfinished ones are not listed again
SELECT count(*) FILTER (WHERE j.status <= 'running') AS unfinished, count(*) > 0 AS some
FROM jobqueue.jq_jobs('q_list', before_id => (SELECT max(id) FROM jobqueue.jobs WHERE queue_name = 'q_list' AND status = 'succeeded'),
	before_finished_at => 'infinity') j;
SELECT page, array_length(ids, 1) AS jobs FROM pg_temp.pages('q_list', 3, 'dead');
SELECT page, array_length(ids, 1) AS jobs FROM pg_temp.pages('q_list', 4, 'pending');
-- job_id: one job's row, of this queue only
SELECT count(*) AS one, min(j.status::text) AS status
FROM jobqueue.jq_jobs('q_list', job_id => (SELECT min(id) FROM jobqueue.jobs
	WHERE queue_name = 'q_list' AND status = 'dead')) j;
SELECT count(*) AS none FROM jobqueue.jq_jobs('q_list', job_id => -1);
-- after the oldest job as an unfinished one: only the finished jobs
SELECT count(*) = (SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'q_list' AND status > 'running')
FROM jobqueue.jq_jobs('q_list', before_id => (SELECT min(id) FROM jobqueue.jobs));

-- errors
SELECT test_helpers.try(stmt) FROM (VALUES
	($$SELECT * FROM jobqueue.jq_jobs('q_no_such')$$),
	($$SELECT * FROM jobqueue.jq_jobs(NULL)$$),
	($$SELECT * FROM jobqueue.jq_jobs('q_list', max_jobs => 0)$$),
	($$SELECT * FROM jobqueue.jq_jobs('q_list', max_jobs => NULL)$$),
	($$SELECT * FROM jobqueue.jq_jobs('q_list', max_jobs => 10001)$$),
	($$SELECT * FROM jobqueue.jq_jobs('q_list', group_key => '')$$),
	($$SELECT * FROM jobqueue.jq_jobs('q_list', error_code => '')$$),
	($$SELECT * FROM jobqueue.jq_jobs('q_list', 'nonsense')$$)
) v(stmt);
SELECT count(*) FROM jobqueue.jq_jobs('q_list', max_jobs => 10000);

-- the statement reads indexes, whatever the size of the table: with
-- 20,000 finished jobs of another queue, a listing of every status scans
-- each part's index and never the table; the parts of unfinished jobs
-- then fetch their page by id, through the primary key (one scan per id);
-- the statistics of this backend are flushed at the end of each transaction
INSERT INTO jobqueue.jobs (queue_name, payload, status, max_attempts, finished_at)
SELECT 'q_other', '{}', 'succeeded', 1, now() FROM generate_series(1, 20000);
ANALYZE jobqueue.jobs;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
CREATE TEMP TABLE scans_before AS
SELECT relname, seq_scan AS scans FROM pg_stat_user_tables WHERE relid = 'jobqueue.jobs'::regclass
UNION ALL
SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relid = 'jobqueue.jobs'::regclass;
SELECT pg_stat_force_next_flush();
-- six calls, each planned with its own values
SELECT count(*) FROM generate_series(1, 6) i, LATERAL jobqueue.jq_jobs('q_list', max_jobs => 100 + i) j;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT b.relname, n.scans - b.scans AS scans
FROM scans_before b
JOIN (SELECT relname, seq_scan AS scans FROM pg_stat_user_tables WHERE relid = 'jobqueue.jobs'::regclass
      UNION ALL
      SELECT indexrelname, idx_scan FROM pg_stat_user_indexes WHERE relid = 'jobqueue.jobs'::regclass) n
  USING (relname)
WHERE n.scans > b.scans OR b.relname IN ('jobs', 'jobs_status_idx')
ORDER BY 1;
DELETE FROM jobqueue.jobs WHERE queue_name = 'q_other' AND status = 'succeeded';

-- a queue as it looks after a while: old dead jobs, then finished ones,
-- then a backlog of pending ones, the newest ids.  A page of every status,
-- and a dead-letter page of one error code, read from each index about
-- the entries of the page (the claim index excepted: the backlog's ids, in
-- claim order; the page of one code may read every dead job), not the
-- 5,000 succeeded jobs or the backlog by the primary key.  (Jobs finished
-- by one statement share their finished_at, and a page reads all of those
-- of its last row to order them by id: the jobs here finished one by one.)
SELECT jobqueue.jq_create_queue('q_big');
INSERT INTO jobqueue.jobs (queue_name, payload, status, max_attempts, finished_at, last_error_code)
SELECT 'q_big', '{}', 'dead', 1, now() - interval '1 hour' - i * interval '1 millisecond',
       CASE WHEN i % 2 = 0 THEN 'E_EVEN' ELSE 'E_ODD' END
FROM generate_series(1, 40) i;
INSERT INTO jobqueue.jobs (queue_name, payload, status, max_attempts, finished_at)
SELECT 'q_big', '{}', 'succeeded', 1, now() - i * interval '1 millisecond' FROM generate_series(1, 5000) i;
INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts) SELECT 'q_big', '{}', 1 FROM generate_series(1, 5000);
ANALYZE jobqueue.jobs;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
CREATE TEMP TABLE reads_before AS
SELECT indexrelname, idx_tup_read FROM pg_stat_user_indexes WHERE relid = 'jobqueue.jobs'::regclass;
SELECT pg_stat_force_next_flush();
SELECT count(*), count(*) FILTER (WHERE status = 'pending') AS pending
FROM jobqueue.jq_jobs('q_big', max_jobs => 10);
SELECT count(*), min(last_error_code), max(last_error_code)
FROM jobqueue.jq_jobs('q_big', 'dead', max_jobs => 10, error_code => 'E_ODD');
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT b.indexrelname, n.idx_tup_read - b.idx_tup_read <= 100 AS at_most_100
FROM reads_before b
JOIN pg_stat_user_indexes n USING (indexrelname)
WHERE n.relid = 'jobqueue.jobs'::regclass AND n.idx_tup_read > b.idx_tup_read
  AND b.indexrelname <> 'jobs_claim_idx'
ORDER BY 1;
SELECT jobqueue.jq_drop_queue('q_big', force => true);

-- who sees what: a monitor lists everything but payloads, results,
-- progress, messages and histories; workers and admins see them too,
-- and so does a role with SELECT on jobs.payload alone
CREATE ROLE regress_jq_list_monitor;
CREATE ROLE regress_jq_list_admin;
CREATE ROLE regress_jq_list_worker;
CREATE ROLE regress_jq_list_reader;
CREATE ROLE regress_jq_list_producer;
SELECT jobqueue.jq_grant_monitor('regress_jq_list_monitor');
SELECT jobqueue.jq_grant_admin('regress_jq_list_admin');
SELECT jobqueue.jq_grant_worker('regress_jq_list_worker');
SELECT jobqueue.jq_grant_monitor('regress_jq_list_reader');
GRANT SELECT (payload) ON jobqueue.jobs TO regress_jq_list_reader;
SELECT jobqueue.jq_grant_producer('regress_jq_list_producer');
CREATE FUNCTION pg_temp.seen() RETURNS TABLE(who name, jobs bigint, payloads bigint,
	results bigint, messages bigint, histories bigint, codes bigint)
LANGUAGE sql AS $$
	SELECT current_user, count(*), count(payload), count(result), count(last_error_message),
	       count(*) FILTER (WHERE errors <> '[]'), count(last_error_code)
	FROM jobqueue.jq_jobs('q_list') $$;
GRANT EXECUTE ON FUNCTION pg_temp.seen() TO PUBLIC;
SET ROLE regress_jq_list_monitor;
SELECT * FROM pg_temp.seen();
SELECT test_helpers.try($$SELECT * FROM jobqueue.jobs$$);
RESET ROLE;
SET ROLE regress_jq_list_admin;
SELECT * FROM pg_temp.seen();
RESET ROLE;
SET ROLE regress_jq_list_reader;
SELECT * FROM pg_temp.seen();
RESET ROLE;
-- a worker may read payloads, but listing is not in its set
SET ROLE regress_jq_list_worker;
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_jobs('q_list')$$);
RESET ROLE;
SET ROLE regress_jq_list_producer;
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_jobs('q_list')$$);
SELECT test_helpers.try($$SELECT * FROM jobqueue.jq_schedules()$$);
RESET ROLE;
SELECT * FROM pg_temp.seen();

-- the documented dead-letter query, as the admin of docs/job-lifecycle.md
SET ROLE regress_jq_list_admin;
SELECT id IS NOT NULL AS has_id, last_error_code, finished_at IS NOT NULL AS finished,
       last_error_message
FROM jobqueue.jq_jobs('q_list', 'dead') ORDER BY finished_at;
RESET ROLE;

-- jq_schedules: by name, with the next run; payloads as for jobs
SELECT jobqueue.jq_schedule('nightly', 'q_list', '0 3 * * *', '{"report": "daily"}',
							timezone => 'Europe/Berlin') IS NOT NULL AS enabled;
SELECT jobqueue.jq_schedule('hourly', 'q_list', '0 * * * *', enabled => false) IS NULL AS disabled;
SELECT schedule_name, cron, timezone, enabled, catch_up,
       next_run_at = (SELECT s.next_run_at FROM jobqueue.schedules s
                      WHERE s.schedule_name = l.schedule_name) AS next_run_matches,
       next_run_at > now() AS next_run_later, last_run_at, payload
FROM jobqueue.jq_schedules() l;
SET ROLE regress_jq_list_monitor;
SELECT schedule_name, next_run_at IS NOT NULL AS has_next_run, payload FROM jobqueue.jq_schedules();
RESET ROLE;
SET ROLE regress_jq_list_admin;
SELECT schedule_name, payload FROM jobqueue.jq_schedules();
RESET ROLE;
SELECT jobqueue.jq_unschedule('nightly'), jobqueue.jq_unschedule('hourly');
SELECT count(*) FROM jobqueue.jq_schedules();

SELECT jobqueue.jq_revoke_monitor(r) FROM unnest(ARRAY['regress_jq_list_monitor', 'regress_jq_list_reader']::regrole[]) r;
SELECT jobqueue.jq_revoke_admin('regress_jq_list_admin');
SELECT jobqueue.jq_revoke_worker('regress_jq_list_worker');
SELECT jobqueue.jq_revoke_producer('regress_jq_list_producer');
REVOKE SELECT (payload) ON jobqueue.jobs FROM regress_jq_list_reader;
DROP FUNCTION pg_temp.seen();
DROP ROLE regress_jq_list_monitor, regress_jq_list_admin, regress_jq_list_worker,
	regress_jq_list_reader, regress_jq_list_producer;
SELECT jobqueue.jq_drop_queue('q_list', force => true);
SELECT jobqueue.jq_drop_queue('q_other', force => true);
