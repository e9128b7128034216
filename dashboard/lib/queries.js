'use strict';
// Statements used in more than one place.

// One row per queue, from jobqueue.queue_stats (the partial indexes): its
// cost follows the backlog.  Used where jq_queue_counts is missing (before
// jobqueue 1.4) or not granted.
const QUEUES_SQL = `
SELECT s.queue_name, s.paused, s.ready, s.scheduled, s.running, s.expiring_soon, s.waiting,
       s.dead, s.succeeded, s.cancelled,
       EXTRACT(epoch FROM s.oldest_ready_age)::float8 AS oldest_ready_s,
       EXTRACT(epoch FROM s.oldest_dead_age)::float8 AS oldest_dead_s,
       s.groups_blocked
FROM jobqueue.queue_stats s`;

// The same counts at a bounded cost (jobqueue 1.4): exact up to
// COUNT_LIMIT, COUNT_LIMIT + 1 for more, whatever the backlog.
const COUNT_LIMIT = 1000;
const COUNTS_SQL = `
SELECT s.queue_name, s.paused, s.ready, s.scheduled, s.running, s.expiring_soon, s.waiting,
       s.dead, s.succeeded, s.cancelled,
       EXTRACT(epoch FROM s.oldest_ready_age)::float8 AS oldest_ready_s,
       EXTRACT(epoch FROM s.oldest_dead_age)::float8 AS oldest_dead_s,
       s.groups_blocked
FROM jobqueue.jq_queue_counts($1::text[], $2) s`;

function mayReadCounts(privileges) {
  return !!(privileges.queue_counts || privileges.queue_stats);
}

// The counts of one queue (or of all, by name), the cheap way where the
// role may.
async function readCounts(session, queue) {
  if (session.privileges.queue_counts) {
    const r = await session.query(COUNTS_SQL, [queue ? [queue] : null, COUNT_LIMIT]);
    return r.rows.map((row) => ({ ...row, count_limit: COUNT_LIMIT }));
  }
  const r = queue
    ? await session.query(`${QUEUES_SQL} WHERE s.queue_name OPERATOR(pg_catalog.=) $1`, [queue])
    : await session.query(`${QUEUES_SQL} ORDER BY s.queue_name`);
  return r.rows;
}

module.exports = { QUEUES_SQL, COUNTS_SQL, COUNT_LIMIT, mayReadCounts, readCounts };
