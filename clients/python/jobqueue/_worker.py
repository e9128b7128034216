"""Consumer side: a worker for one or more queues.

One thread (the caller's, in run()) owns the claim connection: it claims,
completes, fails, heartbeats and releases.  ``concurrency`` handler threads
run the jobs; a listener thread waits for NOTIFY on its own connection.
"""

import collections
import datetime
import json
import logging
import os
import queue as queue_mod
import select
import signal
import socket
import threading
import time

import psycopg

from ._backoff import Backoff
from ._client import connect
from ._errors import FatalError, StartupRefusals, classify, error_kind, fatal_error, stack_of

log = logging.getLogger("jobqueue")

CHANNEL = "jobqueue"

# A claim returns its jobs as one JSON array of [id, payload, attempt, token,
# lease_expires_at, seconds of lease left, traceparent, tracestate,
# trace_origin] (in claim order):
# one value to decode, instead of six per job, each through psycopg's
# loaders.  The lease left is measured against clock_timestamp(): the claim
# of jq_complete_and_claim reads the clock after its completions.
_JOBS_JSON = (
    "SELECT pg_catalog.json_agg(pg_catalog.json_build_array(c.id, c.payload, c.attempt, c.token, "
    "c.lease_expires_at, pg_catalog.date_part('epoch', "
    "c.lease_expires_at - pg_catalog.clock_timestamp()), c.traceparent, c.tracestate, "
    "c.trace_origin) ORDER BY c.n)::text "
    "FROM {call} WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, "
    "traceparent, tracestate, trace_origin, n)"
)
_CLAIM = _JOBS_JSON.format(call="jobqueue.jq_claim(%s, %s, %s)")
_COMPLETE_AND_CLAIM = _JOBS_JSON.format(
    call="jobqueue.jq_complete_and_claim(%s, %s::bigint[], %s::bigint[], %s, %s, NULL, %s::jsonb[])")
_COMPLETE_MANY = ("SELECT id FROM jobqueue.jq_complete_many(%s::bigint[], %s::bigint[], "
                  "%s::jsonb[]) AS id")
_FAIL = ("SELECT jobqueue.jq_fail(%s, %s, %s, %s, retryable => %s, retry_in => %s)::text")
# jq_fail with the stack trace (jobqueue 1.4: the history entry's "stack").
_FAIL_STACK = ("SELECT jobqueue.jq_fail(%s, %s, %s, %s, retryable => %s, retry_in => %s, "
               "stack => %s)::text")
_CHECK = ("SELECT (SELECT extversion FROM pg_catalog.pg_extension "
          "WHERE extname OPERATOR(pg_catalog.=) 'jobqueue'), "
          "EXISTS (SELECT FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n "
          "ON n.oid OPERATOR(pg_catalog.=) p.pronamespace "
          "WHERE n.nspname OPERATOR(pg_catalog.=) 'jobqueue' "
          "AND p.proname OPERATOR(pg_catalog.=) 'jq_fail' "
          "AND 'stack' OPERATOR(pg_catalog.=) ANY (p.proargnames))")
_HEARTBEAT = (
    "SELECT pg_catalog.date_part('epoch', h - pg_catalog.now()) "
    "FROM jobqueue.jq_heartbeat(%s, %s) AS h"
)
_RELEASE = "SELECT jobqueue.jq_release(%s, %s)"
# The same calls naming the job's queue first (jobqueue 1.4, which also
# keeps stack traces): on Citus each is one statement on the queue's shard,
# the calls by id alone look the queue up on every shard first.
_COMPLETE_MANY_Q = ("SELECT id FROM jobqueue.jq_complete_many(%s::text, %s::bigint[], "
                    "%s::bigint[], %s::jsonb[]) AS id")
_FAIL_Q = ("SELECT jobqueue.jq_fail(%s::text, %s::bigint, %s::bigint, %s, %s, retryable => %s, "
           "retry_in => %s)::text")
_FAIL_STACK_Q = ("SELECT jobqueue.jq_fail(%s::text, %s::bigint, %s::bigint, %s, %s, "
                 "retryable => %s, retry_in => %s, stack => %s)::text")
_HEARTBEAT_Q = (
    "SELECT pg_catalog.date_part('epoch', h - pg_catalog.now()) "
    "FROM jobqueue.jq_heartbeat(%s::text, %s::bigint, %s::bigint) AS h"
)
_RELEASE_Q = "SELECT jobqueue.jq_release(%s::text, %s::bigint, %s::bigint)"


_event_lock = threading.Lock()


class Job:
    """A claimed job, as the handler sees it.

    ``id``, ``payload`` (decoded JSON), ``attempt`` (1 on the first run),
    ``token`` (the fencing token), ``lease_expires_at``, ``queue``,
    ``traceparent`` (the W3C trace context its producer recorded, or None),
    ``tracestate`` (recorded with it, or None), ``trace_origin`` (the
    traceparent of the job this one came from: the dependency that released
    it, the schedule's run, the job it replays; or None).
    ``cancelled`` is a threading.Event set when the worker will not be
    able to report the job's result: its lease was lost (the heartbeat was
    refused: the job was cancelled, reaped or ran past max_runtime) or the
    worker is shutting down past its deadline; ``cancel_reason`` says which.
    A long handler should check it (or wait on it) and stop.
    """

    __slots__ = ("id", "payload", "attempt", "token", "_expires", "queue", "traceparent",
                 "tracestate", "trace_origin",
                 "_cancelled", "cancel_reason", "_lease_len", "_deadline", "_next_hb",
                 "_started", "_result")

    def __init__(self, queue, id, payload, attempt, token, lease_expires_at, traceparent=None,
                 tracestate=None, trace_origin=None):
        self.queue = queue
        self.traceparent = traceparent
        self.tracestate = tracestate
        self.trace_origin = trace_origin
        self.id = id
        self.payload = payload
        self.attempt = attempt
        self.token = token
        self._expires = lease_expires_at    # a datetime, or the ISO text of one
        # The Event is made when it is first needed: most jobs never are
        # cancelled, and most handlers never look.
        self._cancelled = None
        self.cancel_reason = None
        self._started = False
        self._result = None

    @property
    def lease_expires_at(self):
        if isinstance(self._expires, str):
            self._expires = datetime.datetime.fromisoformat(self._expires)
        return self._expires

    @lease_expires_at.setter
    def lease_expires_at(self, value):
        self._expires = value

    @property
    def cancelled(self):
        e = self._cancelled
        if e is None:
            with _event_lock:
                if self._cancelled is None:
                    self._cancelled = threading.Event()
                e = self._cancelled
        return e

    def _cancel(self, reason):
        if self.cancel_reason is None:
            self.cancel_reason = reason
            self.cancelled.set()

    def __repr__(self):
        return f"Job(id={self.id}, attempt={self.attempt}, queue={self.queue!r})"


class Worker:
    """Runs ``handler(job)`` for the jobs of a queue, or of several
    (``queue`` a list of names; ``job.queue`` says which), over one claim
    connection and one listener connection in all.

    A handler that returns completes the job (completions are sent in
    batches with jq_complete_many); one that raises fails it with jq_fail:
    ``jobqueue.PermanentError`` makes it dead at once, anything else is
    retried with the queue's backoff, or after ``retry_in`` seconds when the
    exception has that attribute (``jobqueue.RetryLater``).

    concurrency: handlers running at once.  batch_size: jobs per claim
      (claimed jobs wait locally until a handler is free; their leases
      are heartbeated like those of running jobs).
    dsn: the connection for claims and results; may go through PgBouncer in
      transaction pooling mode.  listen_dsn: a direct connection for LISTEN
      (default: dsn); listen=False: no LISTEN, polling only.
    poll_interval: seconds between claims when idle; a lost notification
      delays a job by at most this much.
    heartbeat_fraction: a held job is heartbeated each time this fraction of
      its lease has passed (default 1/3).
    shutdown_timeout: seconds running handlers get to finish after stop();
      then they are cancelled and their jobs released.
    flush_interval: results are sent at the latest this many seconds after
      the first of them is ready (sooner when batch_size of them are ready
      or every held job is finished), so completions go in batches.
    around_job: a hook, ``around_job(job, run)``, that runs each job by
      calling ``run()`` and returns what it returns (or raises what it
      raises): a tracing library opens a span there, the child of
      ``job.traceparent`` (with ``job.tracestate``), linked to
      ``job.trace_origin``.

    Errors: a failure caused by one job's data (a result the server
    refuses) fails that job; deadlocks, serialization failures, timeouts
    and lost connections retry; errors no retry can fix (authentication,
    an unknown database, the extension missing, an unknown queue) stop the
    worker: run() raises jobqueue.FatalError.  A refused connection
    attempt has no SQLSTATE in libpq: an English server's message says
    which at once; whatever the server's language, the same refusal
    ``max_refusals_at_start`` times in a row (default 10, about 25 s of
    reconnecting; 0: never) before the first connection that worked
    stops the worker too, while a server that cannot be reached is waited
    for.
    """

    def __init__(self, dsn, queue, handler, *, concurrency=4, batch_size=10,
                 listen_dsn=None, listen=True, poll_interval=5.0, heartbeat_fraction=1 / 3,
                 shutdown_timeout=30.0, owner=None, reconnect_base=0.1, reconnect_max=10.0,
                 flush_interval=0.05, handle_signals=True, logger=None, around_job=None,
                 max_refusals_at_start=10):
        if concurrency < 1 or batch_size < 1:
            raise ValueError("concurrency and batch_size must be at least 1")
        if not 0 < heartbeat_fraction < 1:
            raise ValueError("heartbeat_fraction must be between 0 and 1")
        self.dsn = dsn
        self.queues = [queue] if isinstance(queue, str) else list(queue)
        if not self.queues:
            raise ValueError("no queue")
        self.queue = self.queues[0]
        self.handler = handler
        self.around_job = around_job
        self.concurrency = concurrency
        self.batch_size = batch_size
        self.listen_dsn = listen_dsn or dsn
        self.listen = listen
        self.poll_interval = poll_interval
        self.heartbeat_fraction = heartbeat_fraction
        self.shutdown_timeout = shutdown_timeout
        self.flush_interval = flush_interval
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{','.join(self.queues)}"[:256]
        self.handle_signals = handle_signals
        self.log = logger or log
        self._reconnect = (reconnect_base, reconnect_max)
        self.max_refusals_at_start = max_refusals_at_start
        self.stats = collections.Counter(claimed=0, completed=0, failed=0, released=0,
                                         fenced=0, heartbeats=0, lost=0, retried=0)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._stop_at = None
        self._lock = threading.Lock()
        self._results = []            # (job, exc or None), from the handler threads
        self._first_result = 0.0      # when the oldest of them came
        self._ready = queue_mod.SimpleQueue()   # claimed, not started
        self._held = {}               # id -> Job: claimed and not yet reported
        self._conn = None
        self._has_stack = False       # the server's jq_fail takes the stack trace (1.4),
                                      # and it has the queue-first calls
        # Per queue: a notification came, or its last claim was full.
        self._may_have = {q: True for q in self.queues}
        self._turn = 0                # the queue to claim from first (rotates)
        self._next_poll = 0.0
        self._fatal = None            # a FatalError that stops the worker
        self.running = threading.Event()

    # -- control ---------------------------------------------------------

    def stop(self):
        """Stop claiming, let running handlers finish (up to
        shutdown_timeout), release the rest; run() then returns.  Safe from
        any thread and from signal handlers."""
        self._stop.set()
        self._wake.set()

    def run(self):
        """Work until stop() (or SIGTERM/SIGINT when called from the main
        thread); returns the counters."""
        old = {}
        if self.handle_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                old[sig] = signal.signal(sig, lambda *_: self.stop())
        threads = [threading.Thread(target=self._handler_loop, daemon=True,
                                    name=f"jobqueue-handler-{i}")
                   for i in range(self.concurrency)]
        if self.listen:
            threads.append(threading.Thread(target=self._listen_loop, daemon=True,
                                            name="jobqueue-listener"))
        for t in threads:
            t.start()
        self.log.info("worker %s: queues %s, concurrency %d, batch %d", self.owner,
                      ", ".join(self.queues), self.concurrency, self.batch_size)
        self.running.set()
        try:
            self._main_loop()
        finally:
            for _ in range(self.concurrency):
                self._ready.put(None)
            for sig, h in old.items():
                signal.signal(sig, h)
            if self._conn is not None:
                self._conn.close()
            self.running.clear()
            self.log.info("worker %s stopped: %s", self.owner, dict(self.stats))
        if self._fatal is not None:
            raise self._fatal
        return dict(self.stats)

    # -- handler threads -------------------------------------------------

    def _handler_loop(self):
        while True:
            job = self._ready.get()
            if job is None:
                return
            exc = None
            try:
                if self.around_job is None:
                    value = self.handler(job)
                else:
                    value = self.around_job(job, lambda: self.handler(job))
                # The result, as JSON text (a value that is not JSON fails
                # the job like an exception of the handler would).
                job._result = None if value is None else json.dumps(value)
            except BaseException as e:  # noqa: B902 -- every failure is reported
                exc = e
            with self._lock:
                if not self._results:
                    self._first_result = time.monotonic()
                self._results.append((job, exc))
                n = len(self._results)
            # Wake the main loop for the first result (it then sets its
            # flush timer) and when a batch is complete, not for each one.
            if n == 1 or n >= self.batch_size or n >= len(self._held) or self._stop.is_set():
                self._wake.set()

    # -- listener --------------------------------------------------------

    def _listen_loop(self):
        backoff = Backoff(*self._reconnect)
        refusals = StartupRefusals(self.max_refusals_at_start)
        while not self._stop.is_set():
            conn = None
            try:
                try:
                    conn = psycopg.connect(self.listen_dsn, autocommit=True)
                except psycopg.Error as e:
                    if error_kind(e) != "fatal":
                        refusals.note(e, "listener stopped")
                    raise
                refusals.connected = True
                conn.execute("LISTEN " + CHANNEL)
                backoff.reset()
                self._notified()   # anything sent while we were not listening
                while not self._stop.is_set():
                    r, _, _ = select.select([conn.fileno()], [], [], 0.5)
                    if not r:
                        continue
                    conn.pgconn.consume_input()
                    while True:
                        n = conn.pgconn.notifies()
                        if n is None:
                            break
                        if n.relname.decode() == CHANNEL and n.extra.decode() in self._may_have:
                            self._notified(n.extra.decode())
            except psycopg.Error as e:
                if error_kind(e, conn) == "fatal":
                    self._fatal = fatal_error(e, "listener stopped")
                    self.log.error("%s", self._fatal)
                    self.stop()
                    return
                delay = backoff.next()
                self.log.warning("listener connection lost (%s); reconnecting in %.1fs",
                                 str(e).strip(), delay)
                self._stop.wait(delay)
            except FatalError as e:
                self._fatal = e
                self.log.error("%s", e)
                self.stop()
                return
            except (OSError, ValueError) as e:
                delay = backoff.next()
                self.log.warning("listener connection lost (%s); reconnecting in %.1fs",
                                 str(e).strip(), delay)
                self._stop.wait(delay)
            finally:
                if conn is not None:
                    conn.close()

    def _notified(self, queue=None):
        for q in ([queue] if queue is not None else self.queues):
            self._may_have[q] = True
        self._wake.set()

    @property
    def _claim_now(self):
        return any(self._may_have.values())

    def _claim_queue(self):
        """The next queue (in turn) that may have jobs, or None."""
        n = len(self.queues)
        for i in range(n):
            q = self.queues[(self._turn + i) % n]
            if self._may_have[q]:
                self._turn = (self._turn + i + 1) % n
                return q
        return None

    # -- the main loop ----------------------------------------------------

    def _main_loop(self):
        backoff = Backoff(*self._reconnect)
        retry = Backoff(*self._reconnect)     # transient errors, same connection
        refusals = StartupRefusals(self.max_refusals_at_start)
        while True:
            if self._fatal is not None and self._stop_at is None:
                self._stop.set()
            now = time.monotonic()
            if self._stop.is_set() and self._stop_at is None:
                self._stop_at = now + self.shutdown_timeout
                self.log.info("stopping: no more claims; %d jobs running, %.1fs to finish",
                              len(self._held), self.shutdown_timeout)
            if self._stop_at is not None and not self._held:
                return      # nothing to finish or release
            try:
                if self._conn is None or self._conn.closed:
                    try:
                        self._conn = connect(self.dsn)
                    except psycopg.Error as e:
                        if error_kind(e) != "fatal":
                            try:
                                refusals.note(e, "stopped")
                            except FatalError as err:
                                self.log.error("%s", err)
                                raise err from e
                        raise
                    refusals.connected = True
                    self._check_server()
                    backoff.reset()
                if self._flush_due(now):
                    self._flush_results(claim=self._stop_at is None)
                self._heartbeats(now)
                if self._stop_at is not None:
                    self._release_unstarted()
                    if not self._held:
                        return
                    if now >= self._stop_at:
                        self._release_all()
                        return
                else:
                    self._maybe_claim(now)
                retry.reset()
            except psycopg.Error as e:
                kind = error_kind(e, self._conn)
                if kind in ("fatal", "data"):
                    # A data error here is the worker's own argument (an
                    # owner or a batch the server refuses): no retry fixes it.
                    err = fatal_error(e, "stopped")
                    self.log.error("%s; %d jobs held (their leases run out)", err,
                                   len(self._held))
                    for job in self._held.values():
                        job._cancel("shutdown")
                    raise err
                if kind != "connection":
                    delay = retry.next()
                    (self.log.warning if kind == "transient" else self.log.error)(
                        "call failed (%s, SQLSTATE %s); retrying in %.2fs", str(e).strip(),
                        e.sqlstate, delay)
                    self.stats["retried"] += 1
                    self._check_deadlines(time.monotonic())
                    self._stop.wait(delay) if self._stop_at is None else time.sleep(
                        min(delay, max(0.0, self._stop_at - time.monotonic())))
                    if self._stop_at is not None and time.monotonic() >= self._stop_at:
                        for job in self._held.values():
                            job._cancel("shutdown")
                        return
                    continue
                if self._conn is not None:
                    self._conn.close()
                self._conn = None
                delay = backoff.next()
                self.log.warning("connection lost (%s); %d jobs held; reconnecting in %.1fs",
                                 str(e).strip(), len(self._held), delay)
                self._check_deadlines(time.monotonic())
                if self._stop_at is not None and time.monotonic() >= self._stop_at:
                    # Nothing more can be sent: the leases run out and
                    # the reaper gives the jobs back.
                    for job in self._held.values():
                        job._cancel("shutdown")
                    return
                self._stop.wait(delay) if self._stop_at is None else time.sleep(
                    min(delay, max(0.0, self._stop_at - time.monotonic())))
                continue
            self._check_deadlines(time.monotonic())
            self._wait(now)

    def _check_server(self):
        """After connecting: the extension is there (else FatalError), and
        whether its jq_fail keeps stack traces."""
        version, self._has_stack = self._conn.execute(_CHECK).fetchone()
        if version is None:
            db = self._conn.info.dbname
            self._fatal = FatalError(
                f'jobqueue worker stopped: extension "jobqueue" is not installed in database '
                f'"{db}" (CREATE EXTENSION jobqueue)', "42704")
            raise self._fatal

    def _flush_due(self, now):
        with self._lock:
            n = len(self._results)
            first = self._first_result
        return n > 0 and (n >= self.batch_size or n >= len(self._held) or
                          self._stop_at is not None or now >= first + self.flush_interval)

    def _wait(self, now):
        with self._lock:
            self._wake.clear()
            results = len(self._results)
        if self._flush_due(time.monotonic()):
            return
        if self._claim_now and self._stop_at is None and self._claim_size() > 0:
            return
        until = self._next_poll if self._stop_at is None else self._stop_at
        if results:
            until = min(until, self._first_result + self.flush_interval)
        for job in self._held.values():
            until = min(until, job._next_hb, job._deadline)
        timeout = max(0.0, until - time.monotonic())
        self._wake.wait(min(timeout, self.poll_interval))

    def _claim_size(self, finishing=0):
        """How many jobs to claim now: none while enough wait for a handler;
        a whole batch once there is room for one; less only when the
        handlers would otherwise run out of work and no results wait to be
        sent (those go with the next claim, within flush_interval: a claim
        of its own would cost a round trip).  finishing: held jobs whose
        completion goes in the same call."""
        ready = self._ready.qsize()
        if ready >= self.concurrency:
            return 0
        room = self.batch_size + self.concurrency - (len(self._held) - finishing)
        if room < self.batch_size and (ready > 0 or (not finishing and self._results)):
            return 0
        return max(0, min(self.batch_size, room))

    def _poll_due(self, now):
        """Every poll_interval, every queue may have jobs."""
        if now >= self._next_poll:
            self._next_poll = now + self.poll_interval
            for q in self.queues:
                self._may_have[q] = True

    def _maybe_claim(self, now):
        self._poll_due(now)
        while True:
            n = self._claim_size()
            if n <= 0:
                return
            queue = self._claim_queue()
            if queue is None:
                return
            jobs = self._conn.execute(_CLAIM, (queue, n, self.owner)).fetchone()[0]
            self._claimed(jobs, n, queue)

    def _claimed(self, jobs, n, queue):
        """Take the jobs of a claim of n from queue (jq_claim or
        jq_complete_and_claim): jobs is the JSON text of _JOBS_JSON, or
        None when none came."""
        self._may_have[queue] = False
        t = time.monotonic()
        rows = json.loads(jobs) if jobs is not None else ()
        held, ready, frac = self._held, self._ready, self.heartbeat_fraction
        for id_, payload, attempt, token, expires, remaining, tparent, tstate, torigin in rows:
            job = Job(queue, id_, payload, attempt, token, expires, tparent, tstate, torigin)
            job._lease_len = lease = max(0.001, float(remaining))
            job._deadline = t + lease
            job._next_hb = t + lease * frac
            held[id_] = job
            ready.put(job)
        self.stats["claimed"] += len(rows)
        if rows:
            self.log.debug("claimed %d jobs", len(rows))
        if len(rows) == n:
            self._may_have[queue] = True   # there may be more

    def _flush_results(self, claim=False):
        """Send the results: failures with jq_fail, then the completions.
        With claim=True (and room for a claim), the completions and the
        next claim go in one call, jq_complete_and_claim; else (and for
        jobs whose lease the worker saw lost) jq_complete_many, which says
        which completions were refused."""
        with self._lock:
            results, self._results = self._results, []
        try:
            failed = [r for r in results if r[1] is not None]
            for job, exc in failed:
                code, message, retryable, retry_in = classify(exc)
                status = self._fail(job, code, message, retryable, retry_in, stack_of(exc))
                results.remove((job, exc))
                self._held.pop(job.id, None)
                if status is None:
                    self.stats["fenced"] += 1
                    self.log.warning("job %d: failure refused (lease lost): %s", job.id, code,
                                     exc_info=exc)
                else:
                    self.stats["failed"] += 1
                    self.log.warning("job %d (queue %s) attempt %d failed (%s: %s): now %s",
                                     job.id, job.queue, job.attempt, code, message, status,
                                     exc_info=exc)
            lost = [r for r in results if r[0].cancel_reason is not None]
            if lost:
                self._complete_many(lost)
                results = [r for r in results if r[0].cancel_reason is None]
            if not results:
                return
            n = 0
            queue = None
            if claim:
                self._poll_due(time.monotonic())
                n = self._claim_size(len(results))
                queue = self._claim_queue() if n > 0 else None
            if queue is not None:
                self._complete_and_claim(results, n, queue)
            else:
                self._complete_many(results)
            results = []
        finally:
            if results:     # not sent: keep them for the next connection
                with self._lock:
                    self._results[:0] = results

    @staticmethod
    def _completion_args(results):
        """ids and tokens as array literals ("{1,2}": one string each to
        send, where psycopg would dump each element), and the results
        (None when every one is None)."""
        ids = "{" + ",".join([str(job.id) for job, _ in results]) + "}"
        tokens = "{" + ",".join([str(job.token) for job, _ in results]) + "}"
        values = [job._result for job, _ in results]
        return ids, tokens, (values if any(v is not None for v in values) else None)

    def _complete_many(self, results):
        """Complete with jq_complete_many, which returns the ids completed:
        the others were refused (fenced).  With the queue-first call, one
        call per queue."""
        if self._has_stack and len({job.queue for job, _ in results}) > 1:
            by_queue = {}
            for r in results:
                by_queue.setdefault(r[0].queue, []).append(r)
            for part in by_queue.values():
                self._complete_many(part)
            return
        ids, tokens, values = self._completion_args(results)
        try:
            if self._has_stack:
                rows = self._conn.execute(_COMPLETE_MANY_Q, (results[0][0].queue, ids, tokens,
                                                             values))
            else:
                rows = self._conn.execute(_COMPLETE_MANY, (ids, tokens, values))
            completed = {r[0] for r in rows.fetchall()}
        except psycopg.Error as e:
            if len(results) == 1 or error_kind(e, self._conn) != "data":
                raise
            self._complete_one_by_one(results)
            return
        for job, _ in results:
            self._held.pop(job.id, None)
            if job.id in completed:
                self.stats["completed"] += 1
            else:
                self.stats["fenced"] += 1
                self.log.warning("job %d: completion refused (lease lost)", job.id)

    def _complete_and_claim(self, results, n, queue):
        """Complete these jobs and claim up to n more, in one call.  The
        call does not say which completions were refused (a job cancelled
        or reaped without the worker seeing it): all count as completed."""
        ids, tokens, values = self._completion_args(results)
        try:
            jobs = self._conn.execute(
                _COMPLETE_AND_CLAIM, (queue, ids, tokens, n, self.owner, values)).fetchone()[0]
        except psycopg.Error as e:
            if error_kind(e, self._conn) != "data":
                raise
            self._complete_one_by_one(results)
            return
        for job, _ in results:
            self._held.pop(job.id, None)
        self.stats["completed"] += len(results)
        self._claimed(jobs, n, queue)

    def _complete_one_by_one(self, results):
        """The server refused a value of the batch (a result larger than
        jobqueue.max_result_size, 54000, or one jsonb does not take:
        NaN, Infinity, "\\u0000", 22P02/22P05); the call failed and changed
        nothing.  Complete the jobs one at a time, and fail the ones whose
        result is refused, permanently (the same result would be refused
        at every attempt): RESULT_TOO_LARGE or RESULT_INVALID, with the
        server's message.  The others complete."""
        while results:
            r = results[0]
            job = r[0]
            try:
                self._complete_many([r])
            except psycopg.Error as e:
                if error_kind(e, self._conn) != "data":
                    raise       # the rest are sent again after the retry
                code = "RESULT_TOO_LARGE" if e.sqlstate == "54000" else "RESULT_INVALID"
                message = f"{str(e).strip()} (SQLSTATE {e.sqlstate})"
                status = self._fail(job, code, message, False, None, None)
                self._held.pop(job.id, None)
                self.stats["failed" if status is not None else "fenced"] += 1
                self.log.warning("job %d: the server refused its result (%s); failed: %s",
                                 job.id, message, status)
            results.pop(0)

    def _fail(self, job, code, message, retryable, retry_in, stack):
        """jq_fail (with the stack trace where the server keeps it); the
        job's new status, or None when fenced.  A failure whose text the
        server refuses is sent again without it."""
        try:
            if self._has_stack:
                return self._conn.execute(_FAIL_STACK_Q, (job.queue, job.id, job.token, code,
                                                          message, retryable, retry_in,
                                                          stack)).fetchone()[0]
            return self._conn.execute(_FAIL, (job.id, job.token, code, message, retryable,
                                              retry_in)).fetchone()[0]
        except psycopg.Error as e:
            if error_kind(e, self._conn) != "data":
                raise
            self.log.warning("job %d: the server refused its failure (%s); sending the code "
                             "alone", job.id, str(e).strip())
            if self._has_stack:
                return self._conn.execute(_FAIL_Q, (job.queue, job.id, job.token,
                                                    code or "ERROR", None, retryable,
                                                    retry_in)).fetchone()[0]
            return self._conn.execute(_FAIL, (job.id, job.token, code or "ERROR", None,
                                              retryable, retry_in)).fetchone()[0]

    def _heartbeats(self, now):
        for job in list(self._held.values()):
            if job._next_hb > now or job.cancel_reason is not None:
                continue
            if self._has_stack:
                row = self._conn.execute(_HEARTBEAT_Q, (job.queue, job.id, job.token)).fetchone()
            else:
                row = self._conn.execute(_HEARTBEAT, (job.id, job.token)).fetchone()
            t = time.monotonic()
            if row is None or row[0] is None:
                self.stats["lost"] += 1
                self.log.warning("job %d: heartbeat refused, lease lost; cancelling", job.id)
                job._cancel("lease lost")
                job._next_hb = float("inf")
                job._deadline = float("inf")
            else:
                self.stats["heartbeats"] += 1
                remaining = max(0.001, float(row[0]))
                job._deadline = t + remaining
                job._next_hb = t + remaining * self.heartbeat_fraction

    def _check_deadlines(self, now):
        for job in self._held.values():
            if now >= job._deadline and job.cancel_reason is None:
                self.stats["lost"] += 1
                self.log.warning("job %d: lease expired before a heartbeat got through; "
                                 "cancelling", job.id)
                job._cancel("lease lost")
                job._next_hb = float("inf")
                job._deadline = float("inf")

    def _release(self, job):
        if self._has_stack:
            ok = self._conn.execute(_RELEASE_Q, (job.queue, job.id, job.token)).fetchone()[0]
        else:
            ok = self._conn.execute(_RELEASE, (job.id, job.token)).fetchone()[0]
        self._held.pop(job.id, None)
        if ok:
            self.stats["released"] += 1
        else:
            self.stats["fenced"] += 1

    def _release_unstarted(self):
        while True:
            try:
                job = self._ready.get_nowait()
            except queue_mod.Empty:
                return
            if job is None:
                continue
            self._release(job)

    def _release_all(self):
        # The handlers that did not finish in time are told to stop, and
        # their jobs are pending again at once; whatever they report later
        # is ignored (the release fenced them).
        self._flush_results()
        for job in list(self._held.values()):
            job._cancel("shutdown")
            self.log.warning("job %d did not finish within the shutdown timeout; releasing",
                             job.id)
            self._release(job)
