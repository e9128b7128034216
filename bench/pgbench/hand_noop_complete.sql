-- Hand-written SQL: a fenced complete that matches no job.
UPDATE jobqueue.jobs
   SET status = 'succeeded', finished_at = now(), lease_expires_at = NULL
 WHERE id = 0 AND lease_token = 0 AND (status = 'running') IS TRUE
   AND lease_expires_at > now();
