'use strict';
// Command line: what to listen on, which database, and the limits of a
// session.  Everything is checked here, before anything starts.
const net = require('net');
const fs = require('fs');

const usage = `Usage: jobqueue-dashboard --listen HOST:PORT --dsn 'postgresql://host:port/dbname' [options]

  --listen HOST:PORT        where to serve the dashboard (loopback only without TLS)
  --dsn URL                 the database; no user or password (they come from the
                            login form). A Unix socket: postgresql:///dbname?host=/run/postgresql
  --tls-cert FILE           serve HTTPS with this certificate chain (PEM) ...
  --tls-key FILE            ... and this private key (PEM)
  --insecure-no-tls         allow a non-loopback --listen address without TLS
                            (behind a TLS-terminating proxy, say)
  --idle-timeout SECONDS    log a session out after this long without a request (default 900)
  --statement-timeout MS    statement_timeout of every session's connection (default 5000)
  --max-sessions N          sessions open at once (default 50)
  --poll                    never LISTEN; find changes by polling (for a transaction pooler)
  --poll-interval SECONDS   how often sessions sample the counters (default 5)
  -h, --help                this text
`;

function isLoopback(host) {
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  if (net.isIPv6(host)) return host === '::1';
  return false;
}

function parseListen(value) {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(value || '');
  if (!m) throw new Error(`--listen must be HOST:PORT (got ${JSON.stringify(value)})`);
  const host = m[1] || m[2];
  const port = Number(m[3]);
  if (port < 0 || port > 65535) throw new Error(`--listen: port ${port} out of range`);
  return { host, port };
}

// The DSN names a server and a database, nothing else of a person.
function parseDsn(value) {
  let url;
  try {
    url = new URL(value);
  } catch {
    throw new Error('--dsn must be a URL: postgresql://host:port/dbname');
  }
  if (url.protocol !== 'postgresql:' && url.protocol !== 'postgres:') {
    throw new Error('--dsn must start with postgresql://');
  }
  if (url.username || url.password) {
    throw new Error('--dsn must not contain a user or a password: they come from the login form');
  }
  const database = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!database) throw new Error('--dsn must name a database: postgresql://host:port/dbname');
  const params = url.searchParams;
  const db = {
    host: params.get('host') || (url.hostname ? decodeURIComponent(url.hostname).replace(/^\[|\]$/g, '') : 'localhost'),
    port: Number(params.get('port') || url.port || 5432),
    database,
  };
  for (const key of params.keys()) {
    if (!['host', 'port', 'sslmode', 'connect_timeout'].includes(key)) {
      throw new Error(`--dsn: parameter ${key} is not supported (host, port, sslmode, connect_timeout are)`);
    }
    if (key === 'user' || key === 'password') throw new Error('--dsn must not contain a user or a password');
  }
  const sslmode = params.get('sslmode') || 'disable';
  if (sslmode === 'require' || sslmode === 'prefer') db.ssl = { rejectUnauthorized: false };
  else if (sslmode === 'verify-ca' || sslmode === 'verify-full') db.ssl = { rejectUnauthorized: true };
  else if (sslmode !== 'disable' && sslmode !== 'allow') throw new Error(`--dsn: unknown sslmode ${sslmode}`);
  db.connectTimeoutMs = 1000 * Number(params.get('connect_timeout') || 10);
  return db;
}

function positive(name, value, max) {
  if (!/^\d+$/.test(value || '') || Number(value) < 1 || Number(value) > max) {
    throw new Error(`${name} must be a whole number from 1 to ${max}`);
  }
  return Number(value);
}

function parseArgs(argv) {
  const c = {
    idleTimeoutMs: 900 * 1000,
    statementTimeoutMs: 5000,
    maxSessions: 50,
    poll: false,
    pollIntervalMs: 5000,
    insecureNoTls: false,
  };
  const take = (i) => {
    if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
    return argv[i + 1];
  };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) {
      argv = [...argv.slice(0, i), a.slice(0, eq), a.slice(eq + 1), ...argv.slice(i + 1)];
      a = argv[i];
    }
    switch (a) {
      case '-h': case '--help': c.help = true; break;
      case '--listen': c.listen = parseListen(take(i)); i++; break;
      case '--dsn': c.db = parseDsn(take(i)); i++; break;
      case '--tls-cert': c.tlsCert = take(i); i++; break;
      case '--tls-key': c.tlsKey = take(i); i++; break;
      case '--insecure-no-tls': c.insecureNoTls = true; break;
      case '--idle-timeout': c.idleTimeoutMs = 1000 * positive(a, take(i), 7 * 86400); i++; break;
      case '--statement-timeout': c.statementTimeoutMs = positive(a, take(i), 3600 * 1000); i++; break;
      case '--max-sessions': c.maxSessions = positive(a, take(i), 10000); i++; break;
      case '--poll': c.poll = true; break;
      case '--poll-interval': c.pollIntervalMs = 1000 * positive(a, take(i), 3600); i++; break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  if (c.help) return c;
  if (!c.listen) throw new Error('--listen HOST:PORT is required');
  if (!c.db) throw new Error('--dsn is required');
  if (!!c.tlsCert !== !!c.tlsKey) throw new Error('--tls-cert and --tls-key go together');
  if (c.tlsCert) {
    c.tls = { cert: fs.readFileSync(c.tlsCert), key: fs.readFileSync(c.tlsKey) };
  }
  if (!c.tls && !isLoopback(c.listen.host) && !c.insecureNoTls) {
    throw new Error(`refusing to listen on ${c.listen.host} without TLS: passwords and session cookies ` +
      'would cross the network in clear text. Give --tls-cert and --tls-key, listen on a loopback ' +
      'address, or pass --insecure-no-tls when a TLS proxy is in front');
  }
  return c;
}

module.exports = { parseArgs, parseListen, parseDsn, isLoopback, usage };
