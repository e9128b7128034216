'use strict';
// Connections as a role, and what a database error means for HTTP.
const pg = require('pg');

// bigint columns (ids, counts) as numbers while they are exact, as text beyond.
pg.types.setTypeParser(20, (v) => {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : v;
});

const APPLICATION_NAME = 'jobqueue-dashboard';

// A connection as `user`; the password is used for this connection only and
// not kept.  Every statement is bounded by statement_timeout, and the search
// path is pinned (every query names its schema anyway).
async function connectAs(db, user, password, statementTimeoutMs) {
  const client = new pg.Client({
    host: db.host,
    port: db.port,
    database: db.database,
    ssl: db.ssl,
    user,
    password,
    application_name: APPLICATION_NAME,
    statement_timeout: statementTimeoutMs,
    lock_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: statementTimeoutMs,
    connectionTimeoutMillis: db.connectTimeoutMs,
    options: '-c search_path=pg_catalog,pg_temp',
  });
  try {
    await client.connect();
  } catch (err) {
    client.end().catch(() => {});
    throw err;
  }
  return client;
}

class HttpError extends Error {
  constructor(status, message, code) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// SQLSTATE -> HTTP status.  The message is the database's own.
function httpStatusOf(err) {
  if (err instanceof HttpError) return err.status;
  const code = err.code || '';
  if (code === '42501') return 403;                       // insufficient_privilege
  if (code === '28P01' || code === '28000') return 401;   // invalid password / authorization
  if (code === '42704' || code === '42883') return 404;   // undefined object / function
  if (code === '57014') return 504;                       // statement timeout
  if (code === '55P03' || code === '40001' || code === '40P01') return 409;
  if (/^(22|42602|42622|2202E)/.test(code)) return 400;   // data exceptions, bad names
  if (/^(08|57P)/.test(code) || err.message === 'Connection terminated unexpectedly') return 503;
  return 500;
}

module.exports = { connectAs, HttpError, httpStatusOf, APPLICATION_NAME };
