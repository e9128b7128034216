-- Peer benchmark (bench/peers.sh), hand-written SQL on the minimal table
-- (bench/peers/minimal.sql): claim 100 jobs in one SKIP LOCKED statement
-- with a lease token, then complete them by id in one fenced UPDATE.  The
-- batch size is a literal, as a careful user with a fixed batch writes it: a
-- LIMIT given as a parameter is planned again at every call.  The client
-- stops (an error in a meta-command aborts it) once a claim finds nothing.
WITH c AS (SELECT j.id FROM peers_hand.jobs j
            WHERE j.queue_name = :q AND j.status = 'pending' AND j.available_at <= now()
            ORDER BY j.priority DESC, j.available_at, j.id
            LIMIT 100 FOR UPDATE SKIP LOCKED),
     u AS (UPDATE peers_hand.jobs j
              SET status = 'running', attempt_count = j.attempt_count + 1,
                  lease_owner = :owner, lease_token = j.lease_token + 1,
                  started_at = now(), lease_expires_at = now() + interval '60 seconds'
             FROM c WHERE j.id = c.id
           RETURNING j.id, j.payload, j.attempt_count, j.lease_token, j.lease_expires_at)
SELECT count(*) AS claimed, coalesce(array_agg(u.id), '{}') AS ids,
       coalesce(array_agg(u.lease_token), '{}') AS tokens
  FROM u \gset
\if :claimed = 0
\set drained 1 / 0
\endif
UPDATE peers_hand.jobs j
   SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL
  FROM unnest(:ids::bigint[], :tokens::bigint[]) AS t(id, token)
 WHERE j.id = t.id AND j.lease_token = t.token AND (j.status = 'running') IS TRUE
   AND j.lease_expires_at > now();
