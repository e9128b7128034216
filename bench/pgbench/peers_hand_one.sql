-- Peer benchmark (bench/peers.sh), hand-written SQL on the minimal table, one
-- job per call: claim one job, complete it; the client stops once a claim
-- finds nothing.
WITH c AS (SELECT j.id FROM peers_hand.jobs j
            WHERE j.queue_name = :q AND j.status = 'pending' AND j.available_at <= now()
            ORDER BY j.priority DESC, j.available_at, j.id
            LIMIT 1 FOR UPDATE SKIP LOCKED),
     u AS (UPDATE peers_hand.jobs j
              SET status = 'running', attempt_count = j.attempt_count + 1,
                  lease_owner = :owner, lease_token = j.lease_token + 1,
                  started_at = now(), lease_expires_at = now() + interval '60 seconds'
             FROM c WHERE j.id = c.id
           RETURNING j.id, j.lease_token)
SELECT count(*) AS claimed, coalesce(max(u.id), 0) AS id, coalesce(max(u.lease_token), 0) AS token
  FROM u \gset
\if :claimed = 0
\set drained 1 / 0
\endif
UPDATE peers_hand.jobs
   SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL
 WHERE id = :id AND lease_token = :token AND (status = 'running') IS TRUE
   AND lease_expires_at > now();
