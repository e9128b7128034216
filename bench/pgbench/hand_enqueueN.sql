-- Hand-written SQL: :n jobs per transaction in one INSERT.
WITH i AS (INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts)
           SELECT :q, p, 8 FROM unnest(array_fill('{"task": "send_email", "user_id": 12345, "template": "welcome"}'::jsonb, ARRAY[:n::int])) AS p
           RETURNING id)
SELECT count(*) FROM i;
