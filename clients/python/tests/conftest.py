import os
import sys
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import jobqueue  # noqa: E402


def wait_for(cond, timeout=60.0, what="a condition", interval=0.05):
    """Poll cond() until it is true; fail the test after timeout seconds."""
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@pytest.fixture(scope="session")
def dsn():
    d = os.environ.get("JQ_TEST_DSN")
    if not d:
        pytest.skip("JQ_TEST_DSN is not set (scripts/test_clients.sh sets it)")
    return d


@pytest.fixture(scope="session")
def bouncer_dsn():
    d = os.environ.get("JQ_TEST_BOUNCER_DSN")
    if not d:
        pytest.skip("JQ_TEST_BOUNCER_DSN is not set (scripts/test_clients.sh sets it)")
    return d


@pytest.fixture()
def db(dsn):
    conn = jobqueue.connect(dsn)
    yield conn
    conn.close()


@pytest.fixture()
def make_queue(db):
    """make_queue(**policy) -> a new queue with a unique name; short lease
    and backoff by default."""
    def make(prefix="py", **policy):
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        policy.setdefault("lease_duration", 2)
        policy.setdefault("backoff_base", 0.05)
        policy.setdefault("backoff_max", 0.2)
        jobqueue.Client(connect_kwargs={}).create_queue(name, conn=db, **policy)
        return name
    return make


def q1(conn, sql, params=()):
    row = conn.execute(sql, params).fetchone()
    return row[0] if row else None
