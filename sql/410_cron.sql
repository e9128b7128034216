--
-- 410_cron: cron expressions and jq_cron_next(): fields, lists, ranges,
-- steps, names, both day fields, month ends, leap days, macros, "N seconds",
-- time zones with their DST gaps and overlaps, and every error.
--
SET timezone = 'UTC';

-- A table of expressions and instants: the next three fire times (UTC).
CREATE TEMP TABLE cases (ord int, cron text, after timestamptz, tz text);
INSERT INTO cases VALUES
	(1, '* * * * *', '2026-01-01 00:00:00', 'UTC'),
	(2, '* * * * *', '2026-01-01 00:00:59.999', 'UTC'),
	(3, '5 * * * *', '2026-01-01 00:05:00', 'UTC'),
	(4, '0,15,45 * * * *', '2026-01-01 00:20:00', 'UTC'),
	(5, '10-12 3 * * *', '2026-01-01 03:11:00', 'UTC'),
	(6, '*/20 * * * *', '2026-01-01 23:50:00', 'UTC'),
	(7, '10-40/15 * * * *', '2026-01-01 00:00:00', 'UTC'),
	(8, '7/20 * * * *', '2026-01-01 00:00:00', 'UTC'),
	(9, '0 */6 * * *', '2026-01-01 05:00:00', 'UTC'),
	(10, '0 0 * jan,jul *', '2026-01-31 12:00:00', 'UTC'),
	(11, '0 0 * FEB-Apr *', '2026-04-30 12:00:00', 'UTC'),
	(12, '0 9 * * mon-fri', '2026-01-02 10:00:00', 'UTC'),   -- Friday
	(13, '0 9 * * sat,SUN', '2026-01-01 00:00:00', 'UTC'),
	(14, '0 0 * * 7', '2026-01-01 00:00:00', 'UTC'),        -- 7 is Sunday
	(15, '0 0 * * 0', '2026-01-01 00:00:00', 'UTC'),
	(16, '0 0 13 * 5', '2026-01-01 00:00:00', 'UTC'),       -- the 13th OR a Friday
	(17, '0 0 13 * *', '2026-01-01 00:00:00', 'UTC'),
	(18, '0 0 */10 * 5', '2026-01-01 00:00:00', 'UTC'),     -- "*" first: AND
	(19, '0 0 31 * *', '2026-01-31 00:00:00', 'UTC'),       -- months with a 31st
	(20, '0 0 30 * *', '2026-01-30 00:00:00', 'UTC'),       -- February skipped
	(21, '0 0 29 2 *', '2026-01-01 00:00:00', 'UTC'),       -- leap days
	(22, '0 0 29 2 *', '2096-03-01 00:00:00', 'UTC'),       -- 2100 is no leap year
	(23, '59 23 31 12 *', '2026-12-31 23:59:00', 'UTC'),
	(24, '@yearly', '2026-06-01 00:00:00', 'UTC'),
	(25, '@annually', '2026-06-01 00:00:00', 'UTC'),
	(26, '@monthly', '2026-01-31 00:00:00', 'UTC'),
	(27, '@weekly', '2026-01-01 00:00:00', 'UTC'),
	(28, '@daily', '2026-01-01 00:00:00', 'UTC'),
	(29, '@midnight', '2026-01-01 00:00:00', 'UTC'),
	(30, '@hourly', '2026-01-01 00:30:00', 'UTC'),
	(31, '  @HOURLY  ', '2026-01-01 00:30:00', 'UTC'),
	(32, '1 seconds', '2026-01-01 00:00:00.5', 'UTC'),
	(33, '15 seconds', '2026-01-01 00:00:44', 'UTC'),
	(34, '7 seconds', '2026-01-01 00:00:50', 'UTC'),
	(35, '59 second', '2026-01-01 00:00:00', 'UTC'),
	(36, ' 0  12	1 * * ', '2026-01-01 12:00:00', 'UTC'),
	(37, '0 12 * * *', '2026-01-01 00:00:00', 'Europe/Paris'),
	(38, '0 12 * * *', '2026-01-01 00:00:00', 'Asia/Kolkata'),
	(39, '0 0 1 1 *', '1999-12-31 12:00:00', 'Pacific/Kiritimati'),
	(40, '0 0 30 2 *', '2026-01-01 00:00:00', 'UTC'),       -- never fires
	(41, '* * * * *', '9999-12-31 23:58:00', 'UTC');        -- end of time
SELECT c.ord, c.cron, c.tz, c.after,
	   (SELECT string_agg(t::text, ', ' ORDER BY t)
		FROM jobqueue.jq_cron_next(c.cron, c.after, c.tz, 3) t) AS next
FROM cases c ORDER BY c.ord;

-- The defaults: UTC, one time
SELECT * FROM jobqueue.jq_cron_next('0 0 * * *', '2026-05-05 10:00:00');
SELECT count(*) FROM jobqueue.jq_cron_next('* * * * *', '2026-01-01', count => 1000);

-- DST, America/New_York: spring forward on 2026-03-08 (02:00 -> 03:00),
-- fall back on 2026-11-01 (02:00 -> 01:00).  Shown in local time with the
-- offset.
SET timezone = 'America/New_York';
-- a slot in the gap fires once, at 03:00 EDT
SELECT * FROM jobqueue.jq_cron_next('30 2 * * *', '2026-03-07 12:00', 'America/New_York', 3);
-- every minute of the gap maps to 03:00: one fire time, not sixty
SELECT * FROM jobqueue.jq_cron_next('*/30 * * * *', '2026-03-08 01:00', 'America/New_York', 4);
-- a slot occurring twice fires once, at the first occurrence (EDT)
SELECT * FROM jobqueue.jq_cron_next('30 1 * * *', '2026-10-31 12:00', 'America/New_York', 2);
SELECT * FROM jobqueue.jq_cron_next('*/20 * * * *', '2026-11-01 00:50', 'America/New_York', 8);
-- asked from inside the second occurrence: the next slot after it
SELECT * FROM jobqueue.jq_cron_next('*/20 * * * *', '2026-11-01 01:30 EST', 'America/New_York', 2);
-- seconds are counted in absolute time, whatever the zone
SELECT * FROM jobqueue.jq_cron_next('20 seconds', '2026-03-08 01:59:30 EST', 'America/New_York', 3);

-- Europe/Berlin: 2026-03-29 02:00 -> 03:00, 2026-10-25 03:00 -> 02:00
SET timezone = 'Europe/Berlin';
SELECT * FROM jobqueue.jq_cron_next('15 2 * * *', '2026-03-28 12:00', 'Europe/Berlin', 3);
SELECT * FROM jobqueue.jq_cron_next('15 2 * * *', '2026-10-24 12:00', 'Europe/Berlin', 3);
SELECT * FROM jobqueue.jq_cron_next('0 * * * *', '2026-10-25 00:30', 'Europe/Berlin', 5);

-- Australia/Lord_Howe moves by half an hour: 2026-04-05 02:00 -> 01:30,
-- 2026-10-04 02:00 -> 02:30
SET timezone = 'Australia/Lord_Howe';
SELECT * FROM jobqueue.jq_cron_next('45 1 * * *', '2026-04-04 12:00', 'Australia/Lord_Howe', 2);
SELECT * FROM jobqueue.jq_cron_next('15 2 * * *', '2026-10-03 12:00', 'Australia/Lord_Howe', 2);
SET timezone = 'UTC';

-- Errors: 22023 with the position in the detail, 22004 for NULL
CREATE FUNCTION pg_temp.err(stmt text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	detail text;
BEGIN
	EXECUTE stmt;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS detail = PG_EXCEPTION_DETAIL;
	RETURN SQLSTATE || ': ' || left(SQLERRM, 60) || COALESCE(' / ' || detail, '');
END
$$;
SELECT pg_temp.err(format('SELECT * FROM jobqueue.jq_cron_next(%L, now())', e)) AS result
FROM unnest(ARRAY[
	'', '   ', '* * * *', '* * * * * *', '60 * * * *', '* 24 * * *', '* * 0 * *',
	'* * 32 * *', '* * * 0 *', '* * * 13 *', '* * * * 8', '5-1 * * * *',
	'*/0 * * * *', '*/61 * * * *', '*/ * * * *', '1, * * * *', ',1 * * * *',
	'1-* * * * *', 'a * * * *', '* * * * mo', '* * * foo *', '* * * * monday',
	'* * * * 1;', '1-2-3 * * * *', '@every', '@daily *', '@', '0 seconds',
	'60 seconds', '5 minutes', 'seconds', '99999999999 seconds', '**/2 * * * *',
	'* * * jan-mon *', '0 0 * * * 0', '* * * *　*', repeat('*', 1001)]) WITH ORDINALITY AS e(e, ord)
ORDER BY ord;
SELECT pg_temp.err($$SELECT * FROM jobqueue.jq_cron_next(NULL, now())$$);
SELECT pg_temp.err($$SELECT * FROM jobqueue.jq_cron_next('* * * * *', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM jobqueue.jq_cron_next('* * * * *', now(), NULL)$$);
SELECT pg_temp.err($$SELECT * FROM jobqueue.jq_cron_next('* * * * *', now(), 'UTC', NULL)$$);
SELECT pg_temp.err($$SELECT * FROM jobqueue.jq_cron_next('* * * * *', 'infinity')$$);
SELECT pg_temp.err($$SELECT * FROM jobqueue.jq_cron_next('* * * * *', '-infinity')$$);
SELECT pg_temp.err(format('SELECT * FROM jobqueue.jq_cron_next(%L, now(), %L)', '* * * * *', z)) AS result
FROM unnest(ARRAY['', 'Mars/Olympus_Mons', 'utc ', repeat('x', 300)]) WITH ORDINALITY AS z(z, ord)
ORDER BY ord;
SELECT pg_temp.err(format('SELECT * FROM jobqueue.jq_cron_next(%L, now(), %L, %s)', '* * * * *', 'UTC', n))
	AS result, n AS count
FROM unnest(ARRAY[0, -1, 100001]) AS n;
