"""jobqueue: Python client of the jobqueue PostgreSQL extension.

    import jobqueue
    jobqueue.Client(dsn).enqueue("emails", {"to": "bob@example.com"})
    jobqueue.Worker(dsn, "emails", handler, concurrency=4, batch_size=10).run()

Needs Python 3.9 and psycopg 3.1 (Debian: python3-psycopg).  Every call is
a jobqueue.jq_* SQL function of the extension.
"""

from ._backoff import Backoff
from ._client import (FINISHED_CHANNEL, Client, GroupLimit, GroupStats, JobInfo, ScheduleInfo,
                      connect)
from ._errors import FatalError, JobNotFound, PermanentError, RetryLater, classify, error_kind
from ._worker import CHANNEL, Job, Worker

__all__ = ["Client", "Worker", "Job", "JobInfo", "ScheduleInfo", "GroupLimit", "GroupStats", "PermanentError", "RetryLater",
           "FatalError", "JobNotFound", "connect", "classify", "error_kind", "Backoff",
           "CHANNEL", "FINISHED_CHANNEL"]
__version__ = "1.4.0"
