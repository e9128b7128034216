'use strict';
// The client's own logic, without a server.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { Worker, PermanentError, RetryLater, classify, errorKind, Backoff } = require('..');
const { wrapHandler, remoteSpanContext } = require('../lib/tracing');
const { enqueueParams, policyArgs, interval, runAtDate } = require('../lib/client');
const { cutBytes } = require('../lib/errors');

test('errors are retryable by default', () => {
  class Boom extends Error {}
  const e = new Boom('bad thing');
  e.name = 'Boom';
  const c = classify(e);
  assert.deepEqual({ ...c, stack: undefined }, { code: 'Boom', message: 'bad thing', retryable: true, retryIn: null, stack: undefined });
  assert.match(c.stack, /^Boom: bad thing\n\s+at /);
});

test('the code: a non-empty string code property, else the class name', () => {
  class Unnamed extends Error {}
  assert.equal(classify(new Unnamed('x')).code, 'Unnamed'); // name is the inherited 'Error'
  assert.equal(classify(new TypeError('x')).code, 'TypeError');
  assert.equal(classify(new Error('x')).code, 'Error');
  const coded = new Error('x');
  coded.code = 'ECONNREFUSED';
  assert.equal(classify(coded).code, 'ECONNREFUSED');
  coded.code = '';
  assert.equal(classify(coded).code, 'Error');
  assert.equal(classify(new DOMException('gone', 'AbortError')).code, 'AbortError');
  assert.equal(classify({ message: 'a plain object' }).code, 'Error');
  assert.deepEqual([classify('a string').code, classify('a string').stack], ['Error', null]);
});

test('what PostgreSQL cannot store is left out: NUL characters, a retry delay over 100 years', () => {
  const e = new Error('bad\u0000byte');
  e.code = 'NUL\u0000CODE';
  e.retryIn = 1e12;
  const c = classify(e);
  assert.deepEqual([c.code, c.message, c.retryIn, c.stack.includes('\u0000')], ['NULCODE', 'badbyte', 100 * 365 * 86400, false]);
});

test('errors of the server and the driver, by kind', () => {
  const kind = (code) => errorKind(Object.assign(new Error('x'), code === undefined ? {} : { code }));
  for (const c of ['40001', '40P01', '57014', '55P03', '53300', '25006']) assert.equal(kind(c), 'transient', c);
  for (const c of ['08006', '57P01', '57P03', 'ECONNRESET', undefined]) assert.equal(kind(c), 'connection', c);
  for (const c of ['28P01', '28000', '3D000', '3F000', '42883', '42501', '42704']) assert.equal(kind(c), 'fatal', c);
  for (const c of ['22P05', '22P02', '22023', '54000']) assert.equal(kind(c), 'data', c);
  assert.equal(kind('XX000'), 'other');
});

test('onJob wraps the handler; without it the handler is called as it is', async () => {
  const h = async (job) => job.n * 2;
  assert.equal(wrapHandler(h, undefined), h);
  const seen = [];
  const w = wrapHandler(h, async (job, run) => {
    seen.push(job.n);
    return run();
  });
  assert.equal(await w({ n: 21 }), 42);
  assert.deepEqual(seen, [21]);
  assert.throws(() => wrapHandler(h, 'no'), TypeError);
  assert.throws(() => wrapHandler(h, undefined, 'yes'), TypeError);
});

test('without @opentelemetry/api (not a dependency) there is no span: the handler is called as it is', () => {
  assert.throws(() => require('@opentelemetry/api'), { code: 'MODULE_NOT_FOUND' }, 'the test runs without the package');
  const h = async () => null;
  assert.equal(wrapHandler(h, undefined, true), h);
  assert.equal(wrapHandler(h, undefined, false), h);
});

test('the parent of a span: a valid W3C traceparent, marked remote; anything else is none', () => {
  const fakeApi = { createTraceState: (s) => ({ s }) };
  assert.deepEqual(remoteSpanContext(fakeApi, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'a=1'), {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: 1,
    isRemote: true,
    traceState: { s: 'a=1' },
  });
  assert.equal(remoteSpanContext(fakeApi, '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00', null).traceFlags, 0);
  for (const bad of [null, undefined, '', 'x', '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01', 'ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    '00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01']) {
    assert.equal(remoteSpanContext(fakeApi, bad, null), null, String(bad));
  }
});

test('PermanentError is not retryable, with its code', () => {
  const c = classify(new PermanentError('no such mailbox', { code: 'BAD_ADDRESS' }));
  assert.equal(c.code, 'BAD_ADDRESS');
  assert.equal(c.retryable, false);
  assert.equal(classify(new PermanentError('x')).code, 'PermanentError');
});

test('RetryLater and a retryIn property set the delay', () => {
  const c = classify(new RetryLater('429', { retryIn: 90, code: 'HTTP_429' }));
  assert.deepEqual([c.code, c.retryable, c.retryIn], ['HTTP_429', true, 90]);
  const e = new Error('x');
  e.retryIn = -1;
  assert.equal(classify(e).retryIn, null);
});

test('non-errors thrown and odd codes', () => {
  assert.equal(classify('just a string').message, 'just a string');
  const e = new Error('x');
  e.code = 42;
  assert.equal(classify(e).code, 'Error');
  e.code = 'é'.repeat(100);
  assert.equal(Buffer.byteLength(classify(e).code), 128);
  assert.equal(cutBytes('aé', 2), 'a');
});

test('backoff doubles up to its cap, with jitter', () => {
  const b = new Backoff(100, 1000, () => 1);
  assert.deepEqual([1, 2, 3, 4, 5].map(() => b.next()), [100, 200, 400, 800, 1000]);
  b.reset();
  assert.equal(b.next(), 100);
  assert.equal(new Backoff(100, 1000, () => 0).next(), 50);
});

test('enqueue parameters', () => {
  const now = Date.now();
  const p = enqueueParams('emails', { to: 'a' }, { priority: 5, runAt: 60, maxAttempts: 2, idempotencyKey: 'k' });
  assert.deepEqual([p[0], p[1], p[2], p[4], p[5]], ['emails', '{"to":"a"}', 5, 2, 'k']);
  assert.ok(Math.abs(p[3].getTime() - (now + 60000)) < 5000);
  assert.deepEqual(enqueueParams('q', 1).slice(2), [0, null, null, null, null, null, null, null, null, null, null]);
  assert.deepEqual(enqueueParams('q', 1, { dependsOn: [3, '4'], groupKey: 'g' }).slice(6, 8), [['3', '4'], 'g']);
  const c = enqueueParams('q', 1, { debounceKey: 'd', debounce: 5, debounceMaxWait: 60, startBy: 120, cost: 1.5 });
  assert.deepEqual([c[8], c[9], c[10], c[12]], ['d', '5 seconds', '60 seconds', 1.5]);
  assert.ok(Math.abs(c[11].getTime() - (Date.now() + 120000)) < 5000);
  assert.throws(() => enqueueParams('q', 1, { prio: 1 }), TypeError);
  assert.throws(() => enqueueParams('q', 1, { dependsOn: 3 }), TypeError);
  const d = new Date('2030-01-01T00:00:00Z');
  assert.equal(runAtDate(d), d);
  assert.equal(interval(1.5), '1.5 seconds');
  assert.equal(interval(null), null);
  assert.equal(interval(0), '0 seconds');
  assert.equal(interval('5 minutes'), '5 minutes');
  assert.throws(() => interval(-1), TypeError);
});

test('worker arguments are checked', () => {
  const h = async () => {};
  assert.throws(() => new Worker({ connectionString: 'x', queue: 'q', handler: h, concurrency: 0 }), RangeError);
  assert.throws(() => new Worker({ connectionString: 'x', queue: 'q', handler: h, heartbeatFraction: 2 }), RangeError);
  assert.throws(() => new Worker({ connectionString: 'x', queue: 'q' }), TypeError);
  const w = new Worker({ connectionString: 'x', queue: 'q', handler: h });
  assert.equal(w.listenConnectionString, 'x');
  assert.match(w.owner, /:q$/);
  const several = new Worker({ connectionString: 'x', queue: ['a', 'b', 'a'], handler: h });
  assert.deepEqual(several.queues, ['a', 'b']);
  assert.match(several.owner, /:a,b$/);
  assert.throws(() => new Worker({ connectionString: 'x', queue: [], handler: h }), TypeError);
  assert.throws(() => new Worker({ connectionString: 'x', queue: ['a', ''], handler: h }), TypeError);
});

test('a worker without a server retries, and stops when told', async () => {
  const warnings = [];
  const logger = { debug() {}, info() {}, warn: (m) => warnings.push(m), error() {} };
  const w = new Worker({
    connectionString: 'postgresql://nobody@127.0.0.1:1/x',
    queue: 'q',
    handler: async () => {},
    listen: false,
    reconnectBase: 10,
    reconnectMax: 20,
    handleSignals: false,
    logger,
  });
  await w.start();
  while (warnings.length < 2) await new Promise((r) => setTimeout(r, 10));
  await w.stop();
  assert.match(warnings[0], /connection failed at start/);
  assert.match(warnings[1], /connection lost/);
});

test('queue settings: every argument of jq_create_queue and jq_alter_queue, typed', () => {
  const [args, params] = policyArgs('q', {
    maxAttempts: 3, leaseDuration: 60, maxRuntime: '2 hours', backoffBase: 1.5, backoffMax: 60, retention: 0,
    notifyFinished: true, groupConcurrency: 2, groupOrdered: false, fairness: 'round_robin', priorityAging: 30,
    rateLimit: 2.5, rateBurst: 5,
  }, false);
  assert.equal(args, ', max_attempts => $2::int, lease_duration => $3::interval, max_runtime => $4::interval, ' +
    'backoff_base => $5::interval, backoff_max => $6::interval, retention => $7::interval, notify_finished => $8::boolean, ' +
    'group_concurrency => $9::int, group_ordered => $10::boolean, fairness => $11::text, priority_aging => $12::interval, ' +
    'rate_limit => $13::float8, rate_burst => $14::int');
  assert.deepEqual(params, ['q', 3, '60 seconds', '2 hours', '1.5 seconds', '60 seconds', '0 seconds', true, 2, false, 'round_robin', '30 seconds', 2.5, 5]);
  assert.throws(() => policyArgs('q', { notify: false }, false), TypeError); // jq_alter_queue only
  assert.deepEqual(policyArgs('q', { notify: false, rateLimit: null }, true), [', notify => $2::boolean', ['q', false]]);
  assert.throws(() => policyArgs('q', { maxAttempt: 3 }, true), /unknown queue setting: maxAttempt/);
});
