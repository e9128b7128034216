"""What a handler raises, how a failure is reported to jq_fail, and what a
failed call of the worker means."""

import datetime
import re
import traceback


class PermanentError(Exception):
    """Raised by a handler: the job failed and must not be retried (dead at once).

    ``code`` (default: the class name) becomes the job's last_error_code.
    """

    def __init__(self, message="", *, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class RetryLater(Exception):
    """Raised by a handler: a retryable failure to retry after ``retry_in``
    (seconds or a timedelta) instead of the queue's backoff."""

    def __init__(self, message="", *, retry_in, code=None):
        super().__init__(message)
        self.retry_in = retry_in
        if code is not None:
            self.code = code


class FatalError(Exception):
    """A worker stopped (or did not start) on an error that no retry can
    fix: authentication, an unknown database, the extension missing or
    older than the client, missing privileges, an unknown queue.
    ``sqlstate`` is the server's code (or the one its message implies);
    the psycopg error is the ``__cause__``."""

    def __init__(self, message, sqlstate=None):
        super().__init__(message)
        self.sqlstate = sqlstate


class JobNotFound(LookupError):
    """Client.wait(): no job of that id (never enqueued, purged, or deleted
    when it succeeded in a queue whose retention is zero)."""


def _seconds_interval(value):
    if value is None or isinstance(value, datetime.timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return datetime.timedelta(seconds=value)
    return None


def _text(s):
    """Text PostgreSQL takes: no NUL characters."""
    return s.replace("\x00", "") if "\x00" in s else s


# The stack trace sent: the server keeps jobqueue.max_error_stack_size of it.
MAX_STACK = 65536


def classify(exc):
    """(error_code, error_message, retryable, retry_in) for jq_fail.

    PermanentError (and subclasses) are not retryable; anything else is.
    The error code is the exception's ``code`` attribute when it is a
    non-empty string, else its class name (``type(exc).__name__``: the
    rule of every jobqueue client); a ``retry_in`` attribute (seconds or a
    timedelta) replaces the backoff delay of a retryable failure.
    """
    code = getattr(exc, "code", None)
    if not isinstance(code, str) or not code:
        code = type(exc).__name__
    code = _text(code).encode("utf-8")[:128].decode("utf-8", "ignore") or "Exception"
    message = _text(str(exc) or repr(exc))
    retryable = not isinstance(exc, PermanentError)
    retry_in = _seconds_interval(getattr(exc, "retry_in", None)) if retryable else None
    return code, message, retryable, retry_in


def stack_of(exc):
    """The exception's traceback as text (what logging prints), or None."""
    if exc.__traceback__ is None:
        return None
    text = _text("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    # The end says where it failed: keep it when the trace is too long.
    return text if len(text) <= MAX_STACK else text[-MAX_STACK:]


# What a failed call of the worker means (clients/README.md, "Errors"):
# - "connection": the connection is gone or unusable: reconnect, retry;
# - "transient": the same call may succeed when made again (deadlock,
#   serialization failure, statement or lock timeout, resources, a server
#   shutting down or in recovery): retry, on the same connection;
# - "fatal": no retry can fix it: the worker stops (FatalError);
# - "data": a value the server refused (class 22, 54000): in a completion
#   the result of one job (that job fails, the others complete);
# - "other": anything else, retried with backoff and logged as an error
#   (the worker cannot know it is permanent; stopping would turn a passing
#   fault into an outage).
_CONNECTION = {"57P01", "57P02", "57P03"}
_TRANSIENT = {"40001", "40P01", "57014", "55P03", "55006", "25006", "58000", "58030"}
_FATAL = {
    "28000", "28P01",           # authentication
    "3D000", "57P04",           # the database does not exist, was dropped
    "3F000", "42883", "42P01",  # the extension is missing or too old
    "42501",                    # insufficient privilege
    "42704",                    # an unknown queue
    "0A000",                    # the server does not support it
}
# A connection attempt the server refused has no SQLSTATE in libpq.  What
# tells the cases apart whatever the server's language: libpq's word that
# a password was needed and none given (sqlstate_of), and a refusal that
# repeats at start-up (StartupRefusals).  With an English server its
# message says which at once:
_CONNECT_FATAL = [
    (re.compile(r"password authentication failed|authentication failed|"
                r"no password supplied|no pg_hba\.conf entry|is not permitted to log in|"
                r'role ".*" does not exist'), "28P01"),
    (re.compile(r'database ".*" does not exist'), "3D000"),
    (re.compile(r"permission denied for database"), "42501"),
]


# A refusal the server sent: libpq writes the server's severity and two
# spaces before its message ("FATAL:  ...", in the server's language);
# its own messages (refused, unreachable, timed out) never have that form.
_SERVER_REFUSAL = re.compile(r"\S:  \S")
# Refusals of the moment in PostgreSQL's English messages (a server
# starting up, shutting down or in recovery, no connection slot free):
# never taken for lasting ones.
_CONNECT_TRANSIENT = re.compile(
    r"starting up|shutting down|not yet accepting connections|in recovery mode|"
    r"too many clients|too many connections|connection slots are reserved")


def sqlstate_of(e):
    """The SQLSTATE of a psycopg error; for a refused connection attempt
    (no SQLSTATE in libpq) 28P01 when libpq says a password was needed and
    none given, or the one an English message implies; else None."""
    s = getattr(e, "sqlstate", None)
    if s:
        return s
    try:
        if e.pgconn is not None and e.pgconn.needs_password:
            return "28P01"
    except Exception:  # noqa: BLE001 -- no pgconn, or a finished one: no answer
        pass
    text = str(e)
    for pattern, state in _CONNECT_FATAL:
        if pattern.search(text):
            return state
    return None


class StartupRefusals:
    """Refusals of connection attempts before the first connection that
    worked: the same refusal of the server ``limit`` times in a row is a
    FatalError, whatever the server's language (a wrong password or an
    unknown database repeat; a server starting up or out of slots changes
    its answer, or says so in English).  Failures to reach the server
    (refused, unreachable) never count: a server coming up later is
    waited for."""

    def __init__(self, limit):
        self.limit = limit
        self.connected = False
        self._last = None
        self._count = 0

    def note(self, e, what):
        """A failed connection attempt: raises FatalError at the limit."""
        if self.connected or not self.limit:
            return
        text = str(e).strip()
        if not _SERVER_REFUSAL.search(text) or _CONNECT_TRANSIENT.search(text):
            self._last, self._count = None, 0
            return
        if text != self._last:
            self._last, self._count = text, 0
        self._count += 1
        if self._count >= self.limit:
            err = FatalError(
                f"jobqueue worker {what}: the server refused {self._count} connection attempts in a "
                f"row at start-up, each with the same message: check the user, password and "
                f"database of the connection string: {text}")
            err.__cause__ = e
            raise err


def error_kind(e, conn=None):
    """"connection", "transient", "fatal", "data" or "other" for an
    exception raised by a call of the worker on ``conn``."""
    import psycopg
    if not isinstance(e, psycopg.Error):
        return "other"
    state = sqlstate_of(e)
    if state in _FATAL:
        return "fatal"
    if isinstance(e, psycopg.InterfaceError) or conn is not None and conn.broken:
        return "connection"
    if state is None or state.startswith("08") or state in _CONNECTION:
        return "connection"
    if state.startswith("22") or state == "54000":
        return "data"
    if state.startswith("53") or state in _TRANSIENT:
        return "transient"
    return "other"


def fatal_error(e, what):
    """A FatalError with a clear message for an error that stops a worker."""
    state = sqlstate_of(e)
    if state in ("28000", "28P01"):
        why = "authentication failed: check the user and password of the connection string"
    elif state == "3D000":
        why = "the database does not exist: check the connection string"
    elif state == "57P04":
        why = "the database was dropped"
    elif state in ("3F000", "42883", "42P01"):
        why = ("the jobqueue extension is not installed in this database, or is older than "
               "this client (CREATE EXTENSION jobqueue / ALTER EXTENSION jobqueue UPDATE)")
    elif state == "42501":
        why = "the role lacks a privilege (SELECT jobqueue.jq_grant_worker(role))"
    elif state == "42704":
        why = "an unknown queue (create it with create_queue or jq_create_queue)"
    else:
        why = "an error no retry can fix"
    msg = str(e).strip()
    err = FatalError(f"jobqueue worker {what}: {why}: {msg}"
                     + (f" (SQLSTATE {state})" if state else ""), state)
    err.__cause__ = e
    return err
