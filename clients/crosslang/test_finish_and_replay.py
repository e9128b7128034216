"""Cross-language, issue of the clients' whole API: a Python wait() sees a
job finished by a Go worker; a Node.js retryDead replays jobs a Python
handler killed.

Run by scripts/test_clients.sh with JQ_TEST_DSN, JQ_NODE_DIR (clients/node
with its node_modules) and JQ_GO_WORKER (clients/go/cmd/jqworker, built).
"""

import os
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import jobqueue  # noqa: E402


def env_or_skip(*names):
    vals = [os.environ.get(n) for n in names]
    if not all(vals):
        pytest.skip(f"{', '.join(names)} are set by scripts/test_clients.sh")
    return vals


def test_python_wait_sees_a_job_finished_by_a_go_worker():
    dsn, go_worker = env_or_skip("JQ_TEST_DSN", "JQ_GO_WORKER")
    q = f"xwait-{uuid.uuid4().hex[:10]}"
    client = jobqueue.Client(dsn)
    client.create_queue(q, notify_finished=True)
    job_id = client.enqueue(q, {"sleep": 0})
    got = {}
    # An hour between looks: only the Go worker's completion, announced on
    # jobqueue_finished, ends the wait in time.
    waiter = threading.Thread(target=lambda: got.update(job=client.wait(job_id, timeout=120,
                                                                         poll_interval=3600)))
    waiter.start()
    go = subprocess.Popen([go_worker, dsn, q, "2", "5", "5000"], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True)
    try:
        waiter.join(120)
        assert not waiter.is_alive(), "wait() did not return"
    finally:
        go.send_signal(signal.SIGTERM)
        out, _ = go.communicate(30)
    job = got["job"]
    assert (job.id, job.status, job.attempt) == (job_id, "succeeded", 1)
    assert f"done {job_id}" in out            # the Go worker did it
    client.close()


NODE_RETRY_DEAD = r"""
const { Client } = require(process.env.JQ_NODE_DIR);
(async () => {
  const c = new Client({ connectionString: process.argv[1] });
  try {
    const n = await c.retryDead(process.argv[2], { errorCode: 'BAD_INPUT', maxJobs: 100 });
    console.log(`replayed ${n}`);
  } finally {
    await c.end();
  }
})().catch((e) => { console.error(e); process.exit(1); });
"""


def test_node_retry_dead_replays_jobs_killed_by_a_python_handler():
    dsn, node_dir = env_or_skip("JQ_TEST_DSN", "JQ_NODE_DIR")
    q = f"xdead-{uuid.uuid4().hex[:10]}"
    client = jobqueue.Client(dsn)
    client.create_queue(q, max_attempts=3)
    ids = client.enqueue_many(q, [{"n": i} for i in range(10)])
    fixed = threading.Event()
    done = set()
    lock = threading.Lock()

    def handler(job):
        if job.payload["n"] % 2 and not fixed.is_set():
            raise jobqueue.PermanentError("odd", code="BAD_INPUT")
        with lock:
            done.add(job.id)

    w = jobqueue.Worker(dsn, q, handler, poll_interval=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        end = time.monotonic() + 120
        while len(client.dead_jobs(q)) < 5 or len(done) < 5:
            assert time.monotonic() < end, "5 dead and 5 done jobs"
            time.sleep(0.05)
        dead = client.dead_jobs(q)
        assert sorted(j.id for j in dead) == ids[1::2]
        assert {j.last_error_code for j in dead} == {"BAD_INPUT"}
        fixed.set()                      # the bug is fixed; Node.js replays
        out = subprocess.run(["node", "-e", NODE_RETRY_DEAD, dsn, q], capture_output=True,
                             text=True, timeout=60, env={**os.environ, "JQ_NODE_DIR": node_dir})
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "replayed 5"
        while len(done) < 10:
            assert time.monotonic() < end, "every job to succeed after the replay"
            time.sleep(0.05)
    finally:
        w.stop()
        t.join(30)
    for i in ids[1::2]:
        j = client.job(i)
        assert j.status == "succeeded" and j.attempt == 1, j
        assert [(e.get("code"), e.get("event"), e.get("previous_status")) for e in j.errors] == [
            ("BAD_INPUT", None, None), (None, "replay", "dead")], j.errors
    assert client.dead_jobs(q) == []
    client.close()
