"""Producer side: enqueue jobs, alone or inside the caller's transaction."""

import datetime
import threading

import psycopg
from psycopg.types.json import Jsonb

# Every statement names the jobqueue functions with their schema, and only
# jobqueue.jq_* functions are called: the extension does the work.
_ENQUEUE = (
    "SELECT jobqueue.jq_enqueue(%s, %s, priority => %s, run_at => %s, "
    "max_attempts => %s, idempotency_key => %s)"
)
_ENQUEUE_MANY = (
    "SELECT id FROM jobqueue.jq_enqueue_many(%s, %s::jsonb[], "
    "priority => %s, run_at => %s) AS id"
)
_CREATE_QUEUE = "SELECT jobqueue.jq_create_queue(%s{args})"
_QUEUE_POLICY = ("max_attempts", "lease_duration", "max_runtime", "backoff_base",
                 "backoff_max", "retention")


def connect(dsn, **kwargs):
    """A connection with the settings jobqueue's clients use everywhere.

    autocommit: every jobqueue call is its own short transaction (a claim
    must never stay open while the work runs).  prepare_threshold=None:
    psycopg never creates named prepared statements, which a transaction
    pooler (PgBouncer in pool_mode=transaction) cannot keep: the next
    statement may run on another server connection.
    """
    kwargs.setdefault("autocommit", True)
    kwargs.setdefault("prepare_threshold", None)
    return psycopg.connect(dsn, **kwargs)


def _interval(value):
    """Seconds (int/float) or a timedelta, as a timedelta; None stays None."""
    if value is None or isinstance(value, datetime.timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.timedelta(seconds=value)
    raise TypeError(f"expected seconds or a timedelta, got {value!r}")


def enqueue_args(queue, payload, priority=0, run_at=None, max_attempts=None,
                 idempotency_key=None):
    """The parameters of jq_enqueue for one job (run_at may be seconds from now)."""
    if isinstance(run_at, (int, float)) and not isinstance(run_at, bool):
        run_at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=run_at)
    return (queue, Jsonb(payload), priority, run_at, max_attempts, idempotency_key)


class Client:
    """Enqueues jobs.

    ``Client(dsn)`` opens one autocommit connection (lazily, thread-safe).
    Pass ``conn=`` to ``enqueue``/``enqueue_many`` to enqueue in your own
    transaction on your own connection: the job then exists if and only if
    that transaction commits.
    """

    def __init__(self, dsn=None, *, connect_kwargs=None):
        self.dsn = dsn
        self._connect_kwargs = dict(connect_kwargs or {})
        self._conn = None
        self._lock = threading.Lock()

    def _run(self, conn, sql, params):
        if conn is not None:
            return conn.execute(sql, params).fetchall()
        if self.dsn is None:
            raise ValueError("Client has no dsn: pass conn=")
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = connect(self.dsn, **self._connect_kwargs)
            try:
                return self._conn.execute(sql, params).fetchall()
            except psycopg.OperationalError:
                # The connection is probably gone: open a new one next time.
                self._conn.close()
                raise

    def enqueue(self, queue, payload, *, priority=0, run_at=None, max_attempts=None,
                idempotency_key=None, conn=None):
        """Add one job; returns its id (the existing job's id for a known
        idempotency_key).  run_at: a datetime, or seconds from now."""
        rows = self._run(conn, _ENQUEUE, enqueue_args(
            queue, payload, priority, run_at, max_attempts, idempotency_key))
        return rows[0][0]

    def enqueue_many(self, queue, payloads, *, priority=0, run_at=None, conn=None):
        """Add one job per payload in one statement; returns the ids in order."""
        if isinstance(run_at, (int, float)) and not isinstance(run_at, bool):
            run_at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=run_at)
        params = (queue, [Jsonb(p) for p in payloads], priority, run_at)
        return [r[0] for r in self._run(conn, _ENQUEUE_MANY, params)]

    def create_queue(self, queue, *, conn=None, **policy):
        """jq_create_queue(queue, ...): max_attempts, and the intervals
        lease_duration, max_runtime, backoff_base, backoff_max, retention as
        seconds or timedeltas.  An existing queue is left as it is."""
        unknown = set(policy) - set(_QUEUE_POLICY)
        if unknown:
            raise TypeError(f"unknown queue settings: {sorted(unknown)}")
        names = [k for k in _QUEUE_POLICY if policy.get(k) is not None]
        sql = _CREATE_QUEUE.format(args="".join(f", {k} => %s" for k in names))
        params = [queue] + [policy[k] if k == "max_attempts" else _interval(policy[k])
                            for k in names]
        self._run(conn, sql, params)

    def close(self):
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
