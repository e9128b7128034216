-- jobqueue: steady churn, one job per transaction through its whole life.
SELECT jobqueue.jq_enqueue(:q, '{"task": "send_email", "user_id": 12345, "template": "welcome"}');
SELECT coalesce(max(c.id), 0) AS id, coalesce(max(c.token), 0) AS token
  FROM jobqueue.jq_claim(:q, 1, :owner) c \gset
SELECT jobqueue.jq_complete(:id, :token);
