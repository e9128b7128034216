-- Peer benchmark (bench/peers.sh), jobqueue: claim 100 jobs, complete them
-- with one call; the client stops (an error in a meta-command aborts it)
-- once a claim finds nothing, so pgbench ends when the queue is drained.
SELECT count(*) AS claimed, coalesce(array_agg(c.id), '{}') AS ids,
       coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_claim(:q, 100, :owner) c \gset
\if :claimed = 0
\set drained 1 / 0
\endif
SELECT count(*) FROM jobqueue.jq_complete_many(:ids, :tokens);
