-- jobqueue: claim a batch of :n jobs, then complete them with one call.
SELECT coalesce(array_agg(c.id), '{}') AS ids, coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_claim(:q, :n, :owner) c \gset
SELECT count(*) FROM jobqueue.jq_complete_many(:ids, :tokens);
