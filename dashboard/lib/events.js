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
//
// When the listening connection is lost (a restart, pg_terminate_backend),
// the hub listens again, with backoff, on the connection of a session
// that is still open (there is no password to open a new one with); the
// counter samples carry the changes meanwhile.  The next login opens a
// dedicated connection again.
const crypto = require('crypto');
const { connectAs } = require('./db');

const CHANNELS = ['jobqueue', 'jobqueue_finished'];
const PROBE = 'jobqueue_dashboard_probe';
const PROBE_WAIT_MS = 3000;
const FLUSH_MS = 250;
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 30000;

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
    this.borrowed = null;      // the session whose connection listens, if not a dedicated one
    this.retryTimer = null;
    this.retryMs = RETRY_FIRST_MS;
    this.onNotification = (n) => this.heard(n);
  }

  store() {
    return this.sessionsRef();
  }

  // A login happened: make sure the listener runs.
  // A login happened: make sure the listener runs on a dedicated connection.
  async attach(session, password) {
    if (this.config.poll || this.connecting || (this.client && !this.borrowed)) return;
    this.connecting = this.open(session, password).finally(() => { this.connecting = null; });
    await this.connecting;
  }

  async open(session, password) {
    let client;
    try {
      client = await connectAs(this.config.db, session.user, password, this.config.statementTimeoutMs);
      client.on('error', () => this.lost(client));
      client.on('end', () => this.lost(client));
      await this.listenOn(client, session);
      this.unborrow();
      this.use(client, null);
    } catch (err) {
      if (client) {
        client.removeAllListeners('end');
        client.end().catch(() => {});
      }
      if (!this.client) this.failed(err);
    }
  }

  // LISTEN on the channels and prove it with the probe; throws if not heard.
  async listenOn(client, session) {
    client.on('notification', this.onNotification);
    try {
      for (const ch of [...CHANNELS, PROBE]) await client.query(`LISTEN ${ch}`);
      const ok = await this.probe(session, client);
      if (!ok) {
        const err = new Error('LISTEN heard nothing: a transaction pooler?');
        err.unheard = true;
        throw err;
      }
    } catch (err) {
      client.removeListener('notification', this.onNotification);
      throw err;
    }
  }

  use(client, borrowed) {
    this.client = client;
    this.borrowed = borrowed;
    this.live = true;
    this.mode = 'listen';
    this.retryMs = RETRY_FIRST_MS;
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  failed(err) {
    this.client = null;
    this.borrowed = null;
    this.live = false;
    // A pooler will not start to deliver notifications: poll from then on.
    this.mode = err.unheard ? `polling (${err.message})` : `polling (LISTEN failed: ${err.message})`;
    if (!err.unheard) this.retryLater();
  }

  // Stop listening on a session's connection (a dedicated one took over).
  unborrow() {
    const s = this.borrowed;
    if (!s) return;
    this.borrowed = null;
    s.client.removeListener('notification', this.onNotification);
    if (!s.closed) s.query('UNLISTEN *').catch(() => {});
  }

  retryLater() {
    if (this.config.poll || this.retryTimer || this.store().sessions.size === 0) return;
    const wait = this.retryMs;
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.relisten().catch(() => {});
    }, wait);
    this.retryTimer.unref();
  }

  // Listen again on the connection of an open session (the newest one).
  async relisten() {
    if (this.client || this.connecting) return;
    const session = [...this.store().sessions.values()].filter((s) => !s.closed).pop();
    if (!session) return;
    this.connecting = (async () => {
      try {
        await this.listenOn(session.client, session);
        if (session.closed) throw new Error('the session ended');
        this.use(session.client, session);
      } catch (err) {
        this.failed(err);
      }
    })().finally(() => { this.connecting = null; });
    await this.connecting;
  }

  // Does a NOTIFY from the session's connection reach the listener?
  async probe(session, client) {
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
    this.borrowed = null;
    this.live = false;
    this.mode = 'polling (the listening connection was lost; listening again)';
    this.retryLater();
  }

  // A session ended: if it lent its connection, listen elsewhere; the last
  // one takes the listener with it.
  detach(session) {
    if (session && this.borrowed === session) {
      session.client.removeListener('notification', this.onNotification);
      this.lost(this.client);
    }
    if (this.store().sessions.size === 0) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
      this.retryMs = RETRY_FIRST_MS;
      if (this.client) {
        const c = this.client;
        this.client = null;
        c.removeAllListeners('end');
        c.end().catch(() => {});
      }
      this.live = false;
      if (!this.config.poll) this.mode = 'not connected';
    }
  }

  close() {
    clearTimeout(this.flushTimer);
    clearTimeout(this.retryTimer);
    this.retryTimer = null;
    if (this.client && !this.borrowed) {
      this.client.removeAllListeners('end');
      this.client.end().catch(() => {});
    }
    this.client = null;
    this.borrowed = null;
  }
}

module.exports = { Hub };
