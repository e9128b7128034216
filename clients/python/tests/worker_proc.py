"""A worker process for the tests that signal or kill it.

    python3 worker_proc.py DSN QUEUE CONCURRENCY BATCH SHUTDOWN_TIMEOUT

Each job's payload {"sleep": s} makes its handler sleep s seconds, or less
if the worker cancels it.  Prints "owner <owner>", "start <id>",
"cancelled <id> <reason>", "done <id>" and, at exit, "stats <json>".
"""

import json
import logging
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import jobqueue  # noqa: E402


_out = threading.Lock()


def say(*words):
    with _out:      # whole lines: the handler threads print at the same time
        sys.stdout.write(" ".join(str(w) for w in words) + "\n")
        sys.stdout.flush()


def handler(job):
    say("start", job.id)
    if job.cancelled.wait(job.payload.get("sleep", 0)):
        say("cancelled", job.id, job.cancel_reason)
        return
    say("done", job.id)


def main():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    dsn, queue, conc, batch, timeout = sys.argv[1:6]
    w = jobqueue.Worker(dsn, queue, handler, concurrency=int(conc), batch_size=int(batch),
                        shutdown_timeout=float(timeout), poll_interval=0.5)
    say("owner", w.owner)
    stats = w.run()
    say("stats", json.dumps(stats))


if __name__ == "__main__":
    main()
