-- jobqueue: one round trip per turn of a worker loop: complete the jobs the
-- previous turn claimed and claim the next :n, with jq_complete_and_claim.
-- The first turn completes nothing: run with -D ids={} -D tokens={}.
SELECT coalesce(array_agg(c.id), '{}') AS ids, coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_complete_and_claim(:q, :ids, :tokens, :n, :owner) c \gset
