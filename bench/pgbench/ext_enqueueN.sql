-- jobqueue: :n jobs per transaction in one call.
SELECT count(*) FROM jobqueue.jq_enqueue_many(:q, array_fill('{"task": "send_email", "user_id": 12345, "template": "welcome"}'::jsonb, ARRAY[:n::int]));
