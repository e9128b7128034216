// Drivers of the peer benchmark (bench/peers.sh): the same backlog of no-op
// jobs drained by pg-boss, graphile-worker and jobqueue's own Node.js
// client, each with its own API.
//
//   node drive.js SYSTEM setup              create the system's schema (migrations)
//   node drive.js SYSTEM enqueue QUEUE N    empty QUEUE, then add N jobs in bulk
//   node drive.js SYSTEM drain QUEUE N [name=value ...]
//                                           run a worker with a no-op handler until
//                                           the database says all N jobs are done;
//                                           prints one line of JSON: the seconds from
//                                           the worker's start to that moment, the
//                                           jobs done, the settings
//
// SYSTEM: pgboss, graphile or jqnode.  The connection comes from PGHOST
// (the socket directory), PGPORT, PGDATABASE and PGUSER.  JQ_CLIENT is the
// directory of jobqueue's Node.js client (clients/node).
//
// How the end of a drain is found, the same way for every system: the
// handler counts the jobs it ran; once it has run N, the database is asked
// every 5 ms whether any job of the queue is left unfinished (the
// completions of pg-boss and graphile-worker are sent after the handler
// returns, in the background).  No query runs during the drain itself.
'use strict';

const path = require('path');
const pg = require('pg');

const PAYLOAD = { task: 'send_email', user_id: 12345, template: 'welcome' };
const conn = {
  host: process.env.PGHOST,
  port: Number(process.env.PGPORT || 5432),
  database: process.env.PGDATABASE,
  user: process.env.PGUSER || 'postgres',
};
const connectionString = `postgresql://${encodeURIComponent(conn.user)}@/${encodeURIComponent(conn.database)}` +
  `?host=${encodeURIComponent(conn.host)}&port=${conn.port}`;
const quiet = { debug() {}, info() {}, warn: console.warn, error: console.error };

const [system, command, queue, nArg, ...rest] = process.argv.slice(2);
const n = Number(nArg || 0);
const opts = Object.fromEntries(rest.map((a) => a.split('=')).map(([k, v]) => [k, Number(v)]));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint()) / 1e9;

// Start the worker (start()), wait until the handler has run all n jobs
// (handled()), then until `leftSql` says none is left unfinished; return
// the seconds from the start to then and the jobs done.  With the option
// limit=S, stop waiting after S seconds and count the jobs done by then
// (the settings search: some settings are very slow).
async function timeDrain(start, handled, leftSql) {
  const limit = opts.limit || Infinity;
  const t0 = now();
  await start();
  while (handled() < n && now() - t0 < limit) await sleep(2);
  const c = new pg.Client(conn);
  await c.connect();
  try {
    for (;;) {
      const left = Number((await c.query(leftSql, [queue])).rows[0].left);
      if (left === 0 || now() - t0 >= limit) return { seconds: now() - t0, done: n - left };
      await sleep(5);
    }
  } finally {
    await c.end();
  }
}

const chunks = (total, size) => {
  const out = [];
  for (let i = 0; i < total; i += size) out.push(Math.min(size, total - i));
  return out;
};

// ---------------------------------------------------------------------------
// pg-boss 10: boss.insert() to enqueue, boss.work() with batches to drain.
// Options: workers (boss.work calls), batch (batchSize), poll (seconds).
const pgboss = {
  make() {
    const PgBoss = require('pg-boss');
    // supervise/schedule off: no maintenance or cron in the draining process
    return new PgBoss({ ...conn, max: 10, supervise: false, schedule: false, migrate: true });
  },
  async setup() {
    const boss = this.make();
    await boss.start();
    await boss.stop({ graceful: false, wait: true });
  },
  async enqueue() {
    const boss = this.make();
    boss.on('error', (e) => console.error(e));
    await boss.start();
    // a fresh queue (its own partition of pgboss.job); its jobs first: a
    // queue that still has jobs cannot be deleted
    if (await boss.getQueue(queue)) {
      await boss.getDb().executeSql('DELETE FROM pgboss.job WHERE name = $1', [queue]);
      await boss.deleteQueue(queue);
    }
    await boss.createQueue(queue);
    for (const size of chunks(n, 1000)) {
      await boss.insert(Array.from({ length: size }, () => ({ name: queue, data: PAYLOAD })));
    }
    await boss.stop({ graceful: false, wait: true });
  },
  async drain() {
    const workers = opts.workers || 2, batchSize = opts.batch || 5000, poll = opts.poll || 0.5;
    const boss = this.make();
    boss.on('error', (e) => console.error(e));
    let handled = 0;
    const r = await timeDrain(async () => {
      await boss.start();
      for (let i = 0; i < workers; i++) {
        await boss.work(queue, { batchSize, pollingIntervalSeconds: poll }, async (jobs) => { handled += jobs.length; });
      }
    }, () => handled, "SELECT count(*) AS left FROM pgboss.job WHERE name = $1 AND state <> 'completed'");
    await boss.stop({ graceful: false, wait: true });
    return { ...r, workers, batch: batchSize, poll };
  },
};

// ---------------------------------------------------------------------------
// graphile-worker 0.17: addJobs() to enqueue, run() with a local queue.
// Options: concurrency, local (localQueue.size; 0: none), delay
// (completeJobBatchDelay, ms).
const graphile = {
  async utils() {
    const { makeWorkerUtils } = require('graphile-worker');
    return makeWorkerUtils({ connectionString, logger: this.logger() });
  },
  logger() {
    const { Logger } = require('graphile-worker');
    return new Logger(() => (level, message) => { if (level === 'error') console.error(message); });
  },
  async setup() {
    const u = await this.utils();
    await u.migrate();
    await u.release();
  },
  async enqueue() {
    const u = await this.utils();
    await u.withPgClient((c) => c.query('DELETE FROM graphile_worker._private_jobs'));
    for (const size of chunks(n, 1000)) {
      await u.addJobs(Array.from({ length: size }, () => ({ identifier: queue, payload: PAYLOAD })));
    }
    await u.release();
  },
  async drain() {
    const { run } = require('graphile-worker');
    const concurrency = opts.concurrency || 16, local = opts.local ?? 500, delay = opts.delay ?? 0;
    const worker = { concurrentJobs: concurrency, maxPoolSize: Math.max(10, concurrency + 2), pollInterval: 2000 };
    if (local > 0) {
      worker.localQueue = { size: local };
      worker.completeJobBatchDelay = delay;
      worker.failJobBatchDelay = delay;
    }
    let handled = 0, runner;
    const r = await timeDrain(async () => {
      runner = await run({
        connectionString,
        noHandleSignals: true,
        logger: this.logger(),
        taskList: { [queue]: async () => { handled++; } },
        preset: { worker },
      });
    }, () => handled, 'SELECT count(*) AS left FROM graphile_worker._private_jobs j ' +
      'JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = $1');
    await runner.stop();
    return { ...r, concurrency, local, delay };
  },
};

// ---------------------------------------------------------------------------
// jobqueue's own Node.js client: Client.enqueueMany and Worker.
// Options: concurrency, batch.
// jobqueue's Node.js client.  Options: workers (Worker instances in the
// process, each with its own connection: while one waits for the server,
// another runs its jobs), concurrency and batch (of each Worker).  The queue
// peers0 keeps no history (retention 0: a job is deleted when it succeeds).
const jqnode = {
  lib() { return require(path.resolve(process.env.JQ_CLIENT || '../../clients/node')); },
  async setup() {},
  async enqueue() {
    const { Client } = this.lib();
    const c = new Client({ connectionString });
    await c.pool.query('DELETE FROM jobqueue.jobs WHERE queue_name = $1', [queue]);
    await c.createQueue(queue, { leaseDuration: 300, retention: queue === 'peers0' ? 0 : undefined });
    for (const size of chunks(n, 1000)) await c.enqueueMany(queue, Array.from({ length: size }, () => PAYLOAD));
    await c.end();
  },
  async drain() {
    const { Worker } = this.lib();
    const workers = opts.workers || 1, concurrency = opts.concurrency || 8, batchSize = opts.batch || 100;
    let handled = 0;
    const ws = Array.from({ length: workers }, () => new Worker({
      connectionString, queue, concurrency, batchSize, handleSignals: false, logger: quiet,
      handler: async () => { handled++; },
    }));
    const left = queue === 'peers0'
      ? 'SELECT count(*) AS left FROM jobqueue.jobs WHERE queue_name = $1'
      : "SELECT count(*) AS left FROM jobqueue.jobs WHERE queue_name = $1 AND status <> 'succeeded'";
    const r = await timeDrain(() => Promise.all(ws.map((w) => w.start())), () => handled, left);
    await Promise.all(ws.map((w) => w.stop()));
    return { ...r, workers, concurrency, batch: batchSize };
  },
};

const systems = { pgboss, graphile, jqnode };

async function main() {
  const s = systems[system];
  if (!s || !['setup', 'enqueue', 'drain'].includes(command)) {
    console.error('usage: node drive.js pgboss|graphile|jqnode setup|enqueue|drain QUEUE N [name=value ...]');
    process.exit(2);
  }
  const out = await s[command]();
  if (out) console.log(JSON.stringify(out));
}

main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
