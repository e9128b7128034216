'use strict';
// The queues' counts, shared by the sessions that may read them.
//
// They come from jobqueue.jq_queue_counts (bounded: exact up to a limit,
// whatever the backlog), or from queue_stats before jobqueue 1.4, whose
// cost follows the backlog (with a million pending jobs one read takes a
// good part of a second).  Either way a page load does not run them: the
// dashboard keeps one copy of the rows, read again
//   - for one queue, when the queue changed (a notification, a counter that
//     moved, an action taken here), and
//   - for every queue, every FULL_EVERY_MS, or when a queue appears,
// and never more than a duty cycle of DUTY of the time: after a read that
// took d ms the next waits at least d / DUTY ms.  Actions taken in the
// dashboard refresh their queue at once.
//
// Both show the same rows to every role that may read them, so the copy is
// served only to sessions whose role may, and read on the connection of
// such a session.
const { mayReadCounts, readCounts } = require('./queries');

const DUTY = 0.005;          // at most 0.5 % of the time in these reads
const MIN_GAP_MS = 1000;
const FULL_EVERY_MS = 5 * 60 * 1000;
const TICK_MS = 250;

class StatsCache {
  constructor(sessionsRef) {
    this.sessionsRef = sessionsRef;
    this.rows = null;          // Map queue_name -> row
    this.fullAt = 0;
    this.dirty = new Set();
    this.dirtyAll = false;
    this.nextAllowed = 0;
    this.busy = null;
    this.timer = setInterval(() => this.tick().catch(() => {}), TICK_MS);
    this.timer.unref();
    this.spentMs = 0;          // for the benchmark's account
  }

  markDirty(queues) {
    if (!queues) this.dirtyAll = true;
    else for (const q of queues) this.dirty.add(q);
  }

  // A session that may read queue_stats, preferring one that is watching.
  reader() {
    let best = null;
    for (const s of this.sessionsRef().sessions.values()) {
      if (s.closed || !s.privileges || !mayReadCounts(s.privileges)) continue;
      if (!best || s.streams.size > best.streams.size) best = s;
    }
    return best;
  }

  watched() {
    const now = Date.now();
    for (const s of this.sessionsRef().sessions.values()) {
      if (s.streams.size || now - s.lastSeen < 30000) return true;
    }
    return false;
  }

  async run(session, queue) {
    const t0 = Date.now();
    try {
      return await readCounts(session, queue);
    } finally {
      const d = Date.now() - t0;
      this.spentMs += d;
      this.nextAllowed = Math.max(this.nextAllowed, Date.now() + Math.max(MIN_GAP_MS, d / DUTY - d));
    }
  }

  async full(session) {
    const rows = await this.run(session, null);
    const old = this.rows;
    this.rows = new Map(rows.map((r) => [r.queue_name, { ...r, fetched_at: Date.now() }]));
    this.fullAt = Date.now();
    this.dirtyAll = false;
    this.dirty.clear();
    return changedQueues(old, this.rows);
  }

  async one(session, queue) {
    this.dirty.delete(queue);
    const rows = await this.run(session, queue);
    if (!this.rows) return [];
    const before = this.rows.get(queue);
    if (rows[0]) this.rows.set(queue, { ...rows[0], fetched_at: Date.now() });
    else this.rows.delete(queue);
    return !before || !rows[0] || differs(before, rows[0]) ? [queue] : [];
  }

  async tick() {
    if (this.busy || Date.now() < this.nextAllowed || !this.rows) return;
    if (!this.dirtyAll && !this.dirty.size && Date.now() - this.fullAt < FULL_EVERY_MS) return;
    if (!this.watched()) return;
    const s = this.reader();
    if (!s) return;
    const unknown = [...this.dirty].some((q) => !this.rows.has(q));
    const full = this.dirtyAll || unknown || Date.now() - this.fullAt >= FULL_EVERY_MS || this.dirty.size > 3;
    this.busy = (async () => {
      const changed = full ? await this.full(s) : await this.one(s, this.dirty.values().next().value);
      if (changed.length) this.announce(changed);
    })().finally(() => { this.busy = null; });
    await this.busy;
  }

  announce(queues) {
    for (const s of this.sessionsRef().sessions.values()) s.send('change', { queues, source: 'stats' });
  }

  // The rows for a page: the copy, read first if there is none yet.
  async all(session) {
    if (!this.rows) {
      if (this.busy) await this.busy.catch(() => {});
      if (!this.rows) await this.full(session);
    }
    return [...this.rows.values()];
  }

  async get(session, queue) {
    await this.all(session);
    if (!this.rows.has(queue)) await this.one(session, queue);  // new since the last read, or none
    return this.rows.get(queue) || null;
  }

  // Something was done to the queue here: read it again now.
  async refreshNow(session, queue) {
    if (!this.rows || !mayReadCounts(session.privileges)) return;
    if (this.busy) await this.busy.catch(() => {});
    const changed = await this.one(session, queue);
    if (changed.length) this.announce(changed);
  }

  close() {
    clearInterval(this.timer);
  }
}

const FIELDS = ['paused', 'ready', 'scheduled', 'running', 'waiting', 'dead', 'succeeded', 'cancelled', 'groups_blocked'];
function differs(a, b) {
  return FIELDS.some((f) => a[f] !== b[f]);
}
function changedQueues(old, cur) {
  if (!old) return [...cur.keys()];
  const out = [];
  for (const [q, r] of cur) if (!old.has(q) || differs(old.get(q), r)) out.push(q);
  for (const q of old.keys()) if (!cur.has(q)) out.push(q);
  return out;
}

module.exports = { StatsCache };
