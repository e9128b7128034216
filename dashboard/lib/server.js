'use strict';
// The HTTP side: static files, the JSON API with its session and CSRF
// checks, and the event stream.
const http = require('http');
const https = require('https');
const fs = require('fs');
const path = require('path');
const api = require('./api');
const { SessionStore, sameToken } = require('./sessions');
const { Hub } = require('./events');
const { StatsCache } = require('./stats');
const { HttpError, httpStatusOf } = require('./db');
const v = require('./validate');

const PUBLIC = path.join(__dirname, '..', 'public');
const STATIC = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['app.js', 'text/javascript; charset=utf-8'],
  '/style.css': ['style.css', 'text/css; charset=utf-8'],
  '/favicon.svg': ['favicon.svg', 'image/svg+xml'],
};
const MAX_BODY = 16 * 1024;

const SECURITY_HEADERS = {
  'Content-Security-Policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

// [method, pattern, handler, needs a session]
const ROUTES = [
  ['GET', /^\/api\/me$/, api.me],
  ['GET', /^\/api\/queues$/, api.listQueues],
  ['GET', /^\/api\/queues\/(?<name>[^/]+)$/, api.getQueue],
  ['POST', /^\/api\/queues\/(?<name>[^/]+)\/pause$/, (s, c) => api.pauseQueue(s, c, false)],
  ['POST', /^\/api\/queues\/(?<name>[^/]+)\/resume$/, (s, c) => api.pauseQueue(s, c, true)],
  ['POST', /^\/api\/queues\/(?<name>[^/]+)\/retry-dead$/, api.retryDead],
  ['GET', /^\/api\/jobs$/, api.listJobs],
  ['GET', /^\/api\/jobs\/(?<id>[^/]+)$/, api.getJob],
  ['POST', /^\/api\/jobs\/(?<id>[^/]+)\/retry$/, api.retryJob],
  ['POST', /^\/api\/jobs\/(?<id>[^/]+)\/cancel$/, api.cancelJob],
  ['GET', /^\/api\/dead-letters$/, api.deadLetters],
  ['GET', /^\/api\/schedules$/, api.listSchedules],
  ['GET', /^\/api\/workers$/, api.workers],
];

function send(res, status, body, headers = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'Content-Type': 'application/json; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(data),
    ...headers,
  });
  res.end(data);
}

function sendError(res, err) {
  const status = httpStatusOf(err);
  const body = { error: err.message };
  if (err.code) body.sqlstate = err.code;
  if (err.detail) body.detail = err.detail;
  if (err.hint) body.hint = err.hint;
  if (status === 500 && !err.code) console.error(err);
  send(res, status, body);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new HttpError(413, 'request body too large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function jsonBody(req) {
  const raw = await readBody(req);
  if (raw === '') return {};
  const type = (req.headers['content-type'] || '').split(';')[0].trim();
  if (type !== 'application/json') throw new HttpError(415, 'the body must be JSON (Content-Type: application/json)');
  let body;
  try {
    body = JSON.parse(raw);
  } catch {
    throw new HttpError(400, 'the body is not valid JSON');
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new HttpError(400, 'the body must be a JSON object');
  return body;
}

// A state-changing request must come from our own page: same origin when
// the browser says where it comes from, and the session's CSRF token.
function checkOrigin(req) {
  const origin = req.headers.origin;
  if (origin && origin !== 'null') {
    let host;
    try {
      host = new URL(origin).host;
    } catch {
      host = null;
    }
    if (host !== req.headers.host) throw new HttpError(403, 'cross-origin request refused');
  } else if (origin === 'null') {
    throw new HttpError(403, 'cross-origin request refused');
  }
}

function parseQuery(url) {
  const out = {};
  for (const [k, val] of url.searchParams) {
    if (k in out) throw new HttpError(400, `parameter ${k} given twice`);
    out[k] = val;
  }
  return out;
}

async function serveStatic(req, res, pathname) {
  const entry = STATIC[pathname];
  if (!entry || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
  const data = await fs.promises.readFile(path.join(PUBLIC, entry[0]));
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'Content-Type': entry[1],
    'Content-Length': data.length,
    'Cache-Control': 'no-cache',
  });
  res.end(req.method === 'HEAD' ? undefined : data);
  return true;
}

function openEvents(req, res, session, hub) {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-store',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
  res.write(`retry: 3000\nevent: hello\ndata: ${JSON.stringify({ live: hub.mode })}\n\n`);
  session.streams.add(res);
  const ping = setInterval(() => res.write(': ping\n\n'), 20000);
  req.on('close', () => {
    clearInterval(ping);
    session.streams.delete(res);
  });
}

async function handle(req, res, ctx) {
  const { sessions, hub, secure } = ctx;
  const url = new URL(req.url, 'http://localhost');
  const pathname = url.pathname;
  if (!pathname.startsWith('/api/')) {
    if (await serveStatic(req, res, pathname)) return;
    send(res, 404, { error: 'not found' });
    return;
  }
  if (req.method === 'POST') checkOrigin(req);

  if (pathname === '/api/login') {
    if (req.method !== 'POST') throw new HttpError(405, 'use POST');
    const body = await jsonBody(req);
    v.only(body, ['user', 'password']);
    const user = v.text(body.user, 'user', 63);
    const password = typeof body.password === 'string' && body.password.length <= 1024 ? body.password : null;
    if (password === null) throw new HttpError(400, 'password must be text');
    const old = sessions.lookup(req);
    if (old) old.close('logged in again');
    const session = await sessions.login(user, password);
    send(res, 200, { user: session.user, csrf: session.csrf, privileges: session.privileges,
      features: session.features, live: hub.mode, poll_interval_ms: session.sampler.intervalMs },
    { 'Set-Cookie': sessions.cookieHeader(session, secure) });
    return;
  }

  const session = sessions.lookup(req);
  if (!session) {
    send(res, 401, { error: 'not logged in (or the session ended)' }, { 'Set-Cookie': sessions.clearCookieHeader(secure) });
    return;
  }
  if (req.method === 'POST' && !sameToken(req.headers['x-csrf-token'], session.csrf)) {
    throw new HttpError(403, 'missing or wrong CSRF token (header X-CSRF-Token)');
  }

  if (pathname === '/api/logout') {
    if (req.method !== 'POST') throw new HttpError(405, 'use POST');
    session.close('logged out');
    send(res, 200, { logged_out: true }, { 'Set-Cookie': sessions.clearCookieHeader(secure) });
    return;
  }
  if (pathname === '/api/events') {
    if (req.method !== 'GET') throw new HttpError(405, 'use GET');
    openEvents(req, res, session, hub);
    return;
  }
  session.touch();
  for (const [method, pattern, handler] of ROUTES) {
    const m = pattern.exec(pathname);
    if (!m) continue;
    if (req.method !== method) continue;
    const params = {};
    for (const [k, val] of Object.entries(m.groups || {})) {
      try {
        params[k] = decodeURIComponent(val);
      } catch {
        throw new HttpError(400, 'malformed URL');
      }
    }
    const query = parseQuery(url);
    const body = method === 'POST' ? await jsonBody(req) : {};
    if (method === 'POST' && Object.keys(query).length) throw new HttpError(400, 'parameters go in the JSON body');
    const t0 = process.hrtime.bigint();
    const out = await handler(session, { params, query, body, hub, stats: ctx.stats });
    const took = Number(process.hrtime.bigint() - t0) / 1e6;
    send(res, 200, { ...out, took_ms: Math.round(took * 10) / 10 }, { 'Server-Timing': `db;dur=${took.toFixed(1)}` });
    return;
  }
  if (ROUTES.some(([, p]) => p.test(pathname))) throw new HttpError(405, 'method not allowed');
  send(res, 404, { error: 'no such API endpoint' });
}

async function startServer(config) {
  let sessions = null;
  const hub = new Hub(config, () => sessions);
  sessions = new SessionStore(config, hub);
  const stats = new StatsCache(() => sessions);
  hub.stats = stats;
  sessions.stats = stats;
  const secure = !!config.tls;
  const ctx = { sessions, hub, secure, stats };
  const onRequest = (req, res) => {
    handle(req, res, ctx).catch((err) => {
      if (res.headersSent) {
        res.end();
        return;
      }
      sendError(res, err);
    });
  };
  const server = secure ? https.createServer(config.tls, onRequest) : http.createServer(onRequest);
  server.headersTimeout = 20000;
  server.requestTimeout = 60000;
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.listen.port, config.listen.host, resolve);
  });
  const addr = server.address();
  const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  process.stdout.write(`jobqueue-dashboard: listening on ${secure ? 'https' : 'http'}://${shown}:${addr.port}/ ` +
    `(database ${config.db.database} on ${config.db.host}:${config.db.port})\n`);
  return {
    server,
    port: addr.port,
    close: () => new Promise((resolve) => {
      sessions.closeAll();
      hub.close();
      stats.close();
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

module.exports = { startServer };
