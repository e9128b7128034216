-- The classic broken claim: the row is picked by a subquery without a lock,
-- so concurrent workers that pick the same row all "claim" it (after waiting
-- for the row, UPDATE re-checks only id = ...), and the complete is not fenced.
WITH u AS (UPDATE jobqueue.jobs
              SET status = 'running', attempt_count = attempt_count + 1,
                  lease_owner = :owner, started_at = now(),
                  lease_expires_at = now() + interval '60 seconds'
            WHERE id = (SELECT id FROM jobqueue.jobs
                         WHERE queue_name = :q AND status = 'pending'
                         ORDER BY priority DESC, available_at, id LIMIT 1)
           RETURNING id)
SELECT coalesce(max(u.id), 0) AS id FROM u \gset
UPDATE jobqueue.jobs SET status = 'succeeded', finished_at = now() WHERE id = :id;
