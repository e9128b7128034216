-- jobqueue: claim one job, then complete it (two transactions, like a worker).
SELECT coalesce(max(c.id), 0) AS id, coalesce(max(c.token), 0) AS token
  FROM jobqueue.jq_claim(:q, 1, :owner) c \gset
SELECT jobqueue.jq_complete(:id, :token);
