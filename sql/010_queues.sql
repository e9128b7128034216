--
-- Queue administration: jq_create_queue, jq_alter_queue, jq_pause_queue,
-- jq_resume_queue, jq_drop_queue, and the queue name rules.
--

-- a queue with the documented defaults
SELECT jobqueue.jq_create_queue('q_admin');
SELECT queue_name, max_attempts, lease_duration, max_runtime, backoff_base,
       backoff_max, retention, paused, notify,
       created_at BETWEEN now() - interval '1 minute' AND clock_timestamp() AS created_now
FROM jobqueue.queues WHERE queue_name = 'q_admin';

-- creating it again changes nothing and says so (deployments call it at start)
SELECT jobqueue.jq_create_queue('q_admin', max_attempts => 2);
-- the NOTICE's SQLSTATE is duplicate_object
\set VERBOSITY sqlstate
SELECT jobqueue.jq_create_queue('q_admin');
\set VERBOSITY default
SELECT max_attempts FROM jobqueue.queues WHERE queue_name = 'q_admin';

-- a queue with every option given, by name
SELECT jobqueue.jq_create_queue('q_opts', max_attempts => 3,
	lease_duration => '5 minutes', max_runtime => '2 hours',
	backoff_base => '1 second', backoff_max => '30 seconds',
	retention => '1 day');
SELECT queue_name, max_attempts, lease_duration, max_runtime, backoff_base,
       backoff_max, retention, paused, notify
FROM jobqueue.queues WHERE queue_name = 'q_opts';

-- jq_alter_queue: NULL (the default) leaves a setting unchanged
SELECT jobqueue.jq_alter_queue('q_opts', max_attempts => 5, notify => false);
SELECT jobqueue.jq_alter_queue('q_opts', retention => '2 days', backoff_max => '1 minute');
SELECT jobqueue.jq_alter_queue('q_opts');
SELECT queue_name, max_attempts, lease_duration, max_runtime, backoff_base,
       backoff_max, retention, paused, notify
FROM jobqueue.queues WHERE queue_name = 'q_opts';

-- pause and resume
SELECT jobqueue.jq_pause_queue('q_opts');
SELECT paused FROM jobqueue.queues WHERE queue_name = 'q_opts';
SELECT jobqueue.jq_pause_queue('q_opts');	-- idempotent
SELECT jobqueue.jq_resume_queue('q_opts');
SELECT paused FROM jobqueue.queues WHERE queue_name = 'q_opts';

-- queue names: 1 to 128 characters of letters, digits and _ - . :
SELECT jobqueue.jq_create_queue('Az09_-.:');
SELECT jobqueue.jq_create_queue(repeat('x', 128));
SELECT queue_name, length(queue_name) FROM jobqueue.queues
WHERE queue_name IN ('Az09_-.:', repeat('x', 128)) ORDER BY 2;

SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('null name',      $$SELECT jobqueue.jq_create_queue(NULL)$$),
	('empty name',     $$SELECT jobqueue.jq_create_queue('')$$),
	('129 characters', $$SELECT jobqueue.jq_create_queue(repeat('x', 129))$$),
	('space',          $$SELECT jobqueue.jq_create_queue('a b')$$),
	('slash',          $$SELECT jobqueue.jq_create_queue('a/b')$$),
	('quote',          $$SELECT jobqueue.jq_create_queue('a''b')$$),
	('non-ASCII',      $$SELECT jobqueue.jq_create_queue('café')$$),
	('semicolon',      $$SELECT jobqueue.jq_create_queue('a;b')$$),
	('bad name (claim)',   $$SELECT jobqueue.jq_claim('a b', 1, 'w')$$),
	('bad name (enqueue)', $$SELECT jobqueue.jq_enqueue('', '{}')$$),
	('long name (purge)',  $$SELECT jobqueue.jq_purge(repeat('x', 1000))$$)
) v(what, stmt);

-- policy values: attempts at least 1, durations positive and finite
SELECT v.what, test_helpers.try(v.stmt) AS result FROM (VALUES
	('max_attempts 0',       $$SELECT jobqueue.jq_create_queue('q_bad', max_attempts => 0)$$),
	('max_attempts null',    $$SELECT jobqueue.jq_create_queue('q_bad', max_attempts => NULL)$$),
	('lease 0',              $$SELECT jobqueue.jq_create_queue('q_bad', lease_duration => '0')$$),
	('lease negative',       $$SELECT jobqueue.jq_create_queue('q_bad', lease_duration => '-1 second')$$),
	('lease null',           $$SELECT jobqueue.jq_create_queue('q_bad', lease_duration => NULL)$$),
	('max_runtime negative', $$SELECT jobqueue.jq_create_queue('q_bad', max_runtime => '-1 hour')$$),
	('backoff_base 0',       $$SELECT jobqueue.jq_create_queue('q_bad', backoff_base => '0')$$),
	('backoff_max negative', $$SELECT jobqueue.jq_create_queue('q_bad', backoff_max => '-1 day')$$),
	('retention negative',   $$SELECT jobqueue.jq_create_queue('q_bad', retention => '-1 second')$$),
	('retention 1000 years', $$SELECT jobqueue.jq_create_queue('q_bad', retention => '1000 years')$$),
	('month minus days',     $$SELECT jobqueue.jq_create_queue('q_bad', lease_duration => '1 month -31 days')$$),
	('alter max_attempts 0', $$SELECT jobqueue.jq_alter_queue('q_opts', max_attempts => -1)$$),
	('alter lease 0',        $$SELECT jobqueue.jq_alter_queue('q_opts', lease_duration => '0')$$),
	('alter retention neg',  $$SELECT jobqueue.jq_alter_queue('q_opts', retention => '-1 day')$$)
) v(what, stmt);
SELECT count(*) AS bad_queues FROM jobqueue.queues WHERE queue_name = 'q_bad';
SELECT max_attempts, lease_duration, retention FROM jobqueue.queues WHERE queue_name = 'q_opts';

-- unknown queues: undefined_object, with a hint to create the queue
SELECT jobqueue.jq_alter_queue('nosuchqueue', max_attempts => 2);
\echo :LAST_ERROR_SQLSTATE
SELECT jobqueue.jq_pause_queue('nosuchqueue');
\echo :LAST_ERROR_SQLSTATE
SELECT jobqueue.jq_resume_queue('nosuchqueue');
\echo :LAST_ERROR_SQLSTATE
SELECT jobqueue.jq_drop_queue('nosuchqueue');
\echo :LAST_ERROR_SQLSTATE

-- jq_drop_queue: an empty queue goes; one with jobs only with force
SELECT jobqueue.jq_drop_queue('Az09_-.:');
SELECT jobqueue.jq_drop_queue(repeat('x', 128), force => false);
SELECT jobqueue.jq_enqueue('q_opts', '{"n": 1}') IS NOT NULL AS enqueued;
SELECT jobqueue.jq_enqueue('q_opts', '{"n": 2}') IS NOT NULL AS enqueued;
SELECT jobqueue.jq_drop_queue('q_opts');
\echo :LAST_ERROR_SQLSTATE
SELECT jobqueue.jq_drop_queue('q_opts', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS jobs_kept FROM jobqueue.jobs WHERE queue_name = 'q_opts';
-- jobs of other states count too
SELECT count(*) FROM jobqueue.jq_claim('q_opts', 1, 'w');
SELECT jobqueue.jq_drop_queue('q_opts');
\echo :LAST_ERROR_SQLSTATE
SELECT jobqueue.jq_drop_queue('q_opts', force => true);
SELECT count(*) AS jobs_left FROM jobqueue.jobs WHERE queue_name = 'q_opts';
SELECT queue_name FROM jobqueue.queues WHERE queue_name IN ('q_opts', 'Az09_-.:', repeat('x', 128));
-- the name is free again, with default settings
SELECT jobqueue.jq_create_queue('q_opts');
SELECT max_attempts, notify FROM jobqueue.queues WHERE queue_name = 'q_opts';

SELECT jobqueue.jq_drop_queue('q_opts');
SELECT jobqueue.jq_drop_queue('q_admin');
SELECT count(*) AS queues_left FROM jobqueue.queues WHERE queue_name LIKE 'q\_%';
