"""The client's own logic, without a server."""

import datetime
import threading

import pytest

import jobqueue
from jobqueue._client import enqueue_args


class Boom(Exception):
    pass


class Coded(Exception):
    code = "HTTP_503"


def test_classify_retryable_by_default():
    code, msg, retryable, retry_in = jobqueue.classify(Boom("bad thing"))
    assert (code, msg, retryable, retry_in) == ("Boom", "bad thing", True, None)


def test_classify_permanent():
    code, msg, retryable, retry_in = jobqueue.classify(
        jobqueue.PermanentError("no such mailbox", code="BAD_ADDRESS"))
    assert (code, retryable) == ("BAD_ADDRESS", False)


def test_classify_permanent_subclass_and_default_code():
    class NotFound(jobqueue.PermanentError):
        pass
    code, _, retryable, _ = jobqueue.classify(NotFound("x"))
    assert (code, retryable) == ("NotFound", False)


def test_classify_retry_in():
    _, _, retryable, retry_in = jobqueue.classify(jobqueue.RetryLater("429", retry_in=90))
    assert retryable and retry_in == datetime.timedelta(seconds=90)
    _, _, _, retry_in = jobqueue.classify(
        jobqueue.RetryLater("x", retry_in=datetime.timedelta(minutes=2)))
    assert retry_in == datetime.timedelta(minutes=2)


def test_classify_code_attribute_and_limits():
    assert jobqueue.classify(Coded())[0] == "HTTP_503"
    e = Boom()
    e.code = 42          # not a string: the class name is used
    assert jobqueue.classify(e)[0] == "Boom"
    e.code = "é" * 100   # 200 bytes: cut to 128 bytes on a character boundary
    assert len(jobqueue.classify(e)[0].encode()) == 128
    assert jobqueue.classify(Boom())[1] == "Boom()"   # empty message: the repr


def test_classify_ignores_bad_retry_in():
    e = Boom("x")
    e.retry_in = -1
    assert jobqueue.classify(e)[3] is None


def test_backoff_doubles_up_to_cap_with_jitter():
    b = jobqueue.Backoff(base=0.1, cap=1.0, rand=lambda: 1.0)
    assert [round(b.next(), 3) for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    b.reset()
    assert b.next() == 0.1
    lo = jobqueue.Backoff(base=0.1, cap=1.0, rand=lambda: 0.0)
    assert lo.next() == 0.05


def test_enqueue_args():
    (q, payload, prio, run_at, max_attempts, key, deps, group, dkey, debounce, max_wait,
     start_by, cost) = enqueue_args(
        "emails", {"to": "a"}, priority=5, run_at=60, max_attempts=2, idempotency_key="k",
        depends_on=7, group_key="g", debounce_key="d", debounce=5, debounce_max_wait=60,
        start_by=120, cost=1.5)
    assert (q, payload.obj, prio, max_attempts, key, deps, group, dkey, cost) == (
        "emails", {"to": "a"}, 5, 2, "k", [7], "g", "d", 1.5)
    assert debounce == datetime.timedelta(seconds=5)
    assert max_wait == datetime.timedelta(seconds=60)
    assert 115 < (start_by - datetime.datetime.now(datetime.timezone.utc)).total_seconds() <= 120
    delta = run_at - datetime.datetime.now(datetime.timezone.utc)
    assert 55 < delta.total_seconds() <= 60
    when = datetime.datetime(2030, 1, 1, tzinfo=datetime.timezone.utc)
    assert enqueue_args("q", 1, run_at=when)[3] == when


def test_worker_arguments_checked():
    with pytest.raises(ValueError):
        jobqueue.Worker("dbname=x", "q", print, concurrency=0)
    with pytest.raises(ValueError):
        jobqueue.Worker("dbname=x", "q", print, heartbeat_fraction=1.5)
    w = jobqueue.Worker("dbname=x", "q", print, concurrency=8, batch_size=100)
    assert w.listen_dsn == "dbname=x" and w.owner.endswith(":q")


def test_create_queue_rejects_unknown_settings():
    with pytest.raises(TypeError):
        jobqueue.Client("dbname=x").create_queue("q", lease=3)
    with pytest.raises(TypeError):      # jq_alter_queue's only
        jobqueue.Client("dbname=x").create_queue("q", notify=False)
    with pytest.raises(TypeError):
        jobqueue.Client("dbname=x").schedule("s", "q", "* * * * *", every=3)


def test_worker_of_several_queues():
    w = jobqueue.Worker("dbname=x", ["a", "b"], print)
    assert w.queues == ["a", "b"] and w.owner.endswith(":a,b")
    assert [w._claim_queue(), w._claim_queue(), w._claim_queue()] == ["a", "b", "a"]
    w._may_have["a"] = False
    assert w._claim_queue() == "b"
    w._may_have["b"] = False
    assert w._claim_queue() is None
    w._notified("a")
    assert w._claim_queue() == "a"


class _E(Exception):
    pass


def test_error_code_rule():
    """The rule of every client: the code attribute if a non-empty string,
    else the class name."""
    e = _E("boom")
    assert jobqueue.classify(e)[0] == "_E"
    e.code = "HTTP_503"
    assert jobqueue.classify(e)[0] == "HTTP_503"
    e.code = ""
    assert jobqueue.classify(e)[0] == "_E"
    e.code = 503
    assert jobqueue.classify(e)[0] == "_E"
    assert jobqueue.classify(KeyError("x"))[0] == "KeyError"
    assert jobqueue.classify(ValueError("a\x00b"))[1] == "ab"   # text takes no NUL


def test_error_kinds():
    import psycopg
    from psycopg import errors
    kind = jobqueue.error_kind
    for e in (errors.DeadlockDetected(), errors.SerializationFailure(), errors.QueryCanceled(),
              errors.LockNotAvailable()):
        assert kind(e) == "transient"
    assert kind(errors.InvalidTextRepresentation()) == "data"
    assert kind(errors.UntranslatableCharacter()) == "data"
    assert kind(errors.ProgramLimitExceeded()) == "data"
    assert kind(errors.InvalidSchemaName()) == "fatal"
    assert kind(errors.UndefinedFunction()) == "fatal"
    assert kind(errors.InvalidPassword()) == "fatal"
    assert kind(errors.AdminShutdown()) == "connection"
    assert kind(psycopg.OperationalError(
        'connection failed: FATAL:  password authentication failed for user "x"')) == "fatal"
    assert kind(psycopg.OperationalError(
        'connection failed: FATAL:  database "nope" does not exist')) == "fatal"
    assert kind(psycopg.OperationalError("connection failed: Connection refused")) == "connection"
    assert kind(psycopg.InterfaceError("the connection is closed")) == "connection"
    assert kind(ValueError()) == "other"


def test_job_cancel_sets_reason_once():
    job = jobqueue.Job("q", 1, {}, 1, 1, None)
    assert not job.cancelled.is_set()
    job._cancel("lease lost")
    job._cancel("shutdown")
    assert job.cancelled.is_set() and job.cancel_reason == "lease lost"


def test_stop_before_run_returns_at_once():
    # No server at all: run() only has to notice the stop; connection
    # errors are retried with backoff until then.
    w = jobqueue.Worker("host=/nonexistent dbname=x connect_timeout=1", "q", print,
                        listen=False, reconnect_base=0.01, reconnect_max=0.05)
    t = threading.Thread(target=w.run)
    t.start()
    w.stop()
    t.join(10)
    assert not t.is_alive()
