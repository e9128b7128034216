'use strict';
// Live updates.  One dedicated connection LISTENs on the queues' wake-up
// channel ("jobqueue", payload: the queue name) and on the finished-job
// channel ("jobqueue_finished", payload "<id> <status>"); what it hears is
// gathered for a moment and sent to every open event stream as one
// "change" event.  LISTEN needs no privilege beyond connecting, so the
// connection is opened with the credentials of a login as it happens (the
// password is not kept) and closed when the last session ends.
//
// Behind a transaction pooler LISTEN seems to work but hears nothing, so
// the connection first proves itself: a session sends a NOTIFY on a probe
// channel and the listener must hear it.  When it does not (or --poll is
// given), the hub stays off and the sessions' counter samples are the
// change signal (see sampler.js).
const crypto = require('crypto');
const { connectAs } = require('./db');

const CHANNELS = ['jobqueue', 'jobqueue_finished'];
const PROBE = 'jobqueue_dashboard_probe';
const PROBE_WAIT_MS = 3000;
const FLUSH_MS = 250;

class Hub {
  constructor(config, sessions) {
    this.config = config;
    this.sessionsRef = sessions;
    this.client = null;
    this.connecting = null;
    this.live = false;
    this.mode = config.poll ? 'polling (--poll)' : 'not connected';
    this.pendingQueues = new Set();
    this.finished = 0;
    this.flushTimer = null;
    this.probes = new Map();
  }

  store() {
    return this.sessionsRef();
  }

  // A login happened: make sure the listener runs.
  async attach(session, password) {
    if (this.config.poll || this.client || this.connecting) return;
    this.connecting = this.open(session, password).finally(() => { this.connecting = null; });
    await this.connecting;
  }

  async open(session, password) {
    let client;
    try {
      client = await connectAs(this.config.db, session.user, password, this.config.statementTimeoutMs);
      client.on('notification', (n) => this.heard(n));
      client.on('error', () => this.lost(client));
      client.on('end', () => this.lost(client));
      for (const ch of [...CHANNELS, PROBE]) await client.query(`LISTEN ${ch}`);
      this.client = client;
      const ok = await this.probe(session);
      if (!ok) {
        this.mode = 'polling (LISTEN heard nothing: a transaction pooler?)';
        this.client = null;
        client.removeAllListeners('end');
        await client.end().catch(() => {});
        return;
      }
      this.live = true;
      this.mode = 'listen';
    } catch (err) {
      this.mode = `polling (LISTEN failed: ${err.message})`;
      this.live = false;
      if (client) client.end().catch(() => {});
      this.client = null;
    }
  }

  // Does a NOTIFY from the session's connection reach the listener?
  async probe(session) {
    const token = crypto.randomBytes(12).toString('hex');
    const heard = new Promise((resolve) => {
      const timer = setTimeout(() => { this.probes.delete(token); resolve(false); }, PROBE_WAIT_MS);
      this.probes.set(token, () => { clearTimeout(timer); resolve(true); });
    });
    await session.query('SELECT pg_catalog.pg_notify($1, $2)', [PROBE, token]);
    return heard;
  }

  heard(n) {
    if (n.channel === PROBE) {
      const done = this.probes.get(n.payload);
      if (done) {
        this.probes.delete(n.payload);
        done();
      }
      return;
    }
    if (n.channel === 'jobqueue') {
      this.pendingQueues.add(n.payload);
      if (this.stats) this.stats.markDirty([n.payload]);
    }
    else this.finished++;
    this.schedule();
  }

  // Something the dashboard itself did (a replay, a pause): tell everybody now.
  touch(queue) {
    if (queue) this.pendingQueues.add(queue);
    else this.finished++;
    this.schedule(0);
  }

  schedule(delay = FLUSH_MS) {
    if (this.flushTimer && delay > 0) return;
    clearTimeout(this.flushTimer);
    this.flushTimer = setTimeout(() => this.flush(), delay);
  }

  flush() {
    this.flushTimer = null;
    const data = { queues: [...this.pendingQueues], finished: this.finished, source: 'listen' };
    if (this.finished) data.queues = null;  // a finished job names no queue: every page may have changed
    this.pendingQueues.clear();
    this.finished = 0;
    for (const s of this.store().sessions.values()) s.send('change', data);
  }

  lost(client) {
    if (this.client !== client) return;
    this.client = null;
    this.live = false;
    this.mode = 'polling (the listening connection was lost; it comes back with the next login)';
  }

  // A session ended: the last one takes the listener with it.
  detach() {
    if (this.store().sessions.size === 0 && this.client) {
      const c = this.client;
      this.client = null;
      this.live = false;
      this.mode = 'not connected';
      c.removeAllListeners('end');
      c.end().catch(() => {});
    }
  }

  close() {
    clearTimeout(this.flushTimer);
    if (this.client) {
      this.client.removeAllListeners('end');
      this.client.end().catch(() => {});
      this.client = null;
    }
  }
}

module.exports = { Hub };
