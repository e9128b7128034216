'use strict';
// Every parameter of the API, checked before it reaches a query (where it
// is only ever a bound parameter).
const { HttpError } = require('./db');

const STATUSES = ['waiting', 'pending', 'running', 'succeeded', 'dead', 'cancelled'];

function bad(msg) {
  return new HttpError(400, msg);
}

function queueName(v, name = 'queue') {
  if (typeof v !== 'string' || !/^[A-Za-z0-9_\-.:]{1,128}$/.test(v)) {
    throw bad(`${name} must be a queue name: 1 to 128 of A-Z a-z 0-9 _ - . :`);
  }
  return v;
}

function optional(v, check, ...rest) {
  return v === undefined || v === null || v === '' ? null : check(v, ...rest);
}

function jobId(v, name = 'id') {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return String(v);
  if (typeof v !== 'string' || !/^[1-9][0-9]{0,18}$/.test(v) || BigInt(v) > 9223372036854775807n) {
    throw bad(`${name} must be a job id (a positive whole number)`);
  }
  return v;
}

function status(v) {
  if (!STATUSES.includes(v)) throw bad(`status must be one of ${STATUSES.join(', ')}`);
  return v;
}

function text(v, name, maxBytes) {
  if (typeof v !== 'string' || v.length === 0 || Buffer.byteLength(v) > maxBytes || v.includes('\0')) {
    throw bad(`${name} must be 1 to ${maxBytes} bytes of text`);
  }
  return v;
}

function int(v, name, min, max) {
  const s = typeof v === 'number' ? String(v) : v;
  if (typeof s !== 'string' || !/^[0-9]{1,9}$/.test(s) || Number(s) < min || Number(s) > max) {
    throw bad(`${name} must be a whole number from ${min} to ${max}`);
  }
  return Number(s);
}

function timestamp(v, name) {
  const d = typeof v === 'string' && v.length <= 40 ? new Date(v) : null;
  if (!d || Number.isNaN(d.getTime())) throw bad(`${name} must be a date and time (ISO 8601)`);
  return d;
}

// A timestamp kept as PostgreSQL wrote it (microseconds, which a Date would
// lose), for a keyset cursor.
function exactTimestamp(v, name) {
  timestamp(v, name);
  if (!/^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}(:?[0-9]{2})?)$/.test(v)) {
    throw bad(`${name} must be a date and time with its offset`);
  }
  return v;
}

// Only the parameters listed may be given.
function only(params, allowed) {
  for (const k of Object.keys(params)) {
    if (!allowed.includes(k)) throw bad(`unknown parameter ${k} (allowed: ${allowed.join(', ') || 'none'})`);
  }
}

module.exports = { queueName, jobId, status, text, int, timestamp, exactTimestamp, optional, only, STATUSES };
