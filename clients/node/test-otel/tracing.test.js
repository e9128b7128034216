'use strict';
// The worker's spans, seen by an application that has OpenTelemetry: a
// producer sets jobqueue.traceparent with SET LOCAL and enqueues from a
// trigger (plain SQL, no jobqueue client), a Worker runs the job, and the
// SDK's in-memory exporter holds a CONSUMER span of that trace, the child
// of the producer's span.  scripts/test_clients.sh installs the packed
// client and the packages of package.json beside this file (the client
// itself never requires the SDK).
const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('crypto');
const pg = require('pg');
const api = require('@opentelemetry/api');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { Client, Worker, PermanentError, RetryLater } = require('jobqueue-client');

const DSN = process.env.JQ_TEST_DSN;
const skip = DSN ? false : 'JQ_TEST_DSN is not set (scripts/test_clients.sh sets it)';

const exporter = new InMemorySpanExporter();
api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));

const hex = (n) => crypto.randomBytes(n).toString('hex');
const quiet = { debug() {}, info() {}, warn() {}, error() {} };
const parentOf = (s) => (s.parentSpanContext ? s.parentSpanContext.spanId : s.parentSpanId);
const spansOf = (queue) => exporter.getFinishedSpans().filter((s) => s.attributes['jobqueue.queue'] === queue);

let db;
let client;
test.before(async () => {
  if (skip) return;
  db = new pg.Client({ connectionString: DSN });
  await db.connect();
  client = new Client({ connectionString: DSN });
});
test.after(async () => {
  if (db) await db.end();
  if (client) await client.end();
});

async function makeQueue() {
  const name = `otel-${hex(5)}`;
  await client.createQueue(name, { leaseDuration: 5, backoffBase: 0.05, backoffMax: 0.1 });
  return name;
}

/** Run a Worker on queue until until() holds, and stop it. */
async function work(queue, handler, until, options = {}) {
  const w = new Worker({ connectionString: DSN, queue, handler, handleSignals: false, logger: quiet, pollInterval: 100, ...options });
  await w.start();
  const deadline = Date.now() + 60000;
  try {
    while (!(await until())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting on queue ${queue}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    await w.stop();
  }
}

const enqueue = async (queue, traceparent = null) =>
  Number((await db.query("SELECT jobqueue.jq_enqueue($1, '{}', traceparent => $2) AS id", [queue, traceparent])).rows[0].id);

const status = async (id) =>
  (await db.query('SELECT status::text AS s FROM jobqueue.jobs WHERE id = $1', [id])).rows[0].s;

test('a job a trigger enqueued under SET LOCAL jobqueue.traceparent runs in a child span of that trace', { skip }, async () => {
  const queue = await makeQueue();
  const table = `otel_orders_${hex(4)}`;
  await db.query(`CREATE TABLE ${table} (id int PRIMARY KEY)`);
  await db.query(`CREATE FUNCTION ${table}_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM jobqueue.jq_enqueue('${queue}', pg_catalog.jsonb_build_object('order', NEW.id));
      RETURN NEW;
    END $$`);
  await db.query(`CREATE TRIGGER enqueue AFTER INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${table}_enqueue()`);
  const traceId = hex(16);
  const spanId = hex(8);
  await db.query('BEGIN');
  await db.query(`SET LOCAL jobqueue.traceparent = '00-${traceId}-${spanId}-01'`);
  await db.query("SET LOCAL jobqueue.tracestate = 'shop=checkout'");
  await db.query(`INSERT INTO ${table} VALUES (42)`);
  await db.query('COMMIT');
  const id = (await db.query('SELECT id FROM jobqueue.jobs WHERE queue_name = $1', [queue])).rows[0].id;

  let active = null;
  let seen = null;
  await work(
    queue,
    async (job) => {
      seen = { traceparent: job.traceparent, tracestate: job.tracestate, payload: job.payload };
      active = api.trace.getActiveSpan() && api.trace.getActiveSpan().spanContext();
      return { ok: true };
    },
    async () => (await status(id)) === 'succeeded',
  );
  assert.deepEqual(seen, { traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'shop=checkout', payload: { order: 42 } });
  const spans = spansOf(queue);
  assert.equal(spans.length, 1, 'one span for one run');
  const [s] = spans;
  assert.equal(s.spanContext().traceId, traceId, 'the span is in the producer\'s trace');
  assert.equal(parentOf(s), spanId, '... the child of the producer\'s span');
  assert.equal(s.spanContext().traceState.serialize(), 'shop=checkout', '... with its tracestate');
  assert.equal(s.kind, api.SpanKind.CONSUMER);
  assert.equal(s.name, `process ${queue}`);
  assert.deepEqual(
    { ...s.attributes },
    {
      'messaging.system': 'jobqueue',
      'messaging.operation': 'process',
      'messaging.destination.name': queue,
      'messaging.message.id': String(id),
      'jobqueue.queue': queue,
      'jobqueue.job.id': Number(id),
      'jobqueue.job.attempt': 1,
      'jobqueue.job.outcome': 'succeeded',
    },
  );
  assert.equal(s.status.code, api.SpanStatusCode.UNSET);
  assert.deepEqual(active, s.spanContext(), 'the span is the active one while the handler runs');
  await db.query(`DROP TABLE ${table}`);
  await db.query(`DROP FUNCTION ${table}_enqueue()`);
});

test('a failed attempt ends its span with status error; the retry is a second span of the same parent', { skip }, async () => {
  const queue = await makeQueue();
  const traceId = hex(16);
  const spanId = hex(8);
  const id = await enqueue(queue, `00-${traceId}-${spanId}-01`);
  await work(
    queue,
    async (job) => {
      if (job.attempt === 1) throw new RetryLater('the shop is closed', { retryIn: 0, code: 'E_CLOSED' });
      return null;
    },
    async () => (await status(id)) === 'succeeded',
  );
  const spans = spansOf(queue).sort((a, b) => a.attributes['jobqueue.job.attempt'] - b.attributes['jobqueue.job.attempt']);
  assert.deepEqual(spans.map((s) => s.attributes['jobqueue.job.attempt']), [1, 2]);
  for (const s of spans) {
    assert.equal(s.spanContext().traceId, traceId);
    assert.equal(parentOf(s), spanId);
  }
  const [failed, ok] = spans;
  assert.equal(failed.status.code, api.SpanStatusCode.ERROR);
  assert.equal(failed.status.message, 'the shop is closed');
  assert.equal(failed.attributes['jobqueue.job.outcome'], 'failed');
  assert.equal(failed.attributes['error.type'], 'E_CLOSED');
  assert.equal(failed.attributes['jobqueue.error.retryable'], true);
  assert.deepEqual(failed.events.map((e) => e.name), ['exception']);
  assert.equal(failed.events[0].attributes['exception.message'], 'the shop is closed');
  assert.equal(ok.status.code, api.SpanStatusCode.UNSET);
  assert.equal(ok.attributes['jobqueue.job.outcome'], 'succeeded');
});

test('a replay runs in the replayer\'s trace, linked to the first producer\'s', { skip }, async () => {
  const queue = await makeQueue();
  const first = `00-${hex(16)}-${hex(8)}-01`;
  const id = await enqueue(queue, first);
  await work(queue, async () => { throw new PermanentError('no such customer'); }, async () => (await status(id)) === 'dead');
  const replayTrace = hex(16);
  const replaySpan = hex(8);
  await db.query('BEGIN');
  await db.query(`SET LOCAL jobqueue.traceparent = '00-${replayTrace}-${replaySpan}-01'`);
  await db.query('SELECT jobqueue.jq_retry($1)', [id]);
  await db.query('COMMIT');
  await work(queue, async () => null, async () => (await status(id)) === 'succeeded');
  const spans = spansOf(queue);
  assert.equal(spans.length, 2);
  const replayed = spans.find((s) => s.spanContext().traceId === replayTrace);
  assert.ok(replayed, 'the run after the replay is in the replayer\'s trace');
  assert.equal(parentOf(replayed), replaySpan);
  assert.deepEqual(
    replayed.links.map((l) => `00-${l.context.traceId}-${l.context.spanId}-01`),
    [first],
    'it links to the context of the job\'s first producer (trace_origin)',
  );
  const dead = spans.find((s) => s !== replayed);
  assert.equal(dead.spanContext().traceId, first.split('-')[1]);
  assert.equal(dead.attributes['error.type'], 'PermanentError');
  assert.equal(dead.attributes['jobqueue.error.retryable'], false);
});

test('a job without trace context starts a trace of its own; tracing: false makes no span', { skip }, async () => {
  const queue = await makeQueue();
  const id = await enqueue(queue);
  await work(queue, async () => null, async () => (await status(id)) === 'succeeded');
  const spans = spansOf(queue);
  assert.equal(spans.length, 1);
  assert.equal(parentOf(spans[0]), undefined, 'a root span');

  const quietQueue = await makeQueue();
  const id2 = await enqueue(quietQueue, `00-${hex(16)}-${hex(8)}-01`);
  let active = 'unset';
  await work(
    quietQueue,
    async () => {
      active = api.trace.getActiveSpan();
      return null;
    },
    async () => (await status(id2)) === 'succeeded',
    { tracing: false },
  );
  assert.equal(spansOf(quietQueue).length, 0, 'no span with tracing: false');
  assert.equal(active, undefined, 'and none active in the handler');
});
