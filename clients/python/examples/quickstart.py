import os

import jobqueue

dsn = os.environ.get("JOBQUEUE_DSN", "postgresql://localhost/mydb")

# Producer: the queue (once, e.g. at deployment: an existing queue is left
# alone), then jobs; each enqueue is its own transaction here, or pass
# conn= to enqueue in yours.
client = jobqueue.Client(dsn)
client.create_queue("emails", max_attempts=5, lease_duration=60)
for to in ["ann@example.com", "bob@example.com", "eve@example.com"]:
    client.enqueue("emails", {"to": to})

# Worker: the handler runs once per job; returning completes the job,
# raising fails it: jobqueue.PermanentError makes it dead at once, any
# other exception is retried with the queue's backoff.
sent = []


def send_email(job):
    if "@" not in job.payload["to"]:
        raise jobqueue.PermanentError("not an address", code="BAD_ADDRESS")
    sent.append(job.payload["to"])   # the real work; pass job.id downstream as idempotency key
    if len(sent) >= 3:
        worker.stop()                # like SIGTERM or Ctrl-C: a graceful shutdown


worker = jobqueue.Worker(dsn, "emails", send_email, concurrency=4, batch_size=10)
worker.run()    # until stop() or SIGTERM/SIGINT; running jobs finish, the others are released
client.close()
print(f"sent {len(sent)} e-mails")
