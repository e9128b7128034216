"""Against the real server: what a worker does with each class of error
(clients/README.md, "Errors").  One job's bad data fails that job only;
transient errors retry the batch; errors no retry fixes stop the worker
at start with a clear message."""

import logging
import os
import re
import socket
import threading
import urllib.parse

import psycopg
import pytest

import jobqueue
import jobqueue._errors
from conftest import q1, wait_for


def status_counts(db, queue):
    return dict(db.execute("SELECT status::text, count(*) FROM jobqueue.jobs "
                           "WHERE queue_name = %s GROUP BY 1", (queue,)).fetchall())


def start(worker):
    t = threading.Thread(target=worker.run, daemon=True)
    t.start()
    wait_for(worker.running.is_set, what="the worker to start")
    return t


def test_poison_results_fail_their_jobs_only(dsn, db, make_queue):
    """A batch of 20 where one result is NaN (json.dumps writes it, jsonb
    refuses it: 22P02) and one holds "\\u0000" (22P05): those two jobs are
    dead with the server's error, the 18 others complete, and the worker
    goes on working."""
    q = make_queue(lease_duration=30)
    ids = jobqueue.Client(dsn).enqueue_many(q, [{"n": i} for i in range(20)])
    nan_id, nul_id = ids[3], ids[11]

    def handler(job):
        if job.id == nan_id:
            return {"x": float("nan")}
        if job.id == nul_id:
            return {"x": "a\u0000b"}
        return {"n": job.payload["n"]}

    # batch 20 and concurrency 20: the results go together.
    w = jobqueue.Worker(dsn, q, handler, concurrency=20, batch_size=20, poll_interval=0.2,
                        flush_interval=0.5)
    t = start(w)
    try:
        wait_for(lambda: status_counts(db, q) == {"succeeded": 18, "dead": 2},
                 what="18 jobs to succeed and 2 to be dead")
        rows = db.execute("SELECT id, last_error_code, errors->-1->>'message', attempt_count "
                          "FROM jobqueue.jobs WHERE queue_name = %s AND status = 'dead' "
                          "ORDER BY id", (q,)).fetchall()
        assert [(r[0], r[1], r[3]) for r in rows] == [(nan_id, "RESULT_INVALID", 1),
                                                      (nul_id, "RESULT_INVALID", 1)]
        assert "22P02" in rows[0][2] and "NaN" in rows[0][2]
        assert "22P05" in rows[1][2]
        # Every job ran once: the good results were not thrown away.
        assert q1(db, "SELECT max(attempt_count) FROM jobqueue.jobs WHERE queue_name = %s",
                  (q,)) == 1
        assert db.execute("SELECT result->>'n' FROM jobqueue.jobs WHERE queue_name = %s "
                          "AND status = 'succeeded' ORDER BY id", (q,)).fetchall() == [
            (str(i),) for i in range(20) if i not in (3, 11)]
        # The worker keeps running.
        assert t.is_alive()
        later = jobqueue.Client(dsn).enqueue(q, {"n": 99})
        wait_for(lambda: q1(db, "SELECT status::text FROM jobqueue.jobs WHERE id = %s",
                            (later,)) == "succeeded", what="a later job to succeed")
    finally:
        w.stop()
        t.join(30)
    assert w.stats["completed"] == 19 and w.stats["failed"] == 2


@pytest.mark.parametrize("sqlstate", ["40P01", "40001", "57014", "55P03"])
def test_transient_error_retries_the_batch(dsn, db, make_queue, sqlstate):
    """The server fails the worker's completion call once with a transient
    SQLSTATE (raised by a trigger on jobqueue.jobs, in the worker's own
    call: a real error of the server): the batch is sent again, every job
    succeeds at its first attempt, the worker keeps running."""
    q = make_queue(lease_duration=30)
    tag = sqlstate.lower()
    # Once: a sequence's nextval is not undone by the error's rollback.
    db.execute(f"CREATE SEQUENCE fail_once_{tag}")
    db.execute(f"""
        CREATE FUNCTION fail_once_{tag}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.queue_name = '{q}' AND NEW.status = 'succeeded'
               AND pg_catalog.nextval('public.fail_once_{tag}') = 1 THEN
                RAISE EXCEPTION 'forced by the test' USING ERRCODE = '{sqlstate}';
            END IF;
            RETURN NEW;
        END $$""")
    db.execute(f"CREATE TRIGGER fail_once_{tag} BEFORE UPDATE ON jobqueue.jobs "
               f"FOR EACH ROW EXECUTE FUNCTION fail_once_{tag}()")
    try:
        ids = jobqueue.Client(dsn).enqueue_many(q, [{"n": i} for i in range(20)])
        seen = []

        class Watching(jobqueue.Worker):
            def _complete_and_claim(self, results, n, queue):
                try:
                    return super()._complete_and_claim(results, n, queue)
                except psycopg.Error as e:
                    seen.append(e.sqlstate)
                    raise

            def _complete_many(self, results):
                try:
                    return super()._complete_many(results)
                except psycopg.Error as e:
                    seen.append(e.sqlstate)
                    raise

        w = Watching(dsn, q, lambda job: None, concurrency=20, batch_size=20,
                     poll_interval=0.2, flush_interval=0.5)
        t = start(w)
        try:
            wait_for(lambda: status_counts(db, q) == {"succeeded": 20},
                     what="every job to succeed")
            assert t.is_alive()
        finally:
            w.stop()
            t.join(30)
        assert seen == [sqlstate]
        assert w.stats["retried"] == 1
        assert q1(db, "SELECT max(attempt_count) FROM jobqueue.jobs WHERE id = ANY(%s)",
                  (ids,)) == 1
    finally:
        db.execute(f"DROP TRIGGER fail_once_{tag} ON jobqueue.jobs")
        db.execute(f"DROP FUNCTION fail_once_{tag}()")
        db.execute(f"DROP SEQUENCE fail_once_{tag}")


def _stops_at_start(dsn_, sqlstate, pattern, **kwargs):
    w = jobqueue.Worker(dsn_, kwargs.pop("queue", "q"), lambda job: None, poll_interval=0.2,
                        handle_signals=False, **kwargs)
    with pytest.raises(jobqueue.FatalError, match=pattern) as info:
        w.run()
    assert info.value.sqlstate == sqlstate
    return info.value


def test_wrong_password_stops_the_worker():
    d = os.environ.get("JQ_TEST_BADPW_DSN")
    if not d:
        pytest.skip("JQ_TEST_BADPW_DSN is set by scripts/test_clients.sh")
    _stops_at_start(d, "28P01", "authentication failed: check the user and password")


def test_wrong_password_of_the_listener_stops_the_worker(dsn, make_queue):
    d = os.environ.get("JQ_TEST_BADPW_DSN")
    if not d:
        pytest.skip("JQ_TEST_BADPW_DSN is set by scripts/test_clients.sh")
    _stops_at_start(dsn, "28P01", "listener stopped: authentication failed",
                    queue=make_queue(), listen_dsn=d)


def test_unknown_database_stops_the_worker():
    d = os.environ.get("JQ_TEST_NODB_DSN")
    if not d:
        pytest.skip("JQ_TEST_NODB_DSN is set by scripts/test_clients.sh")
    _stops_at_start(d, "3D000", "the database does not exist.*jq_no_such_database")


def test_missing_extension_stops_the_worker():
    d = os.environ.get("JQ_TEST_NOEXT_DSN")
    if not d:
        pytest.skip("JQ_TEST_NOEXT_DSN is set by scripts/test_clients.sh")
    _stops_at_start(d, "42704", 'extension "jobqueue" is not installed in database "jqnoext"')


def test_unknown_queue_stops_the_worker(dsn):
    _stops_at_start(dsn, "42704", "an unknown queue", queue="no-such-queue-xyz")


def test_handler_failure_logged_with_stack_and_kept_in_history(dsn, db, make_queue, caplog):
    """A failing handler: WARNING on logger "jobqueue" with the traceback
    (the default configuration), and the trace in the job's error history
    ("stack"); the code is the exception's class name."""
    q = make_queue(max_attempts=1)
    job_id = jobqueue.Client(dsn).enqueue(q, {"user": 7})

    def lookup_user(payload):
        return {}[payload["user"]]

    def handler(job):
        lookup_user(job.payload)

    w = jobqueue.Worker(dsn, q, handler, poll_interval=0.2)
    with caplog.at_level(logging.WARNING, logger="jobqueue"):
        t = start(w)
        try:
            wait_for(lambda: q1(db, "SELECT status::text FROM jobqueue.jobs WHERE id = %s",
                                (job_id,)) == "dead", what="the job to be dead")
        finally:
            w.stop()
            t.join(30)
    rec = [r for r in caplog.records if r.levelno == logging.WARNING and f"job {job_id}" in
           r.getMessage()]
    assert rec and rec[0].exc_info is not None
    text = caplog.text
    assert "Traceback (most recent call last)" in text and "in lookup_user" in text
    code, entry = db.execute("SELECT last_error_code, errors->-1 FROM jobqueue.jobs "
                             "WHERE id = %s", (job_id,)).fetchone()
    assert code == "KeyError"
    assert "in lookup_user" in entry["stack"] and "KeyError: 7" in entry["stack"]


# A localised server: the refusal of a connection attempt has no SQLSTATE
# in libpq and its message is not in English.  The English patterns are
# switched off, so only what does not depend on the language is left.
@pytest.fixture()
def no_english(monkeypatch):
    monkeypatch.setattr(jobqueue._errors, "_CONNECT_FATAL", [])
    monkeypatch.setattr(jobqueue._errors, "_CONNECT_TRANSIENT", re.compile(r"(?!)"))


def test_refusal_in_any_language_stops_the_worker_after_repeats(no_english, caplog):
    d = os.environ.get("JQ_TEST_BADPW_DSN")
    if not d:
        pytest.skip("JQ_TEST_BADPW_DSN is set by scripts/test_clients.sh")
    caplog.set_level(logging.WARNING, logger="jobqueue")
    err = _stops_at_start(d, None, "refused 3 connection attempts in a row at start-up",
                          max_refusals_at_start=3, reconnect_base=0.01, reconnect_max=0.02)
    assert isinstance(err.__cause__, psycopg.OperationalError)
    assert sum(r.getMessage().startswith("connection lost") for r in caplog.records) == 2


def test_unknown_database_in_any_language_stops_the_worker(no_english):
    d = os.environ.get("JQ_TEST_NODB_DSN")
    if not d:
        pytest.skip("JQ_TEST_NODB_DSN is set by scripts/test_clients.sh")
    _stops_at_start(d, None, "refused 2 connection attempts.*jq_no_such_database",
                    max_refusals_at_start=2, reconnect_base=0.01, reconnect_max=0.02)


def test_missing_password_stops_the_worker_at_once(no_english):
    # libpq says a password was needed and none given: no message needed
    d = os.environ.get("JQ_TEST_BADPW_DSN")
    if not d:
        pytest.skip("JQ_TEST_BADPW_DSN is set by scripts/test_clients.sh")
    u = urllib.parse.urlsplit(d)
    nopw = u._replace(netloc=f"{u.username}@{u.hostname}:{u.port}").geturl()
    _stops_at_start(nopw + "?passfile=/nonexistent", "28P01", "authentication failed",
                    max_refusals_at_start=0)


def test_server_out_of_reach_is_waited_for(no_english, caplog):
    # nothing listens on the port: never a FatalError, however often
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    caplog.set_level(logging.WARNING, logger="jobqueue")
    w = jobqueue.Worker(f"postgresql://postgres@127.0.0.1:{port}/x", "q", lambda job: None,
                        handle_signals=False, max_refusals_at_start=2, reconnect_base=0.01,
                        reconnect_max=0.02, listen=False)
    t = threading.Thread(target=w.run, daemon=True)
    t.start()
    wait_for(lambda: sum(r.getMessage().startswith("connection lost") for r in caplog.records) >= 5,
             what="five failed attempts")
    assert t.is_alive()
    w.stop()
    t.join(30)
    assert not t.is_alive()


def test_startup_refusals_unit():
    # the rule itself, on messages as libpq writes them (German server)
    class E(Exception):
        pgconn = None
    r = jobqueue._errors.StartupRefusals(3)
    de = E('connection failed: connection to server at "db" (10.0.0.1), port 5432 failed: '
           'FATAL:  Passwort-Authentifizierung für Benutzer »app« fehlgeschlagen')
    r.note(de, "stopped")
    r.note(de, "stopped")
    other = E('connection failed: connection to server at "db" (10.0.0.1), port 5432 failed: '
              'FATAL:  Datenbank »app« existiert nicht')
    r.note(other, "stopped")          # another answer: counting starts again
    r.note(other, "stopped")
    unreachable = E('connection failed: connection to server at "db" (10.0.0.1), port 5432 failed: '
                    'Verbindung verweigert')
    r.note(unreachable, "stopped")    # not the server's answer: counting starts again
    for _ in range(2):
        r.note(de, "stopped")
    with pytest.raises(jobqueue.FatalError, match="refused 3 connection attempts"):
        r.note(de, "stopped")
    r = jobqueue._errors.StartupRefusals(3)
    r.connected = True                # after a connection worked: never
    for _ in range(5):
        r.note(de, "stopped")
