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

/** Cut a string to at most `max` UTF-8 bytes, on a character boundary. */
function cutBytes(s, max) {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= max) return s;
  let end = max;
  while (end > 0 && (buf[end] & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}

/**
 * { code, message, retryable, retryIn } for jq_fail.  PermanentError is not
 * retryable, anything else is; a string `code` property is the error code
 * (else the error's name); a non-negative `retryIn` (seconds) replaces the
 * backoff of a retryable failure.
 */
function classify(err) {
  const isObj = err !== null && typeof err === 'object';
  let code = isObj && typeof err.code === 'string' && err.code ? err.code : null;
  if (!code) code = (isObj && (err.name || (err.constructor && err.constructor.name))) || 'Error';
  code = cutBytes(String(code), 128) || 'Error';
  let message = isObj && typeof err.message === 'string' ? err.message : String(err);
  if (!message) message = code;
  const retryable = !(err instanceof PermanentError);
  let retryIn = null;
  if (retryable && isObj && typeof err.retryIn === 'number' && err.retryIn >= 0 && Number.isFinite(err.retryIn)) {
    retryIn = err.retryIn;
  }
  return { code, message, retryable, retryIn };
}

module.exports = { PermanentError, RetryLater, classify, cutBytes };
