-- Hand-written SQL: claim a batch of :n jobs in one SKIP LOCKED statement,
-- then complete them with one fenced UPDATE (status test as in hand_claim1.sql).
WITH c AS (SELECT j.id FROM jobqueue.jobs j
            WHERE j.queue_name = :q AND j.status = 'pending' AND j.available_at <= now()
            ORDER BY j.priority DESC, j.available_at, j.id
            LIMIT :n FOR UPDATE SKIP LOCKED),
     u AS (UPDATE jobqueue.jobs j
              SET status = 'running', attempt_count = j.attempt_count + 1,
                  lease_owner = :owner, lease_token = j.lease_token + 1,
                  started_at = now(), lease_expires_at = now() + interval '60 seconds'
             FROM c WHERE j.id = c.id
           RETURNING j.id, j.payload, j.attempt_count, j.lease_token, j.lease_expires_at)
SELECT coalesce(array_agg(u.id), '{}') AS ids, coalesce(array_agg(u.lease_token), '{}') AS tokens
  FROM u \gset
UPDATE jobqueue.jobs j
   SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL
  FROM unnest(:ids::bigint[], :tokens::bigint[]) AS t(id, token)
 WHERE j.id = t.id AND j.lease_token = t.token AND (j.status = 'running') IS TRUE
   AND j.lease_expires_at > now();
