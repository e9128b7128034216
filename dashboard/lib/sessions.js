'use strict';
// Sessions: one per login, each with its own connection as the role that
// logged in.  The session id travels in an HttpOnly, SameSite=Strict
// cookie; the CSRF token is handed to the page in the login answer and
// must come back in a header with every state-changing request.
const crypto = require('crypto');
const { connectAs, HttpError } = require('./db');
const { readPrivileges } = require('./privileges');
const { Sampler } = require('./sampler');

const COOKIE = 'jqd_session';

function randomToken() {
  return crypto.randomBytes(32).toString('base64url');
}

function sameToken(a, b) {
  if (typeof a !== 'string' || typeof b !== 'string') return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

class Session {
  constructor(store, user, client) {
    this.store = store;
    this.id = randomToken();
    this.csrf = randomToken();
    this.user = user;
    this.client = client;
    this.lastSeen = Date.now();
    this.streams = new Set();
    this.closed = false;
    this.privileges = null;
    this.features = null;
    client.on('error', () => this.close('the connection to the database was lost'));
    client.on('end', () => this.close('the connection to the database was closed'));
    this.sampler = new Sampler(this, store.config.pollIntervalMs);
  }

  async query(text, values) {
    if (this.closed) throw new HttpError(401, 'session ended');
    return this.client.query(text, values);
  }

  touch() {
    this.lastSeen = Date.now();
  }

  // Tell this session's open event streams something.
  send(event, data) {
    const chunk = `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
    for (const res of this.streams) res.write(chunk);
  }

  close(reason) {
    if (this.closed) return;
    this.closed = true;
    this.sampler.stop();
    this.send('logout', { reason });
    for (const res of this.streams) res.end();
    this.streams.clear();
    this.client.end().catch(() => {});
    this.store.sessions.delete(this.id);
    this.store.onClose(this);
  }
}

class SessionStore {
  constructor(config, hub) {
    this.config = config;
    this.hub = hub;
    this.sessions = new Map();
    this.sweeper = setInterval(() => this.sweep(), Math.min(10000, config.idleTimeoutMs / 4));
    this.sweeper.unref();
  }

  // Log in: connect as the role.  A failed authentication is the server's
  // answer (401 with its message), anything else is passed on.
  async login(user, password) {
    if (this.sessions.size >= this.config.maxSessions) {
      this.sweep();
      if (this.sessions.size >= this.config.maxSessions) {
        throw new HttpError(503, 'too many sessions are open; try again later');
      }
    }
    let client;
    try {
      client = await connectAs(this.config.db, user, password, this.config.statementTimeoutMs);
    } catch (err) {
      if (err.code === '28P01' || err.code === '28000') throw new HttpError(401, err.message, err.code);
      if (err.code === '3D000') throw new HttpError(502, err.message, err.code);
      throw new HttpError(502, `cannot connect to the database: ${err.message}`, err.code);
    }
    const session = new Session(this, user, client);
    try {
      await session.refreshPrivileges();
    } catch (err) {
      client.end().catch(() => {});
      throw err;
    }
    this.sessions.set(session.id, session);
    session.sampler.start();
    await this.hub.attach(session, password);
    return session;
  }

  // The session of a request, or null; an expired one is closed here.
  lookup(req) {
    const id = cookieValue(req.headers.cookie, COOKIE);
    if (!id) return null;
    const s = this.sessions.get(id);
    if (!s) return null;
    if (Date.now() - s.lastSeen > this.config.idleTimeoutMs) {
      s.close('idle timeout');
      return null;
    }
    return s;
  }

  sweep() {
    const now = Date.now();
    for (const s of [...this.sessions.values()]) {
      if (now - s.lastSeen > this.config.idleTimeoutMs) s.close('idle timeout');
    }
  }

  onClose(session) {
    this.hub.detach(session);
  }

  closeAll() {
    clearInterval(this.sweeper);
    for (const s of [...this.sessions.values()]) s.close('the dashboard is stopping');
  }

  cookieHeader(session, secure) {
    const maxAge = Math.ceil(this.config.idleTimeoutMs / 1000);
    return `${COOKIE}=${session.id}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAge}${secure ? '; Secure' : ''}`;
  }

  clearCookieHeader(secure) {
    return `${COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0${secure ? '; Secure' : ''}`;
  }
}

Session.prototype.refreshPrivileges = async function refreshPrivileges() {
  const { privileges, features } = await readPrivileges(this);
  this.privileges = privileges;
  this.features = features;
};

function cookieValue(header, name) {
  if (!header) return null;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return null;
}

module.exports = { SessionStore, sameToken, COOKIE };
