"""Against the real server: every method of jobqueue.Client, and a worker
serving several queues."""

import datetime
import threading
import uuid

import psycopg
import pytest

import jobqueue
from conftest import q1, wait_for


def test_enqueue_group_key_and_depends_on(dsn, db, make_queue):
    q = make_queue(group_concurrency=1)
    with jobqueue.Client(dsn) as c:
        first = c.enqueue(q, {"step": 1}, group_key="order-1")
        second = c.enqueue(q, {"step": 2}, depends_on=[first], group_key="order-1")
        many = c.enqueue_many(q, [{"i": 0}, {"i": 1}], depends_on=first,
                              group_keys=["a", None])
        with pytest.raises(ValueError):
            c.enqueue_many(q, [{"i": 0}], group_keys=["a", "b"])
        j = c.job(second)
        assert (j.status, j.waiting_for, j.queue_name) == ("waiting", [first], q)
    rows = db.execute("SELECT id, group_key, status::text FROM jobqueue.jobs WHERE id = ANY(%s) "
                      "ORDER BY id", ([first, second] + many,)).fetchall()
    assert rows == [(first, "order-1", "pending"), (second, "order-1", "waiting"),
                    (many[0], "a", "waiting"), (many[1], "", "waiting")]


def test_create_and_alter_queue_take_every_argument(dsn, db):
    q = f"py-all-{uuid.uuid4().hex[:8]}"
    with jobqueue.Client(dsn) as c:
        c.create_queue(q, max_attempts=3, lease_duration=20, max_runtime=600,
                       backoff_base=datetime.timedelta(seconds=2), backoff_max=60, retention=0,
                       notify_finished=True, group_concurrency=None, group_ordered=True,
                       fairness="round_robin", priority_aging=30, rate_limit=5.0, rate_burst=7)
        row = db.execute("SELECT max_attempts, lease_duration, max_runtime, backoff_base, "
                         "backoff_max, retention, notify_finished, group_ordered, fairness, "
                         "priority_aging, rate_limit, rate_burst FROM jobqueue.queues "
                         "WHERE queue_name = %s", (q,)).fetchone()
        s = datetime.timedelta
        assert row == (3, s(seconds=20), s(seconds=600), s(seconds=2), s(seconds=60), s(0),
                       True, True, "round_robin", s(seconds=30), 5.0, 7)
        c.alter_queue(q, notify=False, notify_finished=False, group_ordered=False,
                      group_concurrency=2, fairness="priority", priority_aging=0, rate_limit=0,
                      retention=3600, max_attempts=4)
        row = db.execute("SELECT notify, notify_finished, group_ordered, group_concurrency, "
                         "fairness, priority_aging, rate_limit, retention, max_attempts "
                         "FROM jobqueue.queues WHERE queue_name = %s", (q,)).fetchone()
        assert row == (False, False, False, 2, "priority", None, None, s(seconds=3600), 4)
        with pytest.raises(TypeError):
            c.alter_queue(q, lease=3)


def test_group_limits_and_stats(dsn, db, make_queue):
    q = make_queue(group_concurrency=4)
    with jobqueue.Client(dsn) as c:
        c.set_group_limit(q, "a", concurrency=1, weight=2.5)
        c.set_group_limit(q, "b", rate_limit=3.0, rate_burst=5)
        assert c.group_limits(q) == [jobqueue.GroupLimit("a", 1, None, None, 2.5),
                                     jobqueue.GroupLimit("b", None, 3.0, 5, None)]
        c.set_group_limit(q, "b")
        assert [g.group_key for g in c.group_limits(q)] == ["a"]
        c.enqueue_many(q, [{"i": i} for i in range(3)], group_keys=["a", "a", "c"])
        claimed = db.execute("SELECT count(*) FROM jobqueue.jq_claim(%s, 10, 'py')",
                             (q,)).fetchone()[0]
        assert claimed == 2          # a's override is 1
        stats = {g.group_key: g for g in c.group_stats(q)}
        assert (stats["a"].ready, stats["a"].running, stats["c"].running) == (1, 1, 1)
        assert stats["a"].usage is None     # not a fair-share queue
        with pytest.raises(psycopg.errors.InvalidParameterValue):
            c.set_group_limit(q, "a", concurrency=-1)


def test_cancel_retry_in_a_rolled_back_transaction(dsn, db, make_queue):
    """cancel and retry, like enqueue, run in the caller's transaction."""
    q = make_queue()
    c = jobqueue.Client(dsn)
    a = c.enqueue(q, {})
    with psycopg.connect(dsn) as conn:
        assert c.cancel(a, conn=conn) is True
        assert c.job(a, conn=conn).status == "cancelled"
        conn.rollback()
    assert c.job(a).status == "pending"
    assert c.cancel(a) is True
    with psycopg.connect(dsn) as conn:
        assert c.retry(a, run_at=3600, conn=conn) is True
        conn.rollback()
    assert c.job(a).status == "cancelled"
    assert c.retry(a, run_at=3600) is True
    j = c.job(a)
    assert j.status == "pending" and j.available_at > datetime.datetime.now(
        datetime.timezone.utc) + datetime.timedelta(seconds=3500)
    assert c.retry(a) is False                      # pending: nothing to replay
    assert c.job(10 ** 15) is None
    c.close()


def test_dead_jobs_retry_dead_pause_resume(dsn, db, make_queue):
    q = make_queue(max_attempts=1)
    c = jobqueue.Client(dsn)
    ids = c.enqueue_many(q, [{"n": i} for i in range(5)])

    def handler(job):
        if job.payload["n"] < 3:
            raise jobqueue.PermanentError("no", code="BAD" if job.payload["n"] else "WORSE")

    w = jobqueue.Worker(dsn, q, handler, poll_interval=0.2)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: len(c.dead_jobs(q)) == 3, what="3 dead jobs")
    finally:
        w.stop()
        t.join(30)
    dead = c.dead_jobs(q)
    # most recently dead first
    assert [j.finished_at for j in dead] == sorted((j.finished_at for j in dead), reverse=True)
    dead.sort(key=lambda j: j.id, reverse=True)
    assert [j.id for j in dead] == sorted(ids[:3], reverse=True)
    assert [j.last_error_code for j in dead] == ["BAD", "BAD", "WORSE"]
    assert dead[0].errors[-1]["code"] == "BAD"
    assert len(c.dead_jobs(q, limit=2)) == 2
    # the admin and monitor rights suffice (no rights on the tables); a
    # monitor sees no error history
    for kind in ("admin", "monitor"):
        role = f"jq_py_{kind}_{q.replace('-', '_')}"
        db.execute(f"CREATE ROLE {role}")
        db.execute(f"SELECT jobqueue.jq_grant_{kind}(%s)", (role,))
        try:
            with db.transaction():
                db.execute(f"SET LOCAL ROLE {role}")
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    with db.transaction():
                        db.execute("SELECT count(*) FROM jobqueue.jobs")
                seen = c.dead_jobs(q, conn=db)
                assert [j.id for j in seen] == [j.id for j in dead]
                assert [j.last_error_code for j in seen] == ["BAD", "BAD", "WORSE"]
                assert all(j.status == "dead" and j.finished_at is not None for j in seen)
                if kind == "admin":
                    assert seen == dead
                else:
                    assert all(j.errors is None and j.result is None for j in seen)
                names = [s.schedule_name for s in c.schedules(conn=db)]
                assert isinstance(names, list)
        finally:
            db.execute(f"SELECT jobqueue.jq_revoke_{kind}(%s)", (role,))
            db.execute(f"DROP ROLE {role}")
    c.pause(q)
    assert c.retry_dead(q, error_code="BAD") == 2
    assert c.retry_dead(q, max_jobs=5) == 1
    assert c.dead_jobs(q) == []
    assert q1(db, "SELECT paused FROM jobqueue.queues WHERE queue_name = %s", (q,)) is True
    c.resume(q)
    assert q1(db, "SELECT paused FROM jobqueue.queues WHERE queue_name = %s", (q,)) is False
    c.close()


def test_wait_listens_where_the_queue_announces(dsn, db, make_queue):
    q = make_queue(notify_finished=True)
    waiting = threading.Event()

    class Client(jobqueue.Client):
        def _wait_notification(self, conn, prefix, end):
            waiting.set()
            return super()._wait_notification(conn, prefix, end)

    c = Client(dsn)
    a = c.enqueue(q, {})
    with pytest.raises(TimeoutError):
        c.wait(a, timeout=0.3)
    waiting.clear()
    got = {}
    waiter = threading.Thread(target=lambda: got.update(job=c.wait(a, poll_interval=3600)))
    waiter.start()
    # The waiter listens and looked, then the job finishes: only the
    # notification can end a wait that polls once an hour.
    assert waiting.wait(30)
    job = db.execute("SELECT id, token FROM jobqueue.jq_claim(%s, 1, 'test')", (q,)).fetchone()
    assert q1(db, "SELECT jobqueue.jq_complete(%s, %s, '{\"ok\": 1}')", job) is True
    waiter.join(30)
    assert not waiter.is_alive()
    assert (got["job"].status, got["job"].result) == ("succeeded", {"ok": 1})
    with pytest.raises(jobqueue.JobNotFound):
        c.wait(10 ** 15)
    c.close()


def test_wait_polls_a_queue_that_does_not_announce(dsn, db, make_queue):
    q = make_queue()
    c = jobqueue.Client(dsn)
    a = c.enqueue(q, {})
    got = {}
    waiter = threading.Thread(target=lambda: got.update(job=c.wait(a, poll_interval=0.1)))
    waiter.start()
    assert c.cancel(a) is True
    waiter.join(30)
    assert got["job"].status == "cancelled"
    c.close()


def test_schedules(dsn, db, make_queue):
    q = make_queue()
    name = f"py-s-{uuid.uuid4().hex[:8]}"
    with jobqueue.Client(dsn) as c:
        nxt = c.schedule(name, q, "0 3 * * *", {"kind": "nightly"}, timezone="Europe/Berlin",
                         priority=4, catch_up="all")
        assert isinstance(nxt, datetime.datetime)
        mine = [s for s in c.schedules() if s.schedule_name == name]
        assert len(mine) == 1
        s = mine[0]
        assert (s.queue_name, s.cron, s.timezone, s.priority, s.catch_up, s.enabled,
                s.payload, s.next_run_at) == (q, "0 3 * * *", "Europe/Berlin", 4, "all", True,
                                              {"kind": "nightly"}, nxt)
        assert c.schedule(name, q, "0 3 * * *", enabled=False) is None
        assert c.unschedule(name) is True
        assert c.unschedule(name) is False
        assert [s for s in c.schedules() if s.schedule_name == name] == []


def test_worker_serves_several_queues(dsn, db, make_queue):
    qs = [make_queue(), make_queue(), make_queue()]
    c = jobqueue.Client(dsn)
    ids = {q: c.enqueue_many(q, [{"q": q, "n": i} for i in range(30)]) for q in qs}
    seen = {}
    lock = threading.Lock()

    def handler(job):
        assert job.payload["q"] == job.queue
        with lock:
            seen[job.id] = job.queue

    # Polling once an hour: after the first claims, only notifications
    # bring the worker to a queue.
    w = jobqueue.Worker(dsn, qs, handler, concurrency=4, batch_size=10, poll_interval=3600)
    t = threading.Thread(target=w.run)
    t.start()
    try:
        wait_for(lambda: len(seen) == 90, what="every job of the 3 queues")
        # Notifications of every queue wake the one worker.
        late = c.enqueue(qs[2], {"q": qs[2], "n": 99})
        wait_for(lambda: late in seen, what="a late job (a notification)")
    finally:
        w.stop()
        t.join(30)
    assert {i: seen[i] for q in qs for i in ids[q]} == {i: q for q in qs for i in ids[q]}
    # One claim connection and one listener for the three queues.
    assert q1(db, "SELECT count(DISTINCT lease_owner) FROM jobqueue.jobs "
                  "WHERE queue_name = ANY(%s)", (qs,)) == 1
    c.close()
