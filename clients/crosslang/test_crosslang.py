"""Cross-language: jobs enqueued from Python are processed by a Node.js
worker and a Go worker at the same time; every job is done exactly once.

Run by scripts/test_clients.sh with JQ_TEST_DSN, JQ_NODE_DIR (clients/node
with its node_modules) and JQ_GO_WORKER (clients/go/cmd/jqworker, built).
"""

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
import jobqueue  # noqa: E402

JOBS = 3000


def wait_for(cond, timeout=120.0, what="a condition"):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def test_python_enqueues_node_and_go_work():
    dsn = os.environ.get("JQ_TEST_DSN")
    node_dir = os.environ.get("JQ_NODE_DIR")
    go_worker = os.environ.get("JQ_GO_WORKER")
    if not (dsn and node_dir and go_worker):
        pytest.skip("JQ_TEST_DSN, JQ_NODE_DIR and JQ_GO_WORKER are set by scripts/test_clients.sh")
    q = f"cross-{uuid.uuid4().hex[:10]}"
    table = "xdone_" + uuid.uuid4().hex[:10]
    db = jobqueue.connect(dsn)
    db.execute(f"CREATE TABLE {table} (job_id bigint NOT NULL, lang text NOT NULL)")
    client = jobqueue.Client(dsn)
    client.create_queue(q, lease_duration=30, backoff_base=0.05, backoff_max=0.2)
    procs = {
        "node": subprocess.Popen(["node", os.path.join(node_dir, "test-support", "worker_proc.js"),
                                  dsn, q, "4", "10", "5000", table]),
        "go": subprocess.Popen([go_worker, dsn, q, "4", "10", "5000", table],
                               stderr=subprocess.DEVNULL),
    }
    try:
        # Both workers listen before the jobs come.
        wait_for(lambda: db.execute("SELECT count(*) FROM pg_stat_activity "
                                    "WHERE query = 'LISTEN jobqueue'").fetchone()[0] >= 2,
                 what="both workers to listen")
        ids = []
        for start in range(0, JOBS, 500):
            ids += client.enqueue_many(q, [{"n": i} for i in range(start, start + 500)])
        wait_for(lambda: db.execute("SELECT count(*) FROM jobqueue.jobs WHERE queue_name = %s "
                                    "AND status = 'succeeded'", (q,)).fetchone()[0] == JOBS,
                 what="every job to succeed")
        for p in procs.values():
            p.send_signal(signal.SIGTERM)
        for name, p in procs.items():
            assert p.wait(30) == 0, f"the {name} worker failed"
    finally:
        for p in procs.values():
            p.kill()
    total, distinct, langs = db.execute(
        f"SELECT count(*), count(DISTINCT job_id), array_agg(DISTINCT lang ORDER BY lang) "
        f"FROM {table}").fetchone()
    by_lang = dict(db.execute(f"SELECT lang, count(*) FROM {table} GROUP BY 1").fetchall())
    print(f"jobs done per worker: {by_lang}")
    assert (total, distinct) == (JOBS, JOBS), "every job done exactly once"
    assert langs == ["go", "node"], "both workers did jobs"
    assert db.execute(f"SELECT count(*) FROM {table} t LEFT JOIN jobqueue.jobs j ON j.id = t.job_id "
                      f"AND j.queue_name = %s WHERE j.id IS NULL", (q,)).fetchone()[0] == 0
    assert db.execute("SELECT max(attempt_count) FROM jobqueue.jobs WHERE queue_name = %s",
                      (q,)).fetchone()[0] == 1
    db.execute(f"DROP TABLE {table}")
    db.close()
    client.close()
