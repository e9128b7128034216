'use strict';
// A worker process for the tests that signal or kill it, and for the
// cross-language test.
//   node worker_proc.js DSN QUEUE CONCURRENCY BATCH SHUTDOWN_TIMEOUT_MS [RECORD_TABLE]
// Without RECORD_TABLE, a job's payload {"sleep": s} makes its handler wait
// s seconds (less if aborted); with it, each job inserts (id, 'node') into
// that table.  Prints "owner <owner>", "start <id>", "cancelled <id>
// <reason>", "done <id>", and at exit "stats <json>".
const pg = require('pg');
const { Worker } = require('..');

const [dsn, queue, conc, batch, timeout, table] = process.argv.slice(2);
const say = (...w) => process.stdout.write(w.join(' ') + '\n');
const pool = table ? new pg.Pool({ connectionString: dsn, max: Number(conc) }) : null;

async function handler(job) {
  if (pool) {
    await pool.query(`INSERT INTO ${table} (job_id, lang) VALUES ($1, 'node')`, [job.id]);
    return;
  }
  say('start', job.id);
  const ms = (job.payload.sleep || 0) * 1000;
  const aborted = await new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    job.signal.addEventListener('abort', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
  if (aborted) say('cancelled', job.id, job.signal.reason);
  else say('done', job.id);
}

const w = new Worker({
  connectionString: dsn,
  queue,
  handler,
  concurrency: Number(conc),
  batchSize: Number(batch),
  shutdownTimeout: Number(timeout),
  pollInterval: 500,
});
say('owner', w.owner);
w.start().then(async () => {
  await w.done;
  say('stats', JSON.stringify(w.stats));
  if (pool) await pool.end();
});
