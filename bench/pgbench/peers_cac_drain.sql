-- Peer benchmark (bench/peers.sh), jobqueue: complete the previous batch and
-- claim the next 100 in one call (jq_complete_and_claim).  Run with
-- -D ids='{}' -D tokens='{}': the first call only claims.  The client stops
-- (an error in a meta-command aborts it) once a call claims nothing: that
-- call has completed its last batch.
SELECT count(*) AS claimed, coalesce(array_agg(c.id), '{}') AS ids,
       coalesce(array_agg(c.token), '{}') AS tokens
  FROM jobqueue.jq_complete_and_claim(:q, :ids, :tokens, 100, :owner) c \gset
\if :claimed = 0
\set drained 1 / 0
\endif
