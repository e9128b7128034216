-- Peer benchmark (bench/peers.sh), jobqueue one job per call: claim one job,
-- complete it; the client stops once a claim finds nothing.
SELECT count(*) AS claimed, coalesce(max(c.id), 0) AS id, coalesce(max(c.token), 0) AS token
  FROM jobqueue.jq_claim(:q, 1, :owner) c \gset
\if :claimed = 0
\set drained 1 / 0
\endif
SELECT jobqueue.jq_complete(:id, :token);
