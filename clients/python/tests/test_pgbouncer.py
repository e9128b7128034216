"""Through PgBouncer in transaction pooling mode (JQ_TEST_BOUNCER_DSN),
with fewer server connections (JQ_TEST_BOUNCER_POOL) than clients: nothing
may depend on session state."""

import os
import threading
import time

import psycopg

import jobqueue
from conftest import q1, wait_for

CLIENTS = 8
PER_CLIENT = 1250


def test_pool_is_smaller_than_the_clients():
    assert int(os.environ.get("JQ_TEST_BOUNCER_POOL", "3")) < CLIENTS


def test_double_claim_race_through_pgbouncer(bouncer_dsn, db, make_queue):
    """8 clients x 1,250 claims of one job and its completion, on 10,000
    jobs (test/t/001_double_claim.pl, through the pooler): every job is
    claimed and completed exactly once."""
    q = make_queue(prefix="race", lease_duration=60)
    total = CLIENTS * PER_CLIENT
    jobqueue.Client(bouncer_dsn).enqueue_many(q, [{"n": i} for i in range(total)])
    completed = [[] for _ in range(CLIENTS)]
    errors = []

    def client(k):
        try:
            with jobqueue.connect(bouncer_dsn) as conn:
                empty = 0
                while len(completed[k]) < PER_CLIENT:
                    row = conn.execute("SELECT id, token FROM jobqueue.jq_claim(%s, 1, %s)",
                                       (q, f"race-{k}")).fetchone()
                    if row is None:     # the rest locked by other claims at this instant
                        empty += 1
                        assert empty < 1000
                        continue
                    if conn.execute("SELECT jobqueue.jq_complete(%s, %s)", row).fetchone()[0]:
                        completed[k].append(row[0])
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    done = [i for c in completed for i in c]
    assert len(done) == total and len(set(done)) == total
    row = db.execute("SELECT count(*) FILTER (WHERE status = 'succeeded'), "
                     "max(attempt_count), max(lease_token) "
                     "FROM jobqueue.jobs WHERE queue_name = %s", (q,)).fetchone()
    assert row == (total, 1, 1)


def test_producer_and_worker_through_pgbouncer(dsn, bouncer_dsn, db, make_queue):
    """Enqueue (also in a caller's transaction), claim, complete, fail,
    heartbeat and replay through the pooler; LISTEN on a direct connection."""
    q = make_queue(prefix="bouncer", lease_duration=2, max_attempts=2)
    client = jobqueue.Client(bouncer_dsn)
    with psycopg.connect(bouncer_dsn, prepare_threshold=None) as conn:
        client.enqueue(q, {"kind": "rolled back"}, conn=conn)
        conn.rollback()
        with conn.transaction():
            client.enqueue(q, {"kind": "long"}, conn=conn)
    ids = client.enqueue_many(q, [{"kind": "flaky" if i % 10 == 0 else "ok"}
                                  for i in range(300)])
    dead_id = client.enqueue(q, {"kind": "permanent"})
    runs = {}
    lock = threading.Lock()

    def handler(job):
        with lock:
            runs[job.id] = runs.get(job.id, 0) + 1
        kind = job.payload["kind"]
        if kind == "flaky" and job.attempt == 1:
            raise RuntimeError("once")
        if kind == "permanent" and job.attempt == 1 and q1(db, "SELECT count(*) FROM "
                                                          "jobqueue.jobs WHERE id = %s AND "
                                                          "errors @> '[{\"event\": \"replay\"}]'",
                                                          (job.id,)) == 0:
            raise jobqueue.PermanentError("not yet")
        if kind == "long":
            time.sleep(3)       # past the 2 s lease: heartbeats through the pooler

    workers = [jobqueue.Worker(bouncer_dsn, q, handler, listen_dsn=dsn, concurrency=4,
                               batch_size=10, poll_interval=0.5) for _ in range(4)]
    threads = [threading.Thread(target=w.run) for w in workers]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: q1(db, "SELECT status::text FROM jobqueue.jobs WHERE id = %s",
                            (dead_id,)) == "dead", what="the permanent failure")
        # The replay, through the pooler too.
        with jobqueue.connect(bouncer_dsn) as conn:
            assert q1(conn, "SELECT jobqueue.jq_retry(%s)", (dead_id,)) is True
        wait_for(lambda: q1(db, "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = %s "
                                "AND status = 'succeeded'", (q,)) == 302,
                 what="every job to succeed")
    finally:
        for w in workers:
            w.stop()
        for t in threads:
            t.join(30)
    stats = [w.stats for w in workers]
    assert sum(s["heartbeats"] for s in stats) >= 1
    assert sum(s["fenced"] for s in stats) == 0
    assert sum(s["completed"] for s in stats) == 302
    for i in ids:
        assert runs[i] == (2 if (i - ids[0]) % 10 == 0 else 1)
    assert q1(db, "SELECT count(*) FROM jobqueue.jobs WHERE queue_name = %s "
                  "AND payload->>'kind' = 'rolled back'", (q,)) == 0
