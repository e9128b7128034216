-- Hand-written SQL as usually written: like hand_claim1.sql, but with the
-- plain status test in the complete, which lets the planner choose
-- jobs_lease_idx (every running job) over the primary key when the
-- statistics say that almost no job is running.
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
 WHERE id = :id AND lease_token = :token AND status = 'running'
   AND lease_expires_at > now();
