'use strict';
// Each session samples the event counters (jq_counters, shared memory: no
// table is read) and, where the installation has them, the latency
// distributions (jq_latency), on its own connection and with its own
// rights.  The samples feed the sparklines and the "nobody is claiming"
// badge, and a counter that moved tells the session's pages that a queue
// changed: the only change signal when LISTEN is not possible, and the one
// for changes nobody announces (a job dead-lettered by the reaper).

const KEEP = 121;  // samples kept: ten minutes at the default interval

const COUNTERS_SQL = `
SELECT c.queue_name, c.enqueued, c.claimed, c.completed, c.failed_retryable, c.failed_permanent,
       c.dead_lettered, c.replayed, c.leases_expired, c.purged, c.claim_calls, c.claim_time
FROM jobqueue.jq_counters() c
WHERE c.queue_name IS NOT NULL`;

function intervalSeconds(v) {
  if (v == null) return null;
  if (typeof v === 'number') return v;
  if (typeof v === 'object') {
    return (v.years || 0) * 31557600 + (v.months || 0) * 2592000 + (v.days || 0) * 86400 +
      (v.hours || 0) * 3600 + (v.minutes || 0) * 60 + (v.seconds || 0) + (v.milliseconds || 0) / 1000;
  }
  return null;
}

class Sampler {
  constructor(session, intervalMs) {
    this.session = session;
    this.intervalMs = intervalMs;
    this.samples = [];
    this.timer = null;
    this.running = false;
  }

  start() {
    if (this.timer) return;
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
    this.sample();
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
  }

  async sample() {
    const s = this.session;
    if (this.running || s.closed || !s.privileges) return;
    if (!s.privileges.counters && !s.privileges.latency) {
      // Nothing to sample: with no LISTEN either, the pages poll by themselves.
      if (!s.store.hub.live) s.send('change', { queues: null, source: 'poll' });
      return;
    }
    this.running = true;
    try {
      const sample = { t: Date.now(), queues: {} };
      if (s.privileges.counters) {
        const r = await s.query(COUNTERS_SQL);
        for (const row of r.rows) sample.queues[row.queue_name] = { ...row };
      }
      if (s.privileges.latency) {
        const r = await s.query('SELECT l.* FROM jobqueue.jq_latency() l');
        for (const row of r.rows) {
          const q = sample.queues[row.queue_name] || (sample.queues[row.queue_name] = {});
          const kind = row.kind || 'all';
          q.latency = q.latency || {};
          q.latency[kind] = { p50: intervalSeconds(row.p50), p99: intervalSeconds(row.p99), count: row.count };
        }
      }
      const prev = this.samples[this.samples.length - 1];
      this.samples.push(sample);
      if (this.samples.length > KEEP) this.samples.shift();
      if (prev) {
        const changed = Object.keys(sample.queues).filter((q) => moved(prev.queues[q], sample.queues[q]));
        if (changed.length) {
          if (s.store.stats) s.store.stats.markDirty(changed);
          s.send('change', { queues: changed, source: 'counters' });
        }
      }
    } catch (err) {
      // A sample is a hint; a failed one is skipped (the pages show the error of their own queries).
    } finally {
      this.running = false;
    }
  }

  // Rates between consecutive samples, per queue: the sparklines.
  series() {
    const out = {};
    for (let i = 1; i < this.samples.length; i++) {
      const a = this.samples[i - 1];
      const b = this.samples[i];
      const dt = (b.t - a.t) / 1000;
      for (const [q, cur] of Object.entries(b.queues)) {
        const old = a.queues[q];
        const s = out[q] || (out[q] = { t: [], completed: [], enqueued: [], dead: [], claim_ms: [], wait_p99: [] });
        s.t.push(b.t);
        const d = (k) => (old && cur[k] != null && old[k] != null ? Math.max(0, cur[k] - old[k]) : null);
        s.completed.push(d('completed') == null ? null : d('completed') / dt);
        s.enqueued.push(d('enqueued') == null ? null : d('enqueued') / dt);
        s.dead.push(d('dead_lettered') == null ? null : d('dead_lettered') / dt);
        const calls = d('claim_calls');
        s.claim_ms.push(calls ? d('claim_time') / calls : null);
        const wait = cur.latency && (cur.latency.wait || cur.latency.all);
        s.wait_p99.push(wait ? wait.p99 : null);
      }
    }
    return { interval_ms: this.intervalMs, queues: out };
  }

  // Did anybody claim from the queue during the last `ms`?  null: not known.
  claimedWithin(queue, ms) {
    const last = this.samples[this.samples.length - 1];
    if (!last || !last.queues[queue] || last.queues[queue].claimed == null) return null;
    const first = this.samples.find((x) => x.t >= last.t - ms);
    if (!first || last.t - first.t < ms / 2 || !first.queues[queue]) return null;
    return last.queues[queue].claimed > first.queues[queue].claimed;
  }
}

function moved(a, b) {
  if (!a || !b) return !!b;
  for (const k of ['enqueued', 'claimed', 'completed', 'failed_retryable', 'failed_permanent',
    'dead_lettered', 'replayed', 'leases_expired', 'purged']) {
    if (a[k] !== b[k]) return true;
  }
  return false;
}

module.exports = { Sampler, intervalSeconds };
