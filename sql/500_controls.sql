--
-- Controls: the arguments of jq_create_queue, jq_alter_queue, jq_enqueue
-- and jq_enqueue_many for debounce, deadlines, admission limits, per-group
-- rate limits and fair share: every refused value, and what is stored.
--
\set VERBOSITY sqlstate
-- queue policy: out of range, NaN, infinite, NULL
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_limit => 0);
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_limit => -1);
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_limit => 'NaN');
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_limit => 'Infinity');
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_limit => 1000001);
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_burst => 0);
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_burst => 1000001);
SELECT jobqueue.jq_create_queue('q_ctl_bad', max_wait => '0');
SELECT jobqueue.jq_create_queue('q_ctl_bad', max_wait => '-1 second');
SELECT jobqueue.jq_create_queue('q_ctl_bad', max_wait => '101 years');
SELECT jobqueue.jq_create_queue('q_ctl_bad', max_wait => '1 mon -30 days');
SELECT jobqueue.jq_create_queue('q_ctl_bad', max_pending => 0);
SELECT jobqueue.jq_create_queue('q_ctl_bad', max_pending => -5);
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_max_pending => 0);
SELECT jobqueue.jq_create_queue('q_ctl_bad', fair_share_half_life => NULL);
SELECT jobqueue.jq_create_queue('q_ctl_bad', fair_share_half_life => '0');
SELECT jobqueue.jq_create_queue('q_ctl_bad', fairness => 'edf');
SELECT jobqueue.jq_alter_queue('q_ctl_nosuch', max_pending => 3);
SELECT jobqueue.jq_alter_queue('q_ctl_nosuch', fairness => 'deadline');
\set VERBOSITY default
SELECT count(*) AS refused_queues_created FROM jobqueue.queues WHERE queue_name LIKE 'q_ctl_%';
-- the message names the limit
SELECT jobqueue.jq_create_queue('q_ctl_bad', max_pending => 0);
SELECT jobqueue.jq_create_queue('q_ctl_bad', group_rate_limit => 'NaN');

-- stored, and visible in the queue's row
SELECT jobqueue.jq_create_queue('q_ctl', group_rate_limit => 2.5, group_rate_burst => 5,
	max_wait => '10 minutes', max_pending => 100, group_max_pending => 10,
	fair_share_half_life => '30 minutes', fairness => 'deadline');
SELECT fairness, group_rate_limit, group_rate_burst, max_wait, max_pending,
	   group_max_pending, fair_share_half_life
FROM jobqueue.queues WHERE queue_name = 'q_ctl';
SELECT jobqueue.jq_create_queue('q_ctl_plain');
SELECT fairness, group_rate_limit, group_rate_burst, max_wait, max_pending,
	   group_max_pending, fair_share_half_life
FROM jobqueue.queues WHERE queue_name = 'q_ctl_plain';
-- alter: NULL leaves alone, 0 removes, a burst of 0 restores the default
SELECT jobqueue.jq_alter_queue('q_ctl', max_pending => 50);
SELECT max_pending, group_max_pending, max_wait, group_rate_limit FROM jobqueue.queues
WHERE queue_name = 'q_ctl';
SELECT jobqueue.jq_alter_queue('q_ctl', group_rate_burst => 0);
SELECT group_rate_limit, group_rate_burst FROM jobqueue.queues WHERE queue_name = 'q_ctl';
SELECT jobqueue.jq_alter_queue('q_ctl', max_pending => 0, group_max_pending => 0,
	max_wait => '0', group_rate_limit => 0);
SELECT max_pending, group_max_pending, max_wait, group_rate_limit, group_rate_burst
FROM jobqueue.queues WHERE queue_name = 'q_ctl';
\set VERBOSITY sqlstate
SELECT jobqueue.jq_alter_queue('q_ctl', max_pending => -1);
SELECT jobqueue.jq_alter_queue('q_ctl', group_max_pending => -1);
SELECT jobqueue.jq_alter_queue('q_ctl', max_wait => '-1 hour');
SELECT jobqueue.jq_alter_queue('q_ctl', fair_share_half_life => '0');
SELECT jobqueue.jq_alter_queue('q_ctl', group_rate_limit => 'NaN');
SELECT jobqueue.jq_alter_queue('q_ctl', group_rate_burst => -1);
\set VERBOSITY default
-- fair_share is a group policy, deadline is not
SELECT jobqueue.jq_alter_queue('q_ctl', fairness => 'fair_share');
SELECT jobqueue.jq_enqueue('q_ctl', '{}') AS j_fs \gset
SELECT group_key FROM jobqueue.jobs WHERE id = :j_fs;
SELECT jobqueue.jq_alter_queue('q_ctl_plain', fairness => 'deadline');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}') AS j_dl \gset
SELECT group_key IS NULL AS no_group FROM jobqueue.jobs WHERE id = :j_dl;
SELECT jobqueue.jq_alter_queue('q_ctl_plain', fairness => 'priority');

-- job arguments: refused values
\set VERBOSITY sqlstate
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => '');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => repeat('k', 513));
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce => '1 second');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_max_wait => '1 second');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => 'k', debounce => '-1 second');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => 'k', debounce => '101 years');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => 'k', debounce_max_wait => '0');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => 'k', idempotency_key => 'i');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => 'k', depends_on => ARRAY[:j_dl]::bigint[]);
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', start_by => 'infinity');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', start_by => '-infinity');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', start_by => now() - interval '1 hour');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', run_at => now() + interval '2 hours',
	start_by => now() + interval '1 hour');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', cost => 0);
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', cost => -1);
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', cost => 'NaN');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', cost => 'Infinity');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', cost => 1e10);
SELECT jobqueue.jq_enqueue('q_ctl_nosuch', '{}', debounce_key => 'k');
SELECT jobqueue.jq_enqueue('q_ctl_nosuch', '{}', start_by => now() + interval '1 hour');
SELECT jobqueue.jq_enqueue_many('q_ctl_plain', ARRAY['{}']::jsonb[], cost => 'NaN');
SELECT jobqueue.jq_enqueue_many('q_ctl_plain', ARRAY['{}']::jsonb[], start_by => 'infinity');
SELECT jobqueue.jq_enqueue_many('q_ctl_plain', ARRAY['{}']::jsonb[],
	depends_on => ARRAY[:j_dl]::bigint[], cost => 1);
SELECT jobqueue.jq_enqueue_many('q_ctl_nosuch', ARRAY['{}']::jsonb[], cost => 1);
\set VERBOSITY default
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', debounce_key => 'k', idempotency_key => 'i');
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{}', cost => 'NaN');
SELECT count(*) AS jobs_after_refusals FROM jobqueue.jobs WHERE queue_name = 'q_ctl_plain';

-- stored, and visible in jq_job
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{"a": 1}', start_by => '2999-01-01 00:00+00',
	cost => 2.5) AS j1 \gset
SELECT debounce_key, start_by, cost FROM jobqueue.jq_job(:j1);
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_ctl_plain', ARRAY['{"m": 1}', '{"m": 2}']::jsonb[],
	start_by => '2999-01-01 00:00+00', cost => 0.25);
SELECT payload, start_by, cost FROM jobqueue.jobs
WHERE queue_name = 'q_ctl_plain' AND payload ? 'm' ORDER BY id;
-- a dependent keeps an explicit deadline and cost
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{"dep": 1}', depends_on => ARRAY[:j1]::bigint[],
	start_by => '2999-01-01 00:00+00', cost => 3) AS jdep \gset
SELECT status, start_by, cost FROM jobqueue.jq_job(:jdep);
-- max_wait: start_by = available_at + max_wait, for one job and a batch
SELECT jobqueue.jq_create_queue('q_ctl_wait', max_wait => '10 minutes');
SELECT jobqueue.jq_enqueue('q_ctl_wait', '{}', run_at => '2999-01-01 00:00+00') AS jw \gset
SELECT start_by - available_at AS deadline_after FROM jobqueue.jobs WHERE id = :jw;
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_ctl_wait', ARRAY['{}', '{}']::jsonb[],
	run_at => '2999-01-01 00:00+00');
SELECT count(*), min(start_by - available_at), max(start_by - available_at)
FROM jobqueue.jobs WHERE queue_name = 'q_ctl_wait';
-- an explicit start_by wins over max_wait
SELECT jobqueue.jq_enqueue('q_ctl_wait', '{}', run_at => '2999-01-01 00:00+00',
	start_by => '2999-01-01 05:00+00') AS jw2 \gset
SELECT start_by - available_at AS deadline_after FROM jobqueue.jobs WHERE id = :jw2;

-- debounce: the call replaces the pending job of its key and returns its id
SELECT jobqueue.jq_create_queue('q_deb');
SELECT jobqueue.jq_counters_reset('q_deb');
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 1}', debounce_key => 'user:1',
	debounce => '1 minute', debounce_max_wait => '1 hour', priority => 1) AS d1 \gset
SELECT available_at BETWEEN now() + interval '59 seconds' AND now() + interval '61 seconds'
	   AS after_quiet_period,
	   debounce_until BETWEEN now() + interval '59 minutes' AND now() + interval '61 minutes'
	   AS bounded
FROM jobqueue.jobs WHERE id = :d1;
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 2}', debounce_key => 'user:1',
	run_at => now() + interval '10 minutes', debounce => '1 minute', priority => 5,
	group_key => 'g1', max_attempts => 3, cost => 4) = :d1 AS same_job;
SELECT payload, priority, group_key, max_attempts, cost,
	   available_at BETWEEN now() + interval '10 minutes 59 seconds'
		AND now() + interval '11 minutes 1 second' AS moved
FROM jobqueue.jobs WHERE id = :d1;
-- another key, or another queue: another job
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 3}', debounce_key => 'user:2') <> :d1 AS other_key;
SELECT jobqueue.jq_enqueue('q_ctl_plain', '{"v": 3}', debounce_key => 'user:1') <> :d1 AS other_queue;
SELECT count(*) FROM jobqueue.jobs WHERE queue_name = 'q_deb';
-- the quiet period never moves the job past the first call + debounce_max_wait
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 4}', debounce_key => 'user:1',
	run_at => '2999-01-01 05:00+00') = :d1 AS same_job;
SELECT payload, available_at = debounce_until AS capped FROM jobqueue.jobs WHERE id = :d1;
-- debounce without max_wait: moved each time
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 5}', debounce_key => 'user:2',
	debounce => '100 years') AS d2 \gset
SELECT available_at > now() + interval '99 years' AS moved FROM jobqueue.jobs WHERE id = :d2;
-- once claimed, the next call starts a new job; a released job never conflicts
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 6}', debounce_key => 'user:3') AS d3 \gset
SELECT id = :d3 AS claimed_it FROM jobqueue.jq_claim('q_deb', 1, 'w') \gset
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 7}', debounce_key => 'user:3') AS d4 \gset
SELECT :d4 <> :d3 AS new_job;
SELECT jobqueue.jq_release(:d3, (SELECT lease_token FROM jobqueue.jobs WHERE id = :d3));
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 8}', debounce_key => 'user:3') = :d4 AS replaces_unclaimed;
SELECT status, payload FROM jobqueue.jobs WHERE debounce_key = 'user:3' ORDER BY id;
-- a job that left pending another way (cancelled) gives its key up at the
-- next call of the key, which then starts a new job
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 9}', debounce_key => 'user:4') AS d5 \gset
SELECT jobqueue.jq_cancel(:d5);
SELECT jobqueue.jq_enqueue('q_deb', '{"v": 10}', debounce_key => 'user:4') <> :d5 AS new_job;
SELECT id = :d5 AS cancelled_one, status, debounce_key
FROM jobqueue.jobs WHERE queue_name = 'q_deb' AND payload ->> 'v' IN ('9', '10') ORDER BY id;
-- counted: enqueued once per new job, debounced once per replacement
SELECT enqueued, debounced FROM jobqueue.jq_counters() WHERE queue_name = 'q_deb';


-- deadlines: a job past its start_by is never claimed.  Time passes by
-- moving start_by (as the clock would), not by sleeping.
SELECT jobqueue.jq_create_queue('q_exp');
SELECT jobqueue.jq_counters_reset('q_exp');
SELECT jobqueue.jq_enqueue('q_exp', '{"late": 1}', start_by => now() + interval '1 hour',
	priority => 10) AS e1 \gset
SELECT jobqueue.jq_enqueue('q_exp', '{"dep": 1}', depends_on => ARRAY[:e1]::bigint[]) AS e1dep \gset
SELECT jobqueue.jq_enqueue('q_exp', '{"ok": 1}') AS e2 \gset
UPDATE jobqueue.jobs SET start_by = now() - interval '1 second' WHERE id = :e1;
-- the claim skips it (a queue without max_wait or deadline order leaves
-- the expiry to the worker and jq_reap)
SELECT payload FROM jobqueue.jq_claim('q_exp', 10, 'w');
SELECT status FROM jobqueue.jobs WHERE id = :e1;
SELECT jobqueue.jq_reap();
SELECT status, last_error_code, finished_at IS NOT NULL AS finished FROM jobqueue.jq_job(:e1);
-- its dependent is cancelled as for any cancelled dependency
SELECT status, last_error_code FROM jobqueue.jq_job(:e1dep);
SELECT expired, enqueued FROM jobqueue.jq_counters() WHERE queue_name = 'q_exp';
-- a job claimed before its deadline runs to its end
SELECT jobqueue.jq_enqueue('q_exp', '{"in_time": 1}', start_by => now() + interval '1 hour') AS e3 \gset
SELECT id = :e3 AS claimed FROM jobqueue.jq_claim('q_exp', 1, 'w');
UPDATE jobqueue.jobs SET start_by = now() - interval '1 second' WHERE id = :e3;
SELECT jobqueue.jq_reap();
SELECT status FROM jobqueue.jobs WHERE id = :e3;
SELECT jobqueue.jq_complete(:e3, (SELECT lease_token FROM jobqueue.jobs WHERE id = :e3));
-- a replayed expired job gets a fresh deadline (none without max_wait)
-- and can be claimed
SELECT jobqueue.jq_retry(:e1);
SELECT status, start_by FROM jobqueue.jobs WHERE id = :e1;
SELECT id = :e1 AS claimed FROM jobqueue.jq_claim('q_exp', 1, 'w');
-- with max_wait, the claim expires what it meets first
SELECT jobqueue.jq_create_queue('q_exp_wait', max_wait => '1 hour');
SELECT jobqueue.jq_enqueue('q_exp_wait', '{"n": 1}') AS w1 \gset
SELECT jobqueue.jq_enqueue('q_exp_wait', '{"n": 2}') AS w2 \gset
UPDATE jobqueue.jobs SET start_by = now() - interval '1 second' WHERE id = :w1;
SELECT payload FROM jobqueue.jq_claim('q_exp_wait', 10, 'w');
SELECT status, last_error_code FROM jobqueue.jq_job(:w1);
-- with max_wait, the replay's deadline is its new available_at + max_wait
SELECT jobqueue.jq_retry(:w1);
SELECT status, start_by = available_at + interval '1 hour' AS fresh_deadline
FROM jobqueue.jobs WHERE id = :w1;
-- a grouped and a strictly ordered queue never claim an expired job either
SELECT jobqueue.jq_create_queue('q_exp_grp', group_concurrency => 2);
SELECT jobqueue.jq_enqueue('q_exp_grp', '{"g": 1}', group_key => 'a',
	start_by => now() + interval '1 hour') AS g1 \gset
SELECT jobqueue.jq_enqueue('q_exp_grp', '{"g": 2}', group_key => 'a') AS g2 \gset
UPDATE jobqueue.jobs SET start_by = now() - interval '1 second' WHERE id = :g1;
SELECT payload FROM jobqueue.jq_claim('q_exp_grp', 10, 'w');
SELECT jobqueue.jq_create_queue('q_exp_ord', group_ordered => true);
SELECT jobqueue.jq_enqueue('q_exp_ord', '{"o": 1}', group_key => 'a',
	start_by => now() + interval '1 hour') AS o1 \gset
SELECT jobqueue.jq_enqueue('q_exp_ord', '{"o": 2}', group_key => 'a') AS o2 \gset
UPDATE jobqueue.jobs SET start_by = now() - interval '1 second' WHERE id = :o1;
SELECT count(*) AS claimed_behind_expired_head FROM jobqueue.jq_claim('q_exp_ord', 10, 'w');
SELECT jobqueue.jq_reap();
SELECT payload FROM jobqueue.jq_claim('q_exp_ord', 10, 'w');

-- fairness 'deadline': earliest start_by first, jobs without one after
-- (by priority), within one claim and across claims
SELECT jobqueue.jq_create_queue('q_edf', fairness => 'deadline');
SELECT count(*) FROM (
	SELECT jobqueue.jq_enqueue('q_edf', jsonb_build_object('n', n),
		priority => CASE WHEN n > 6 THEN n ELSE 0 END,
		start_by => CASE WHEN n <= 6 THEN now() + (7 - n) * interval '1 minute' END)
	FROM generate_series(1, 9) n) e;
SELECT payload FROM jobqueue.jq_claim('q_edf', 4, 'w');
SELECT payload FROM jobqueue.jq_claim('q_edf', 10, 'w');
-- a job that is not ready yet waits, even with the earliest deadline
SELECT jobqueue.jq_enqueue('q_edf', '{"later": 1}', run_at => now() + interval '1 hour',
	start_by => now() + interval '2 hours') IS NOT NULL AS enqueued;
SELECT jobqueue.jq_enqueue('q_edf', '{"now": 1}', start_by => now() + interval '3 hours')
	IS NOT NULL AS enqueued;
SELECT payload FROM jobqueue.jq_claim('q_edf', 10, 'w');
-- with a group policy: earliest deadline first within the group limits
-- (default 1, b overridden to 2); jobs without a group ('') have no limit;
-- the jobs without a deadline after, by priority
SELECT jobqueue.jq_create_queue('q_edf_grp', fairness => 'deadline', group_concurrency => 1);
SELECT jobqueue.jq_set_group_limit('q_edf_grp', 'b', 2);
SELECT count(*) FROM (
	SELECT jobqueue.jq_enqueue('q_edf_grp', jsonb_build_object('n', n), group_key => g,
		priority => p, start_by => now() + m * interval '1 minute')
	FROM (VALUES (1, 'a', 1, 0), (2, 'a', 2, 0), (3, 'b', 3, 0), (4, 'b', 4, 0),
				 (5, 'b', 5, 0), (6, 'c', NULL, 5), (7, 'd', NULL, 1), (8, 'c', NULL, 9),
				 (9, NULL, NULL, 3), (10, NULL, 9, 0)) v(n, g, m, p) ORDER BY n) e;
SELECT payload FROM jobqueue.jq_claim('q_edf_grp', 10, 'w');
SELECT count(*) AS claimed_at_the_limits FROM jobqueue.jq_claim('q_edf_grp', 10, 'w');
-- a slot freed: the group's next deadline; one at a time, earliest first
SELECT jobqueue.jq_complete(id, lease_token) FROM jobqueue.jobs
WHERE queue_name = 'q_edf_grp' AND payload->>'n' IN ('1', '3', '8');
SELECT payload FROM jobqueue.jq_claim('q_edf_grp', 1, 'w');
SELECT payload FROM jobqueue.jq_claim('q_edf_grp', 10, 'w');
SELECT jobqueue.jq_drop_queue(q, true)
FROM unnest(ARRAY['q_exp', 'q_exp_wait', 'q_exp_grp', 'q_exp_ord', 'q_edf', 'q_edf_grp']) q;


-- admission limits: an enqueue beyond max_pending fails with 53400 and
-- says why; running jobs do not count; jq_enqueue_many is all or nothing
SELECT jobqueue.jq_create_queue('q_adm', max_pending => 3, group_max_pending => 2);
SELECT jobqueue.jq_enqueue('q_adm', '{"n": 1}') IS NOT NULL AS admitted;
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_adm', ARRAY['{"n": 2}', '{"n": 3}']::jsonb[]);
\set VERBOSITY sqlstate
SELECT jobqueue.jq_enqueue('q_adm', '{"n": 4}');
\set VERBOSITY default
SELECT jobqueue.jq_enqueue('q_adm', '{"n": 4}');
SELECT jobqueue.jq_enqueue_many('q_adm', ARRAY['{"n": 4}']::jsonb[]);
SELECT jobqueue.jq_enqueue('q_adm', '{"n": 4}', run_at => now() + interval '1 day');
-- a claimed job leaves room; its retry does not make room disappear
SELECT count(*) FROM jobqueue.jq_claim('q_adm', 1, 'w');
SELECT jobqueue.jq_enqueue('q_adm', '{"n": 4}') IS NOT NULL AS admitted;
SELECT jobqueue.jq_enqueue('q_adm', '{"n": 5}');
-- group_max_pending: per group, the whole batch refused
SELECT jobqueue.jq_alter_queue('q_adm', max_pending => 100);
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_adm', ARRAY['{}', '{}', '{}']::jsonb[],
	group_keys => ARRAY['a', 'b', 'a']);
SELECT jobqueue.jq_enqueue('q_adm', '{}', group_key => 'a');
SELECT jobqueue.jq_enqueue_many('q_adm', ARRAY['{}', '{}', '{}']::jsonb[],
	group_keys => ARRAY['c', 'b', 'b']);
SELECT group_key, count(*) FROM jobqueue.jobs WHERE queue_name = 'q_adm' AND group_key IS NOT NULL
GROUP BY group_key ORDER BY group_key;
-- jobs without a group are no group
SELECT count(*) FROM jobqueue.jq_enqueue_many('q_adm', ARRAY['{}', '{}', '{}']::jsonb[]);
-- a dependent job counts (waiting is pending work)
SELECT jobqueue.jq_enqueue('q_adm', '{}', group_key => 'b',
	depends_on => ARRAY[(SELECT min(id) FROM jobqueue.jobs WHERE queue_name = 'q_adm')])
	IS NOT NULL AS admitted;
SELECT jobqueue.jq_enqueue('q_adm', '{}', group_key => 'b');
-- a debounced call that replaces adds nothing, so it is admitted at the limit
SELECT jobqueue.jq_enqueue('q_adm', '{"d": 1}', debounce_key => 'k', group_key => 'c') AS dk \gset
SELECT jobqueue.jq_enqueue('q_adm', '{"d": 2}', debounce_key => 'k', group_key => 'c') = :dk AS replaced;
SELECT jobqueue.jq_enqueue('q_adm', '{"d": 3}', debounce_key => 'k2', group_key => 'c')
	IS NOT NULL AS admitted;
SELECT jobqueue.jq_enqueue('q_adm', '{"d": 5}', debounce_key => 'k3', group_key => 'c');
SELECT jobqueue.jq_enqueue('q_adm', '{"d": 4}', debounce_key => 'k', group_key => 'c') = :dk AS replaced;
-- without the limit, the group takes more
SELECT jobqueue.jq_alter_queue('q_adm', group_max_pending => 0);
SELECT jobqueue.jq_enqueue('q_adm', '{}', group_key => 'a') IS NOT NULL AS admitted;
-- a replay recounts: the dead job that comes back is pending work
SELECT jobqueue.jq_create_queue('q_adm2', max_pending => 2, max_attempts => 1);
SELECT jobqueue.jq_enqueue('q_adm2', '{"r": 1}') AS r1 \gset
SELECT jobqueue.jq_fail(id, token, 'E', retryable => false) FROM jobqueue.jq_claim('q_adm2', 1, 'w');
SELECT jobqueue.jq_enqueue('q_adm2', '{"r": 2}') IS NOT NULL AS admitted;
SELECT jobqueue.jq_retry(:r1);
SELECT jobqueue.jq_enqueue('q_adm2', '{"r": 3}');
SELECT jobqueue.jq_drop_queue(q, true) FROM unnest(ARRAY['q_adm', 'q_adm2']) q;

SELECT jobqueue.jq_drop_queue(q, true)
FROM unnest(ARRAY['q_ctl', 'q_ctl_plain', 'q_ctl_wait', 'q_deb']) q;
