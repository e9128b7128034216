'use strict';
// Statements used in more than one place.

// One row per queue, from jobqueue.queue_stats (the partial indexes).
const QUEUES_SQL = `
SELECT s.queue_name, s.paused, s.ready, s.scheduled, s.running, s.expiring_soon, s.waiting,
       s.dead, s.succeeded, s.cancelled,
       EXTRACT(epoch FROM s.oldest_ready_age)::float8 AS oldest_ready_s,
       EXTRACT(epoch FROM s.oldest_dead_age)::float8 AS oldest_dead_s,
       s.groups_ready, s.groups_running, s.groups_blocked
FROM jobqueue.queue_stats s`;

module.exports = { QUEUES_SQL };
