-- jobqueue: one job per transaction.
SELECT jobqueue.jq_enqueue(:q, '{"task": "send_email", "user_id": 12345, "template": "welcome"}');
