"""Producer and operator side: enqueue jobs (alone or inside the caller's
transaction), manage queues and schedules, look at jobs and wait for them."""

import dataclasses
import datetime
import select
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

from ._errors import JobNotFound

# Every statement names the jobqueue functions with their schema, and only
# jobqueue.jq_* functions are called: the extension does the work.
_ENQUEUE = (
    "SELECT jobqueue.jq_enqueue(%s, %s, priority => %s, run_at => %s, "
    "max_attempts => %s, idempotency_key => %s, depends_on => %s::bigint[], group_key => %s, "
    "debounce_key => %s, debounce => %s, debounce_max_wait => %s, start_by => %s, "
    "cost => %s::float8)"
)
_ENQUEUE_MANY = (
    "SELECT id FROM jobqueue.jq_enqueue_many(%s, %s::jsonb[], "
    "priority => %s, run_at => %s, depends_on => %s::bigint[], group_keys => %s::text[], "
    "start_by => %s, cost => %s::float8) AS id"
)
_JOB_COLUMNS = ("id, queue_name, status::text, attempt, max_attempts, priority, result, progress, "
                "last_error_code, errors, created_at, available_at, started_at, finished_at, "
                "waiting_for")
_JOB = f"SELECT {_JOB_COLUMNS} FROM jobqueue.jq_job(%s)"
_DEAD_JOBS = ("SELECT id, queue_name, status::text, attempt, max_attempts, priority, result, progress, "
              "last_error_code, errors, created_at, available_at, started_at, finished_at, "
              "'{}'::bigint[] FROM jobqueue.jq_jobs(%s, status => 'dead', max_jobs => %s)")
_SCHEDULES = ("SELECT schedule_name, queue_name, cron, timezone, enabled, catch_up, priority, "
              "next_run_at, last_run_at, last_job_id, created_at, payload "
              "FROM jobqueue.jq_schedules()")
FINISHED_CHANNEL = "jobqueue_finished"
FINISHED = ("succeeded", "dead", "cancelled")

# The arguments of jq_create_queue and jq_alter_queue, in their order, and
# how each is sent: "interval" (seconds or a timedelta), or as it is.
_QUEUE_ARGS = {
    "max_attempts": None, "lease_duration": "interval", "max_runtime": "interval",
    "backoff_base": "interval", "backoff_max": "interval", "retention": "interval",
    "notify": None, "notify_finished": None, "group_concurrency": None,
    "group_ordered": None, "fairness": None, "priority_aging": "interval",
    "rate_limit": None, "rate_burst": None,
    "group_rate_limit": None, "group_rate_burst": None, "max_wait": "interval",
    "max_pending": None, "group_max_pending": None, "fair_share_half_life": "interval",
}
_CREATE_ONLY_NOT = {"notify"}     # jq_alter_queue only
_SCHEDULE_OPTIONS = ("timezone", "priority", "catch_up", "enabled")


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


def _when(run_at):
    """A datetime, or seconds from now, as a datetime; None stays None."""
    if isinstance(run_at, (int, float)) and not isinstance(run_at, bool):
        return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=run_at)
    return run_at


def _ids(depends_on):
    if depends_on is None:
        return None
    if isinstance(depends_on, int):
        return [depends_on]
    return [int(i) for i in depends_on]


def enqueue_args(queue, payload, priority=0, run_at=None, max_attempts=None,
                 idempotency_key=None, depends_on=None, group_key=None, debounce_key=None,
                 debounce=None, debounce_max_wait=None, start_by=None, cost=None):
    """The parameters of jq_enqueue for one job (run_at and start_by may be
    seconds from now, debounce and debounce_max_wait seconds)."""
    return (queue, Jsonb(payload), priority, _when(run_at), max_attempts, idempotency_key,
            _ids(depends_on), group_key, debounce_key, _interval(debounce),
            _interval(debounce_max_wait), _when(start_by), cost)


@dataclasses.dataclass(frozen=True)
class JobInfo:
    """A job as jq_job returns it (job(), wait(), dead_jobs())."""
    id: int
    queue_name: str
    status: str
    attempt: int
    max_attempts: int
    priority: int
    result: object
    progress: object
    last_error_code: str
    errors: list
    created_at: datetime.datetime
    available_at: datetime.datetime
    started_at: datetime.datetime
    finished_at: datetime.datetime
    waiting_for: list

    @property
    def finished(self):
        """succeeded, dead or cancelled."""
        return self.status in FINISHED


@dataclasses.dataclass(frozen=True)
class ScheduleInfo:
    """A schedule as jq_schedules returns it."""
    schedule_name: str
    queue_name: str
    cron: str
    timezone: str
    enabled: bool
    catch_up: str
    priority: int
    next_run_at: datetime.datetime
    last_run_at: datetime.datetime
    last_job_id: int
    created_at: datetime.datetime
    payload: dict


@dataclasses.dataclass(frozen=True)
class GroupLimit:
    """One group's overrides as jq_group_limits returns them (None: the
    queue's default)."""
    group_key: str
    concurrency: int
    rate_limit: float
    rate_burst: int
    weight: float


@dataclasses.dataclass(frozen=True)
class GroupStats:
    """One group of a queue as jq_group_stats returns it; usage and share
    only under fairness 'fair_share'."""
    group_key: str
    ready: int
    running: int
    scheduled: int
    dead: int
    blocked: bool
    oldest_ready_age: datetime.timedelta
    usage: float
    share: float


class Client:
    """The whole SQL API of jobqueue except the worker's own calls.

    ``Client(dsn)`` opens one autocommit connection (lazily; calls from
    several threads take turns on it).  Every method takes ``conn=``: the
    call then runs on your connection, in your open transaction (an
    enqueue, a cancel or a retry happens if and only if that transaction
    commits).  ``listen_dsn``: a direct connection for ``wait`` when
    ``dsn`` goes through a transaction pooler (default: dsn).
    """

    def __init__(self, dsn=None, *, listen_dsn=None, connect_kwargs=None):
        self.dsn = dsn
        self.listen_dsn = listen_dsn or dsn
        self._connect_kwargs = dict(connect_kwargs or {})
        self._conn = None
        self._lock = threading.Lock()

    def _run(self, conn, sql, params=()):
        if conn is not None:
            return conn.execute(sql, params).fetchall()
        if self.dsn is None:
            raise ValueError("Client has no dsn: pass conn=")
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = connect(self.dsn, **self._connect_kwargs)
            try:
                return self._conn.execute(sql, params).fetchall()
            except psycopg.Error:
                if self._conn.broken:
                    self._conn.close()      # open a new one next time
                raise

    def _one(self, conn, sql, params=()):
        rows = self._run(conn, sql, params)
        return rows[0][0] if rows else None

    # -- producers ---------------------------------------------------------

    def enqueue(self, queue, payload, *, priority=0, run_at=None, max_attempts=None,
                idempotency_key=None, group_key=None, depends_on=None, debounce_key=None,
                debounce=None, debounce_max_wait=None, start_by=None, cost=None, conn=None):
        """Add one job; returns its id (the existing job's id for a known
        idempotency_key).  run_at: a datetime, or seconds from now.
        depends_on: job ids (or one id) that must succeed first.
        group_key: the job's group (ordering policies).
        debounce_key: replace the pending, never claimed job of this key
        (its id is returned), moved to now + debounce (seconds or a
        timedelta) but never past the key's first call + debounce_max_wait.
        start_by: a datetime, or seconds from now: not claimed by then, the
        job never runs (cancelled, EXPIRED).  cost: the job's declared cost
        for fair share.  Beyond the queue's max_pending or group_max_pending:
        psycopg.errors.ConfigurationLimitExceeded (SQLSTATE 53400)."""
        return self._one(conn, _ENQUEUE, enqueue_args(
            queue, payload, priority, run_at, max_attempts, idempotency_key, depends_on,
            group_key, debounce_key, debounce, debounce_max_wait, start_by, cost))

    def enqueue_many(self, queue, payloads, *, priority=0, run_at=None, depends_on=None,
                     group_keys=None, start_by=None, cost=None, conn=None):
        """Add one job per payload in one statement; returns the ids in
        order.  priority, run_at, depends_on, start_by and cost are the same
        for every job; group_keys has one group key (or None) per payload.
        All or none: a batch beyond the queue's limits raises
        psycopg.errors.ConfigurationLimitExceeded (53400)."""
        payloads = list(payloads)
        if group_keys is not None:
            group_keys = list(group_keys)
            if len(group_keys) != len(payloads):
                raise ValueError("group_keys: one per payload")
        params = (queue, [Jsonb(p) for p in payloads], priority, _when(run_at),
                  _ids(depends_on), group_keys, _when(start_by), cost)
        return [r[0] for r in self._run(conn, _ENQUEUE_MANY, params)]

    # -- queues ------------------------------------------------------------

    def _queue_call(self, fn, queue, conn, policy, allowed):
        unknown = set(policy) - allowed
        if unknown:
            raise TypeError(f"unknown queue settings for {fn}: {sorted(unknown)}")
        names = [k for k in _QUEUE_ARGS if k in allowed and policy.get(k) is not None]
        sql = f"SELECT jobqueue.{fn}(%s" + "".join(f", {k} => %s" for k in names) + ")"
        params = [queue] + [_interval(policy[k]) if _QUEUE_ARGS[k] == "interval" else policy[k]
                            for k in names]
        self._run(conn, sql, params)

    def create_queue(self, name, *, conn=None, **policy):
        """jq_create_queue(name, ...), with any of its arguments:
        max_attempts, lease_duration, max_runtime, backoff_base,
        backoff_max, retention (intervals: seconds or timedeltas; retention
        may be 0), notify_finished, group_concurrency, group_ordered,
        fairness, priority_aging, rate_limit, rate_burst, group_rate_limit,
        group_rate_burst, max_wait, max_pending, group_max_pending,
        fair_share_half_life.  None (or not given): the server's default.  An existing queue is left as it is."""
        self._queue_call("jq_create_queue", name, conn, policy,
                         set(_QUEUE_ARGS) - _CREATE_ONLY_NOT)

    def alter_queue(self, name, *, conn=None, **policy):
        """jq_alter_queue(name, ...): the settings given change (the
        arguments of create_queue, and notify); None leaves one as it is;
        group_concurrency=0, priority_aging=0, rate_limit=0 remove them."""
        self._queue_call("jq_alter_queue", name, conn, policy, set(_QUEUE_ARGS))

    def pause(self, queue, *, conn=None):
        """jq_pause_queue: claims return nothing from the queue until resume."""
        self._run(conn, "SELECT jobqueue.jq_pause_queue(%s)", (queue,))

    def resume(self, queue, *, conn=None):
        """jq_resume_queue (and a wake-up notification)."""
        self._run(conn, "SELECT jobqueue.jq_resume_queue(%s)", (queue,))

    # -- jobs --------------------------------------------------------------

    def job(self, id, *, conn=None):
        """The job (jq_job) as a JobInfo, or None for an unknown id."""
        rows = self._run(conn, _JOB, (id,))
        return JobInfo(*rows[0]) if rows else None

    def cancel(self, id, *, conn=None):
        """jq_cancel: True if the job was pending or running (now cancelled)."""
        return self._one(conn, "SELECT jobqueue.jq_cancel(%s)", (id,))

    def retry(self, id, run_at=None, *, conn=None):
        """jq_retry: replays a dead or cancelled job (at run_at: a datetime
        or seconds from now; None: now); True if it was replayed."""
        return self._one(conn, "SELECT jobqueue.jq_retry(%s, %s)", (id, _when(run_at)))

    def retry_dead(self, queue, error_code=None, max_jobs=100, *, conn=None):
        """jq_retry_dead: replays up to max_jobs dead jobs of the queue (of
        that last error code, if given), oldest first; returns how many."""
        return self._one(conn, "SELECT jobqueue.jq_retry_dead(%s, %s, %s)",
                         (queue, error_code, max_jobs))

    def dead_jobs(self, queue, limit=100, *, conn=None):
        """The queue's dead jobs (jq_jobs), most recently dead first, at most limit,
        as JobInfo with their error histories.  For the admin and monitor
        rights (no rights on the tables); a monitor gets no result,
        progress or error history."""
        return [JobInfo(*r) for r in self._run(conn, _DEAD_JOBS, (queue, limit))]

    def wait(self, id, timeout=None, *, poll_interval=1.0):
        """Wait until the job is finished (succeeded, dead or cancelled) and
        return it (a JobInfo).  Listens on jobqueue_finished, where a queue
        with notify_finished announces its finished jobs (the wait ends as
        soon as the announcement comes), and looks again every
        ``poll_interval`` seconds all the same (a queue without
        notify_finished, or a lost notification).  Raises TimeoutError
        after ``timeout`` seconds (None: no limit), JobNotFound for an
        unknown id.  Uses a connection of its own (listen_dsn) while it
        waits."""
        deadline = None if timeout is None else time.monotonic() + timeout
        conn = connect(self.listen_dsn, **self._connect_kwargs)
        try:
            conn.execute("LISTEN " + FINISHED_CHANNEL)       # 1. listen
            prefix = f"{id} ".encode()
            while True:
                job = self.job(id, conn=conn)                # 2. look
                if job is None:
                    raise JobNotFound(f"no job {id}")
                if job.finished:
                    return job
                end = time.monotonic() + poll_interval
                if deadline is not None:
                    if time.monotonic() >= deadline:
                        raise TimeoutError(f"job {id} not finished after {timeout}s "
                                           f"(status {job.status})")
                    end = min(end, deadline)
                self._wait_notification(conn, prefix, end)   # 3. wait
        finally:
            conn.close()

    @staticmethod
    def _wait_notification(conn, prefix, end):
        """Until a notification on jobqueue_finished whose payload starts
        with prefix, or the monotonic time end.  (psycopg 3.1's notifies()
        has no timeout: select on the socket.)"""
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([conn.fileno()], [], [], left)
            if not r:
                return
            conn.pgconn.consume_input()
            while True:
                n = conn.pgconn.notifies()
                if n is None:
                    break
                if n.relname.decode() == FINISHED_CHANNEL and n.extra.startswith(prefix):
                    return

    # -- groups --------------------------------------------------------------

    def set_group_limit(self, queue, group_key, *, concurrency=None, rate_limit=None,
                        rate_burst=None, weight=None, conn=None):
        """jq_set_group_limit: the overrides of one group (None: the queue's
        default); with all of them None the group's overrides are removed."""
        self._run(conn, "SELECT jobqueue.jq_set_group_limit(%s, %s, concurrency => %s, "
                  "rate_limit => %s, rate_burst => %s, weight => %s)",
                  (queue, group_key, concurrency, rate_limit, rate_burst, weight))

    def group_limits(self, queue, *, conn=None):
        """The overrides of the queue's groups (jq_group_limits), by group
        key, as GroupLimit."""
        return [GroupLimit(*r) for r in self._run(
            conn, "SELECT group_key, concurrency, rate_limit, rate_burst, weight "
            "FROM jobqueue.jq_group_limits(%s)", (queue,))]

    def group_stats(self, queue, *, conn=None):
        """The queue's groups with unfinished jobs (jq_group_stats), by
        group key, as GroupStats."""
        return [GroupStats(*r) for r in self._run(
            conn, "SELECT group_key, ready, running, scheduled, dead, blocked, "
            "oldest_ready_age, usage, share FROM jobqueue.jq_group_stats(%s)", (queue,))]

    # -- schedules -----------------------------------------------------------

    def schedule(self, name, queue, cron, payload=None, *, conn=None, **options):
        """jq_schedule: create or replace the schedule; options: timezone,
        priority, catch_up, enabled.  Returns its next run time."""
        unknown = set(options) - set(_SCHEDULE_OPTIONS)
        if unknown:
            raise TypeError(f"unknown schedule options: {sorted(unknown)}")
        names = [k for k in _SCHEDULE_OPTIONS if options.get(k) is not None]
        sql = ("SELECT jobqueue.jq_schedule(%s, %s, %s, %s"
               + "".join(f", {k} => %s" for k in names) + ")")
        params = [name, queue, cron, Jsonb(payload if payload is not None else {})]
        return self._one(conn, sql, params + [options[k] for k in names])

    def unschedule(self, name, *, conn=None):
        """jq_unschedule: True if there was a schedule of that name."""
        return self._one(conn, "SELECT jobqueue.jq_unschedule(%s)", (name,))

    def schedules(self, *, conn=None):
        """Every schedule (jq_schedules), by name, as ScheduleInfo."""
        return [ScheduleInfo(*r) for r in self._run(conn, _SCHEDULES)]

    def close(self):
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
