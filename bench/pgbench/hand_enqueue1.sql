-- Hand-written SQL: one job per transaction.
INSERT INTO jobqueue.jobs (queue_name, payload, max_attempts)
VALUES (:q, '{"task": "send_email", "user_id": 12345, "template": "welcome"}', 8) RETURNING id;
