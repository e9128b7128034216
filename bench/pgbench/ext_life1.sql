-- jobqueue: one job through its whole life, one call each: enqueue, claim, complete.
SELECT jobqueue.jq_enqueue(:q, '{"task": "send_email", "user_id": 12345, "template": "welcome"}');
SELECT id, token FROM jobqueue.jq_claim(:q, 1, :owner) \gset
SELECT jobqueue.jq_complete(:id, :token);
