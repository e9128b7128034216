"""What a handler raises, and how a failure is reported to jq_fail."""

import datetime


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


def _seconds_interval(value):
    if value is None or isinstance(value, datetime.timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return datetime.timedelta(seconds=value)
    return None


def classify(exc):
    """(error_code, error_message, retryable, retry_in) for jq_fail.

    PermanentError (and subclasses) are not retryable; anything else is.
    An exception's ``code`` attribute (when it is a non-empty string) is the
    error code, else its class name; a ``retry_in`` attribute (seconds or a
    timedelta) replaces the backoff delay of a retryable failure.
    """
    code = getattr(exc, "code", None)
    if not isinstance(code, str) or not code:
        code = type(exc).__name__
    code = code.encode("utf-8")[:128].decode("utf-8", "ignore") or "ERROR"
    message = str(exc) or repr(exc)
    retryable = not isinstance(exc, PermanentError)
    retry_in = _seconds_interval(getattr(exc, "retry_in", None)) if retryable else None
    return code, message, retryable, retry_in
