"""Against the real server (JQ_TEST_DSN): producer and worker."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest

import jobqueue
from conftest import HERE, q1, wait_for


def jobs_of(db, queue, cols="id, status, attempt_count"):
    return db.execute(f"SELECT {cols} FROM jobqueue.jobs WHERE queue_name = %s ORDER BY id",
                      (queue,)).fetchall()


def status_counts(db, queue):
    return dict(db.execute("SELECT status::text, count(*) FROM jobqueue.jobs "
                           "WHERE queue_name = %s GROUP BY 1", (queue,)).fetchall())


def test_enqueue_in_callers_transaction(dsn, db, make_queue):
    q = make_queue()
    client = jobqueue.Client(dsn)
    with psycopg.connect(dsn) as conn:          # not autocommit: a transaction
        conn.execute("CREATE TEMP TABLE orders (id int)")
        conn.execute("INSERT INTO orders VALUES (42)")
        job_id = client.enqueue(q, {"order": 42}, conn=conn)
        ids = client.enqueue_many(q, [{"n": 1}, {"n": 2}], conn=conn)
        assert job_id > 0 and len(ids) == 2
        conn.rollback()
    assert jobs_of(db, q) == []                 # rolled back: no job
    with psycopg.connect(dsn) as conn:
        job_id = client.enqueue(q, {"order": 43}, conn=conn)
        conn.commit()
    assert [r[0] for r in jobs_of(db, q)] == [job_id]
    client.close()


def test_enqueue_options(dsn, db, make_queue):
    q = make_queue()
    with jobqueue.Client(dsn) as client:
        a = client.enqueue(q, {"a": 1}, priority=7, run_at=3600, max_attempts=2,
                           idempotency_key="key-1")
        assert client.enqueue(q, {"a": 2}, idempotency_key="key-1") == a
        ids = client.enqueue_many(q, [{"i": i} for i in range(5)], priority=3)
        assert ids == sorted(ids) and len(ids) == 5
    row = db.execute("SELECT priority, max_attempts, idempotency_key, payload, "
                     "available_at > now() + interval '3500 seconds' "
                     "FROM jobqueue.jobs WHERE id = %s", (a,)).fetchone()
    assert row == (7, 2, "key-1", {"a": 1}, True)
    payloads = db.execute("SELECT payload->>'i', priority FROM jobqueue.jobs "
                          "WHERE id = ANY(%s) ORDER BY id", (ids,)).fetchall()
    assert payloads == [(str(i), 3) for i in range(5)]
    with pytest.raises(psycopg.errors.UndefinedObject):
        jobqueue.Client(dsn).enqueue("no-such-queue-xyz", {})


def test_worker_drains_2000_jobs(dsn, db, make_queue):
    """2,000 jobs, concurrency 4: some fail once and are retried, one fails
    permanently, one runs past its lease on heartbeats, one loses its lease
    (cancelled by an operator) and its handler is told."""
    q = make_queue(max_attempts=5, lease_duration=2)
    kinds = {}
    payloads = []
    for i in range(2000):
        kind = "ok"
        if i % 100 == 50:
            kind = "flaky"
        elif i == 7:
            kind = "permanent"
        elif i == 11:
            kind = "long"
        elif i == 13:
            kind = "lost"
        payloads.append({"n": i, "kind": kind})
    ids = jobqueue.Client(dsn).enqueue_many(q, payloads)
    for job_id, p in zip(ids, payloads):
        kinds[job_id] = p["kind"]
    by_kind = {k: [i for i in ids if kinds[i] == k] for k in set(kinds.values())}
    (permanent,), (long_,), (lost,) = by_kind["permanent"], by_kind["long"], by_kind["lost"]

    lock = threading.Lock()
    successes = {}
    started = set()
    told = {}

    def handler(job):
        kind = job.payload["kind"]
        with lock:
            started.add(job.id)
        if kind == "flaky" and job.attempt == 1:
            raise RuntimeError("first attempt fails")
        if kind == "permanent":
            raise jobqueue.PermanentError("cannot be done", code="BAD_PAYLOAD")
        if kind == "long":
            time.sleep(3.5)             # past the 2 s lease: heartbeats keep it
        if kind == "lost":
            if job.cancelled.wait(30):
                told[job.id] = job.cancel_reason
            return
        with lock:
            successes[job.id] = successes.get(job.id, 0) + 1

    w = jobqueue.Worker(dsn, q, handler, concurrency=4, batch_size=10, poll_interval=0.5)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: lost in started, what="the lost job to start")
        assert q1(db, "SELECT jobqueue.jq_cancel(%s)", (lost,)) is True
        wait_for(lambda: lost in told, what="the lost job's handler to be told")
        wait_for(lambda: status_counts(db, q) == {"succeeded": 1998, "dead": 1, "cancelled": 1},
                 what="every job to be finished")
    finally:
        w.stop()
        t.join(30)
    assert not t.is_alive()
    assert told[lost] == "lease lost"
    ok = [i for i in ids if kinds[i] in ("ok", "flaky", "long")]
    assert all(successes.get(i) == 1 for i in ok), "every job succeeds exactly once"
    assert len(successes) == 1998
    rows = {r[0]: r[1:] for r in db.execute(
        "SELECT id, status::text, attempt_count, last_error_code, errors "
        "FROM jobqueue.jobs WHERE queue_name = %s", (q,))}
    for i in by_kind["flaky"]:
        assert rows[i][:3] == ("succeeded", 2, "RuntimeError")
    st, attempts, code, errors = rows[permanent]
    assert (st, attempts, code) == ("dead", 1, "BAD_PAYLOAD")
    assert errors[-1]["code"] == "BAD_PAYLOAD" and errors[-1]["retryable"] is False
    assert rows[long_][:2] == ("succeeded", 1) and not rows[long_][3]   # never reaped
    assert rows[lost][0] == "cancelled"
    stats = w.stats
    assert stats["completed"] == 1998 and stats["failed"] == 21
    assert stats["heartbeats"] >= 1 and stats["lost"] == 1 and stats["fenced"] == 1
    assert stats["claimed"] == 2000 + 20


def test_results_stored_and_completions_ride_on_the_claim(dsn, db, make_queue):
    """A handler's return value is the job's result; completions go with the
    next claim in one jq_complete_and_claim while there is more to claim."""
    q = make_queue()
    ids = jobqueue.Client(dsn).enqueue_many(q, [{"n": i} for i in range(300)])
    calls = []

    class Counting(jobqueue.Worker):
        def _complete_and_claim(self, results, n, queue):
            calls.append((len(results), n))
            return super()._complete_and_claim(results, n, queue)

    def handler(job):
        n = job.payload["n"]
        return None if n % 3 == 0 else {"double": 2 * n}

    w = Counting(dsn, q, handler, concurrency=4, batch_size=20, poll_interval=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: status_counts(db, q) == {"succeeded": 300}, what="300 jobs")
    finally:
        w.stop()
        t.join(10)
    assert w.stats["completed"] == 300 and w.stats["fenced"] == 0
    assert calls and all(n > 0 for _, n in calls)
    assert sum(k for k, _ in calls) >= 200      # most completions rode on a claim
    got = dict(db.execute("SELECT (payload->>'n')::int, result FROM jobqueue.jobs "
                          "WHERE queue_name = %s", (q,)).fetchall())
    assert got == {n: (None if n % 3 == 0 else {"double": 2 * n}) for n in range(300)}
    assert len(ids) == 300


def test_result_too_large_fails_only_its_job(dsn, db, make_queue):
    """A result over jobqueue.max_result_size: that job is dead
    (RESULT_TOO_LARGE), the others of the same batch complete."""
    q = make_queue()
    client = jobqueue.Client(dsn)
    ids = client.enqueue_many(q, [{"big": i == 3} for i in range(10)])
    wdsn = psycopg.conninfo.make_conninfo(dsn, options="-c jobqueue.max_result_size=1000")

    def handler(job):
        return {"blob": "x" * 5000} if job.payload["big"] else {"ok": True}

    w = jobqueue.Worker(wdsn, q, handler, concurrency=2, batch_size=10, poll_interval=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: status_counts(db, q) == {"succeeded": 9, "dead": 1}, what="the batch")
    finally:
        w.stop()
        t.join(10)
    rows = {r[0]: r[1:] for r in db.execute(
        "SELECT id, status::text, last_error_code, result FROM jobqueue.jobs "
        "WHERE queue_name = %s", (q,))}
    assert rows[ids[3]][:2] == ("dead", "RESULT_TOO_LARGE")
    assert all(rows[i] == ("succeeded", None, {"ok": True}) for i in ids if i != ids[3])
    assert w.stats["completed"] == 9 and w.stats["failed"] == 1


def test_retry_later_sets_the_delay(dsn, db, make_queue):
    q = make_queue()
    job_id = jobqueue.Client(dsn).enqueue(q, {})
    done = threading.Event()

    def handler(job):
        done.set()
        raise jobqueue.RetryLater("rate limited", retry_in=120, code="HTTP_429")

    w = jobqueue.Worker(dsn, q, handler, concurrency=1, batch_size=1, poll_interval=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    wait_for(lambda: q1(db, "SELECT last_error_code FROM jobqueue.jobs WHERE id = %s",
                        (job_id,)) == "HTTP_429", what="the failure")
    w.stop()
    t.join(10)
    assert q1(db, "SELECT status::text || ':' || (available_at > now() + interval '100 s')::text "
                  "FROM jobqueue.jobs WHERE id = %s", (job_id,)) == "pending:true"


def test_worker_reconnects_after_losing_its_connections(dsn, db, make_queue):
    q = make_queue()
    client = jobqueue.Client(dsn)
    client.enqueue_many(q, [{"i": i} for i in range(50)])
    app = f"jqtest-{q}"
    wdsn = psycopg.conninfo.make_conninfo(dsn, application_name=app)
    seen = set()
    lock = threading.Lock()

    def handler(job):
        with lock:
            seen.add(job.id)

    w = jobqueue.Worker(wdsn, q, handler, concurrency=2, batch_size=5, poll_interval=0.2,
                        reconnect_base=0.05, reconnect_max=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: status_counts(db, q) == {"succeeded": 50}, what="the first 50 jobs")
        killed = q1(db, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = %s", (app,))
        assert killed == 2                  # the claim and the listen connection
        client.enqueue_many(q, [{"i": i} for i in range(50, 100)])
        wait_for(lambda: status_counts(db, q) == {"succeeded": 100}, what="the next 50 jobs")
        wait_for(lambda: q1(db, "SELECT count(*) FROM pg_stat_activity "
                                "WHERE application_name = %s", (app,)) == 2,
                 what="both connections to come back")
    finally:
        w.stop()
        t.join(10)
    assert len(seen) == 100


class Proc:
    """A worker process (tests/worker_proc.py), its output read by a thread."""

    def __init__(self, dsn, queue, concurrency, batch, shutdown_timeout):
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "worker_proc.py"), dsn, queue,
             str(concurrency), str(batch), str(shutdown_timeout)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.p.stdout:
            self.lines.append(line.rstrip("\n"))

    def ids(self, word):
        return {int(line.split()[1]) for line in self.lines if line.startswith(word + " ")}

    def owner(self):
        return wait_for(lambda: next((line.split()[1] for line in self.lines
                                      if line.startswith("owner ")), None), what="the owner")


def test_sigterm_releases_unfinished_jobs(dsn, db, make_queue):
    q = make_queue(lease_duration=60)    # a release, not the reaper, must free them
    client = jobqueue.Client(dsn)
    quick = [client.enqueue(q, {"sleep": 1.5}, priority=10) for _ in range(2)]
    slow = client.enqueue_many(q, [{"sleep": 60}] * 10)
    proc = Proc(dsn, q, concurrency=4, batch=4, shutdown_timeout=3)
    try:
        # 4 running, 4 more claimed and waiting for a handler
        wait_for(lambda: len(proc.ids("start")) >= 4 and
                 status_counts(db, q).get("running") == 8, what="4 running handlers")
        t0 = time.monotonic()
        proc.p.send_signal(signal.SIGTERM)
        assert proc.p.wait(30) == 0
        assert time.monotonic() - t0 < 10
    finally:
        proc.p.kill()
    started = proc.ids("start")
    assert set(quick) <= started and proc.ids("done") == set(quick)
    assert proc.ids("cancelled") == started - set(quick)      # told at the deadline
    rows = {r[0]: r[1:] for r in db.execute(
        "SELECT id, status::text, attempt_count, lease_owner, available_at <= now() "
        "FROM jobqueue.jobs WHERE queue_name = %s", (q,))}
    for i in quick:
        assert rows[i][:2] == ("succeeded", 1)
    for i in slow:          # released: pending at once, the attempt not counted
        assert rows[i] == ("pending", 0, None, True), (i, rows[i])
    stats = [line for line in proc.lines if line.startswith("stats ")]
    stats = json.loads(stats[0].split(" ", 1)[1])
    assert stats["completed"] == 2 and stats["released"] == stats["claimed"] - 2


def test_killed_worker_jobs_come_back_through_the_reaper(dsn, db, make_queue):
    q = make_queue(lease_duration=2)
    ids = jobqueue.Client(dsn).enqueue_many(q, [{"sleep": 60}] * 6)
    proc = Proc(dsn, q, concurrency=4, batch=2, shutdown_timeout=1)
    owner = proc.owner()
    try:
        wait_for(lambda: len(proc.ids("start")) == 4 and
                 status_counts(db, q).get("running") == 6, what="4 running handlers, 2 waiting")
    finally:
        proc.p.send_signal(signal.SIGKILL)
        proc.p.wait(10)
    held = {r[0] for r in jobs_of(db, q, "id, lease_owner") if r[1] == owner}
    assert len(held) == 6
    done = []

    def handler(job):
        done.append((job.id, job.attempt))

    w = jobqueue.Worker(dsn, q, handler, concurrency=4, batch_size=10, poll_interval=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: status_counts(db, q) == {"succeeded": 6}, timeout=60,
                 what="the reaped jobs to be done by the second worker")
    finally:
        w.stop()
        t.join(10)
    assert sorted(done) == sorted((i, 2) for i in ids)
    for errors in db.execute("SELECT errors FROM jobqueue.jobs WHERE queue_name = %s", (q,)):
        assert [(e["code"], e["owner"]) for e in errors[0]] == [("LEASE_EXPIRED", owner)]


def test_quickstart_in_readme(dsn):
    """The README's five-minute start is examples/quickstart.py, verbatim."""
    root = os.path.dirname(HERE)
    example = open(os.path.join(root, "examples", "quickstart.py")).read()
    readme = open(os.path.join(root, "README.md")).read()
    assert example.strip() in readme
    out = subprocess.run([sys.executable, os.path.join(root, "examples", "quickstart.py")],
                         env={**os.environ, "JOBQUEUE_DSN": dsn, "PYTHONPATH": root},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "sent 3 e-mails" in out.stdout


def test_around_job_sees_the_trace_context(dsn, db, make_queue):
    """The around_job hook, where a tracing library opens a span, gets the
    job's traceparent and tracestate, and the traceparent of the dependency
    that released it as trace_origin."""
    q = make_queue()
    dep_tp = "00-" + "1" * 32 + "-" + "2" * 16 + "-01"
    own_tp = "00-" + "3" * 32 + "-" + "4" * 16 + "-01"
    dep = q1(db, "SELECT jobqueue.jq_enqueue(%s, '{}', traceparent => %s)", (q, dep_tp))
    child = q1(db, "SELECT jobqueue.jq_enqueue(%s, '{}', depends_on => ARRAY[%s::bigint], "
                   "traceparent => %s, tracestate => 'vendor=abc')", (q, dep, own_tp))
    db.commit()
    seen = {}

    def around(job, run):
        seen[job.id] = (job.traceparent, job.tracestate, job.trace_origin)
        return run()

    w = jobqueue.Worker(dsn, q, lambda job: None, concurrency=1, batch_size=1, poll_interval=0.2,
                        around_job=around)
    t = threading.Thread(target=w.run)
    t.start()
    wait_for(lambda: q1(db, "SELECT status::text FROM jobqueue.jobs WHERE id = %s", (child,)) == "succeeded",
             what="the dependent job")
    w.stop()
    t.join(10)
    assert seen[dep] == (dep_tp, None, None)
    assert seen[child] == (own_tp, "vendor=abc", dep_tp)
