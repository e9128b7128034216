'use strict';

/** Thrown by a handler: the job failed and must not be retried (dead at once). */
class PermanentError extends Error {
  constructor(message, { code } = {}) {
    super(message);
    this.name = 'PermanentError';
    if (code !== undefined) this.code = code;
  }
}

/** Thrown by a handler: retry after `retryIn` seconds instead of the queue's backoff. */
class RetryLater extends Error {
  constructor(message, { retryIn, code } = {}) {
    super(message);
    this.name = 'RetryLater';
    this.retryIn = retryIn;
    if (code !== undefined) this.code = code;
  }
}

/**
 * A worker stopped (or did not start) on an error that no retry can fix:
 * authentication, an unknown database, the extension missing, missing
 * privileges, an unknown queue.  `code` is the SQLSTATE, `cause` the
 * error of the server or the driver.
 */
class FatalError extends Error {
  constructor(message, cause) {
    super(message, { cause });
    this.name = 'FatalError';
    this.code = cause && cause.code;
  }
}

/** Cut a string to at most `max` UTF-8 bytes, on a character boundary. */
function cutBytes(s, max) {
  if (s.length * 3 <= max) return s; // no string of this length can be longer
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= max) return s;
  let end = max;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/** Text PostgreSQL takes: no NUL characters (a text value cannot hold them). */
const noNul = (s) => (s.includes('\u0000') ? s.replace(/\u0000/g, '') : s);

// The longest retry_in jq_fail takes is 100 years.
const MAX_RETRY_IN = 100 * 365 * 86400;
// The stack trace sent: the server keeps jobqueue.max_error_stack_size of it.
const MAX_STACK = 65536;

/**
 * The class name of an error: its `name`, or its constructor's name when
 * `name` is the inherited 'Error' (class Boom extends Error {} has name
 * 'Error' and constructor Boom); 'Error' for a thrown non-object.
 */
function className(err) {
  if (err === null || typeof err !== 'object') return 'Error';
  if (typeof err.name === 'string' && err.name && err.name !== 'Error') return err.name;
  const c = err.constructor && err.constructor.name;
  return typeof c === 'string' && c && c !== 'Object' ? c : 'Error';
}

/**
 * { code, message, retryable, retryIn, stack } for jq_fail.  The code: the
 * error's `code` property when it is a non-empty string, else its class
 * name (the rule of all the jobqueue clients).  PermanentError is not
 * retryable, anything else is; a non-negative `retryIn` (seconds)
 * replaces the backoff of a retryable failure.  stack: the error's stack
 * trace, or null.
 */
function classify(err) {
  const isObj = err !== null && typeof err === 'object';
  let code = isObj && typeof err.code === 'string' && err.code ? err.code : className(err);
  code = cutBytes(noNul(code), 128) || 'Error';
  let message = isObj && typeof err.message === 'string' ? err.message : String(err);
  message = noNul(message) || code;
  const retryable = !(err instanceof PermanentError);
  let retryIn = null;
  if (retryable && isObj && typeof err.retryIn === 'number' && err.retryIn >= 0 && Number.isFinite(err.retryIn)) {
    retryIn = Math.min(err.retryIn, MAX_RETRY_IN);
  }
  let stack = isObj && typeof err.stack === 'string' && err.stack ? noNul(err.stack) : null;
  if (stack && stack.length > MAX_STACK) stack = stack.slice(0, MAX_STACK);
  return { code, message, retryable, retryIn, stack };
}

// What a failed call of the worker means, by SQLSTATE (see README.md,
// "Errors"):
// - 'connection': the connection is gone or unusable: reconnect, retry;
// - 'transient': the call may succeed if made again (deadlock,
//   serialization failure, statement timeout, lock timeout, resources,
//   a standby or a server shutting down): retry, same connection;
// - 'fatal': no retry can fix it: stop the worker;
// - 'data': a value the server refused (class 22, 54000): in a
//   completion, the result of one job (that job fails); elsewhere fatal
//   (the worker's own settings: an owner too long, a batch too large).
// Other SQLSTATEs are retried (as 'transient', logged as errors): the
// worker cannot know they are permanent, and stopping would turn a
// passing fault into an outage.
const CONNECTION = new Set(['57P01', '57P02', '57P03']);
const TRANSIENT = new Set(['40001', '40P01', '57014', '55P03', '55006', '25006', '58000', '58030']);
const FATAL = new Set([
  '28000', '28P01', // authentication
  '3D000', '57P04', // the database does not exist, was dropped
  '3F000', '42883', '42P01', // the extension is missing or too old
  '42501', // insufficient privilege
  '42704', // an unknown queue
  '0A000', // the server does not support it
]);
const SQLSTATE = /^[0-9A-Z]{5}$/;

function errorKind(e) {
  const code = e && typeof e.code === 'string' ? e.code : '';
  if (!SQLSTATE.test(code)) return 'connection'; // ECONNRESET, "Connection terminated", ...
  if (code.startsWith('08') || CONNECTION.has(code)) return 'connection';
  if (FATAL.has(code)) return 'fatal';
  if (code.startsWith('22') || code === '54000') return 'data';
  if (code.startsWith('53') || TRANSIENT.has(code)) return 'transient';
  return 'other';
}

/** A clear message for an error that stops a worker, as a FatalError. */
function fatalError(e, what) {
  const code = e.code;
  let why;
  if (code === '28000' || code === '28P01') why = 'authentication failed: check the user and password of the connection string';
  else if (code === '3D000') why = 'the database does not exist: check the connection string';
  else if (code === '57P04') why = 'the database was dropped';
  else if (code === '3F000' || code === '42883' || code === '42P01') {
    why = 'the jobqueue extension is not installed in this database, or is older than this client (CREATE EXTENSION jobqueue / ALTER EXTENSION jobqueue UPDATE)';
  } else if (code === '42501') why = 'the role lacks a privilege (SELECT jobqueue.jq_grant_worker(role))';
  else if (code === '42704') why = 'an unknown queue (create it with createQueue or jq_create_queue)';
  else why = 'an error no retry can fix';
  return new FatalError(`jobqueue worker ${what}: ${why}: ${e.message}${code ? ` (SQLSTATE ${code})` : ''}`, e);
}

module.exports = { PermanentError, RetryLater, FatalError, classify, className, cutBytes, noNul, errorKind, fatalError };
