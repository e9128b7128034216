'use strict';

/**
 * The hook point around each job's handler.  A worker's `onJob(job, run)`
 * option is called instead of the handler for every job: it must call
 * run() once (which runs the handler and returns its promise) and return
 * what run() returns or resolves to; a throw fails the job as the
 * handler's would.  What it adds around run() (a span, a timer, a log
 * context) is its own.  Without onJob the handler is called directly.
 */
function wrapHandler(handler, onJob) {
  if (!onJob) return handler;
  if (typeof onJob !== 'function') throw new TypeError('onJob must be a function');
  return (job) => onJob(job, () => handler(job));
}

module.exports = { wrapHandler };
