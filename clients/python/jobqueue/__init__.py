"""jobqueue: Python client of the jobqueue PostgreSQL extension.

    import jobqueue
    jobqueue.Client(dsn).enqueue("emails", {"to": "bob@example.com"})
    jobqueue.Worker(dsn, "emails", handler, concurrency=4, batch_size=10).run()

Needs psycopg 3 (Debian: python3-psycopg).  Every call is a
jobqueue.jq_* SQL function of the extension.
"""

from ._backoff import Backoff
from ._client import Client, connect
from ._errors import PermanentError, RetryLater, classify
from ._worker import CHANNEL, Job, Worker

__all__ = ["Client", "Worker", "Job", "PermanentError", "RetryLater", "connect",
           "classify", "Backoff", "CHANNEL"]
__version__ = "0.1.0"
