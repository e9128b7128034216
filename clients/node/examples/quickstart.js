const { Client, Worker, PermanentError } = require('jobqueue-client');

const connectionString = process.env.JOBQUEUE_DSN || 'postgresql://localhost/mydb';

async function main() {
  // Producer: the queue (once, e.g. at deployment: an existing queue is
  // left alone), then jobs; pass { client } to enqueue in your transaction.
  const client = new Client({ connectionString });
  await client.createQueue('welcome', { maxAttempts: 5, leaseDuration: 60 });
  for (const to of ['ann@example.com', 'bob@example.com', 'eve@example.com']) {
    await client.enqueue('welcome', { to });
  }
  await client.end();

  // Worker: the handler runs once per job; resolving completes the job,
  // throwing fails it: PermanentError makes it dead at once, any other
  // error is retried with the queue's backoff.
  const sent = [];
  const worker = new Worker({
    connectionString,
    queue: 'welcome',
    concurrency: 4,
    batchSize: 10,
    handler: async (job) => {
      if (!job.payload.to.includes('@')) throw new PermanentError('not an address', { code: 'BAD_ADDRESS' });
      sent.push(job.payload.to); // the real work; pass job.id downstream as idempotency key
      if (sent.length >= 3) worker.stop(); // like SIGTERM or Ctrl-C: a graceful shutdown
    },
  });
  await worker.start(); // SIGTERM/SIGINT stop it too
  await worker.done; // running jobs finish, the others are released
  console.log(`sent ${sent.length} e-mails`);
}

main();
