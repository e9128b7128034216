-- jobqueue: a batch of :n jobs through its whole life: enqueue, claim, complete.
SELECT count(*) FROM jobqueue.jq_enqueue_many(:q, array_fill('{"task": "send_email", "user_id": 12345, "template": "welcome"}'::jsonb, ARRAY[:n::int]));
SELECT coalesce(array_agg(c.id), '{}') AS ids, coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_claim(:q, :n, :owner) c \gset
SELECT count(*) FROM jobqueue.jq_complete_many(:ids, :tokens);
