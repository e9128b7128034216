-- Hand-written SQL: the single-statement SKIP LOCKED claim of one job with a
-- lease token, then the fenced complete (two transactions, like a worker).
-- The complete writes its status test as "(...) IS TRUE", as the extension
-- does, so that the planner cannot pick jobs_lease_idx over the primary key
-- (handplain_claim1.sql is the plain form; see bench/README.md).
WITH c AS (SELECT j.id FROM jobqueue.jobs j
            WHERE j.queue_name = :q AND j.status = 'pending' AND j.available_at <= now()
            ORDER BY j.priority DESC, j.available_at, j.id
            LIMIT 1 FOR UPDATE SKIP LOCKED),
     u AS (UPDATE jobqueue.jobs j
              SET status = 'running', attempt_count = j.attempt_count + 1,
                  lease_owner = :owner, lease_token = j.lease_token + 1,
                  started_at = now(), lease_expires_at = now() + interval '60 seconds'
             FROM c WHERE j.id = c.id
           RETURNING j.id, j.payload, j.attempt_count, j.lease_token, j.lease_expires_at)
SELECT coalesce(max(u.id), 0) AS id, coalesce(max(u.lease_token), 0) AS token FROM u \gset
UPDATE jobqueue.jobs
   SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL
 WHERE id = :id AND lease_token = :token AND (status = 'running') IS TRUE
   AND lease_expires_at > now();
