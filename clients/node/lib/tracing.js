'use strict';

/**
 * What runs around each job's handler: the application's onJob hook, and
 * an OpenTelemetry span when @opentelemetry/api is installed.
 *
 * A worker's `onJob(job, run)` option is called instead of the handler for
 * every job: it must call run() once (which runs the handler and returns
 * its promise) and return what run() returns or resolves to; a throw fails
 * the job as the handler's would.  What it adds around run() (a timer, a
 * log context) is its own.
 *
 * The span: with @opentelemetry/api (an optional peer dependency, found
 * where the application installed it), every run of a job is a CONSUMER
 * span "process <queue>", the child of the traceparent its producer
 * recorded (jq_enqueue's argument or the producer's jobqueue.traceparent
 * setting), with a link to its trace_origin (the job it came from), and
 * active while onJob and the handler run.  Without the package, or with
 * the worker's option tracing: false, there is no span and no cost.
 */

const { classify } = require('./errors');

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const TRACER_NAME = 'jobqueue-client';
const TRACER_VERSION = require('../package.json').version;

/** @opentelemetry/api when the application has it, else null. */
function loadOpenTelemetry() {
  try {
    return require('@opentelemetry/api');
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && /@opentelemetry\/api/.test(e.message)) return null;
    throw e;
  }
}

/**
 * The span context of a W3C traceparent (and tracestate), marked remote,
 * or null when there is none or it is not valid (the server checks what
 * it stores; version ff and all-zero ids are invalid by the W3C rules).
 */
function remoteSpanContext(api, traceparent, tracestate) {
  if (typeof traceparent !== 'string') return null;
  const m = TRACEPARENT.exec(traceparent);
  if (!m || m[1] === 'ff' || /^0+$/.test(m[2]) || /^0+$/.test(m[3])) return null;
  const sc = { traceId: m[2], spanId: m[3], traceFlags: parseInt(m[4], 16) & 1, isRemote: true };
  if (tracestate && typeof api.createTraceState === 'function') sc.traceState = api.createTraceState(tracestate);
  return sc;
}

/** run(job) inside a span of its own; the handler's outcome ends it. */
function withSpan(api, run) {
  const tracer = api.trace.getTracer(TRACER_NAME, TRACER_VERSION);
  return (job) => {
    const parentSc = remoteSpanContext(api, job.traceparent, job.tracestate);
    const parent = parentSc ? api.trace.setSpanContext(api.context.active(), parentSc) : api.context.active();
    const originSc = remoteSpanContext(api, job.traceOrigin, null);
    const span = tracer.startSpan(
      `process ${job.queue}`,
      {
        kind: api.SpanKind.CONSUMER,
        attributes: {
          'messaging.system': 'jobqueue',
          'messaging.operation': 'process',
          'messaging.destination.name': job.queue,
          'messaging.message.id': String(job.id),
          'jobqueue.queue': job.queue,
          'jobqueue.job.id': job.id,
          'jobqueue.job.attempt': job.attempt,
        },
        links: originSc ? [{ context: originSc, attributes: { 'jobqueue.link': 'trace_origin' } }] : [],
      },
      parent,
    );
    let p;
    try {
      p = Promise.resolve(api.context.with(api.trace.setSpan(parent, span), run, undefined, job));
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.then(
      (value) => {
        span.setAttribute('jobqueue.job.outcome', 'succeeded');
        span.end();
        return value;
      },
      (err) => {
        // the code and message jq_fail gets (the rule of classify)
        const c = classify(err === null || err === undefined ? new Error(String(err)) : err);
        span.setAttributes({ 'jobqueue.job.outcome': 'failed', 'error.type': c.code, 'jobqueue.error.retryable': c.retryable });
        span.recordException(err instanceof Error ? err : { name: c.code, message: c.message });
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: c.message });
        span.end();
        throw err;
      },
    );
  };
}

/**
 * The function the worker calls for each job: the handler, inside onJob
 * when given, inside a span when tracing is on and @opentelemetry/api is
 * there (tracing: true, the default), or given as the api object itself.
 */
function wrapHandler(handler, onJob, tracing = true) {
  if (onJob !== undefined && onJob !== null && typeof onJob !== 'function') {
    throw new TypeError('onJob must be a function');
  }
  const inner = onJob ? (job) => onJob(job, () => handler(job)) : handler;
  let api = null;
  if (tracing === true) api = loadOpenTelemetry();
  else if (tracing && typeof tracing === 'object') api = tracing;
  else if (tracing !== false) throw new TypeError('tracing must be true, false or the @opentelemetry/api module');
  return api ? withSpan(api, inner) : inner;
}

module.exports = { wrapHandler, remoteSpanContext };
