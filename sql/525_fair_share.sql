--
-- 525_fair_share: the ordering rule of fairness 'fair_share' -- the ready
-- group with the smallest charged usage per weight is served first; usage
-- is the declared cost (or the run time) of finished attempts plus the
-- running jobs' use so far, decayed with fair_share_half_life.  Declared
-- costs make the order exact; a half-life of 100 years makes the decay
-- during the test negligible.
--
CREATE FUNCTION test_helpers.fs_step(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	g text;
BEGIN
	SELECT * INTO c FROM jobqueue.jq_claim(q, 1, 'w');
	IF c.id IS NULL THEN
		RETURN '-';
	END IF;
	SELECT j.group_key INTO g FROM jobqueue.jobs j WHERE j.id = c.id;
	PERFORM jobqueue.jq_complete(c.id, c.token);
	RETURN g;
END
$$;
CREATE FUNCTION test_helpers.fs_steps(q text, n int) RETURNS text
LANGUAGE sql AS $$
	SELECT string_agg(test_helpers.fs_step(q), ' ' ORDER BY i) FROM generate_series(1, n) i
$$;
CREATE FUNCTION test_helpers.fs_fill(q text, grp text, cost float8, n int) RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(jobqueue.jq_enqueue(q, '{}', group_key => grp, cost => cost)) FROM generate_series(1, n)
$$;

------------------------------------------------------------------------
-- a's jobs cost 10, b's 3: b runs until it has used more than a
-- (a: 10, b: 3 6 9 12, a: 20, b: 15 18 21, a: 30)
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('fs', fairness => 'fair_share', fair_share_half_life => '100 years');
SELECT test_helpers.fs_fill('fs', 'a', 10, 10), test_helpers.fs_fill('fs', 'b', 3, 20);
SELECT test_helpers.fs_steps('fs', 10) AS served;
SELECT group_key, ready, running, round(usage::numeric, 3) AS usage, round(share::numeric, 3) AS share
FROM jobqueue.jq_group_stats('fs');

------------------------------------------------------------------------
-- A running job counts before it ends: a's running job (cost 10) sends
-- the next claims to b
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('fs_run', fairness => 'fair_share', fair_share_half_life => '100 years');
SELECT test_helpers.fs_fill('fs_run', 'a', 10, 3), test_helpers.fs_fill('fs_run', 'b', 4, 5);
SELECT j.group_key AS held FROM jobqueue.jq_claim('fs_run', 1, 'holder') c
JOIN jobqueue.jobs j ON j.id = c.id;
SELECT test_helpers.fs_steps('fs_run', 3) AS served;
SELECT group_key, running, round(usage::numeric, 3) AS usage FROM jobqueue.jq_group_stats('fs_run');

------------------------------------------------------------------------
-- Weights: b's weight 4 gives it four times a's usage (a: 10, b: 10/4
-- 20/4 30/4 40/4 -- a tie at 10 goes by key -- a: 20, b: 50/4 .. 80/4)
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('fs_w', fairness => 'fair_share', fair_share_half_life => '100 years');
SELECT jobqueue.jq_set_group_limit('fs_w', 'b', weight => 4);
SELECT test_helpers.fs_fill('fs_w', 'a', 10, 5), test_helpers.fs_fill('fs_w', 'b', 10, 10);
SELECT test_helpers.fs_steps('fs_w', 10) AS served;

------------------------------------------------------------------------
-- A batch claim takes one job per group in turn, least used first; the
-- groups' limits (an override of 1 for b) still hold
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('fs_batch', fairness => 'fair_share', group_concurrency => 3,
	fair_share_half_life => '100 years');
SELECT jobqueue.jq_set_group_limit('fs_batch', 'b', 1);
SELECT sum(test_helpers.fs_fill('fs_batch', g, 1, 5)) FROM unnest(ARRAY['a', 'b', 'c']) g;
UPDATE jobqueue.groups SET usage = CASE group_key WHEN 'a' THEN 5 WHEN 'b' THEN 1 ELSE 3 END,
	usage_epoch = extract(epoch FROM now())
WHERE queue_name = 'fs_batch';
-- usage set by hand reaches the claims' order (share_key) with a rekey
SELECT jobqueue.jq_alter_queue('fs_batch', fair_share_half_life => '100 years');
SELECT string_agg(j.group_key, ' ' ORDER BY c.ord) AS claimed
FROM jobqueue.jq_claim('fs_batch', 10, 'w') WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, tp, ts, tor, ord)
JOIN jobqueue.jobs j ON j.id = c.id;

------------------------------------------------------------------------
-- Measured run time: without a cost, an attempt is charged from its
-- claim to its end; decay: one half-life halves the usage
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('fs_time', fairness => 'fair_share');
SELECT jobqueue.jq_enqueue('fs_time', '{}', group_key => 'a') > 0 AS enqueued;
SELECT test_helpers.fs_steps('fs_time', 1) AS served;
SELECT usage > 0 AND usage < 60 AS charged_run_time FROM jobqueue.groups
WHERE queue_name = 'fs_time' AND group_key = 'a';
SELECT jobqueue.jq_enqueue('fs_time', '{}', group_key => 'a') > 0 AS enqueued;
UPDATE jobqueue.groups SET usage = 100, usage_epoch = extract(epoch FROM now()) - 3600
WHERE queue_name = 'fs_time' AND group_key = 'a';
SELECT group_key, round(usage::numeric, 1) AS usage_after_one_half_life FROM jobqueue.jq_group_stats('fs_time');

------------------------------------------------------------------------
-- Queues without fair share are not charged and show no usage
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('fs_none', group_concurrency => 2);
SELECT test_helpers.fs_fill('fs_none', 'a', 10, 2);
SELECT test_helpers.fs_steps('fs_none', 1) AS served;
SELECT usage, usage_epoch FROM jobqueue.groups WHERE queue_name = 'fs_none';
SELECT group_key, usage, share FROM jobqueue.jq_group_stats('fs_none');

------------------------------------------------------------------------
-- Repair: a share_key that disagrees with its usage (written by hand) is
-- set again by jq_recount_groups, as by the worker at each pass; a group
-- without jobs keeps its row while it has usage left, and the row goes
-- once its usage is spent
------------------------------------------------------------------------
SELECT jobqueue.jq_create_queue('fs_rep', fairness => 'fair_share');
SELECT jobqueue.jq_enqueue('fs_rep', '{}', group_key => g) > 0 AS enqueued
FROM unnest(ARRAY['a', 'b']) g;
UPDATE jobqueue.groups SET usage = 10, usage_epoch = extract(epoch FROM now())
WHERE queue_name = 'fs_rep';
SELECT jobqueue.jq_recount_groups('fs_rep') AS corrected;
UPDATE jobqueue.groups SET share_key = 1e6 WHERE queue_name = 'fs_rep' AND group_key = 'a';
SELECT jobqueue.jq_recount_groups('fs_rep') AS corrected;
SELECT count(DISTINCT share_key) AS keys FROM jobqueue.groups WHERE queue_name = 'fs_rep';
SELECT jobqueue.jq_recount_groups('fs_rep') AS corrected;
-- no jobs left; a's usage was charged a thousand half-lives ago, b's now
DELETE FROM jobqueue.jobs WHERE queue_name = 'fs_rep';
UPDATE jobqueue.groups SET usage_epoch = usage_epoch - 3600 * 1000
WHERE queue_name = 'fs_rep' AND group_key = 'a';
SELECT jobqueue.jq_recount_groups('fs_rep') >= 0 AS repaired;
SELECT group_key FROM jobqueue.groups WHERE queue_name = 'fs_rep' ORDER BY 1;

SELECT jobqueue.jq_drop_queue(q, true)
FROM unnest(ARRAY['fs', 'fs_run', 'fs_w', 'fs_batch', 'fs_time', 'fs_none', 'fs_rep']) q;
