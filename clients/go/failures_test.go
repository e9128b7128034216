package jobqueue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgconn"
)

// withParam adds a connection parameter to a URL DSN.
func withParam(dsn, param string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + param
	}
	return dsn + "?" + param
}

// syncBuffer is a log destination the test can read while the worker
// writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A result jsonb refuses ("\u0000": 22P05) in a batch of 20: that job is
// dead with RESULT_INVALID and the server's message, the other 19
// complete once, and the worker keeps running.
func TestPoisonResultFailsOnlyItsJob(t *testing.T) {
	dsn := testDSN(t)
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{LeaseDuration: Duration(30 * time.Second)})
	var payloads []interface{}
	for i := 0; i < 20; i++ {
		payloads = append(payloads, map[string]bool{"poison": i == 12})
	}
	ids, err := c.EnqueueMany(context.Background(), q, payloads, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs := map[int64]int{}
	w, _ := NewWorker(dsn, WorkerOptions{Queue: q, Concurrency: 4, BatchSize: 20, PollInterval: 200 * time.Millisecond,
		FlushInterval: time.Minute, Logger: quietLogger(), // the 20 results go in one call
		Handler: func(ctx context.Context, j *Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			var p struct{ Poison, After bool }
			_ = json.Unmarshal(j.Payload, &p)
			if p.Poison {
				return j.SetResult(map[string]string{"text": "nul\x00byte"})
			}
			return j.SetResult(map[string]bool{"ok": true})
		}})
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	waitFor(t, "the batch", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 19, "dead": 1}))
	var got string
	q1(t, db, &got, "SELECT concat_ws(',', status, attempt_count, last_error_code, errors -> -1 ->> 'retryable', "+
		"errors -> -1 ->> 'message' LIKE '%unsupported Unicode escape sequence%') FROM jobqueue.jobs WHERE id = $1", ids[12])
	if got != "dead,1,RESULT_INVALID,false,t" {
		t.Fatalf("the poisoned job: %s", got)
	}
	var okResults int
	q1(t, db, &okResults, `SELECT count(*)::int FROM jobqueue.jobs WHERE queue_name = $1 AND result = '{"ok": true}' AND attempt_count = 1`, q)
	if okResults != 19 {
		t.Fatalf("%d good results stored", okResults)
	}
	// Still running: a later job is done too.
	after, _ := c.Enqueue(context.Background(), q, map[string]bool{"after": true}, nil)
	waitFor(t, "a job after the poison", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 20, "dead": 1}))
	select {
	case err := <-done:
		t.Fatalf("the worker stopped: %v", err)
	default:
	}
	w.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range append(ids, after) {
		if runs[id] != 1 {
			t.Fatalf("job %d ran %d times", id, runs[id])
		}
	}
	if s := w.Stats(); s.Completed != 20 || s.Failed != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// blockedWorker: a worker on a new queue whose one job's handler waits for
// release; its connections carry application_name app.
func blockedWorker(t *testing.T, dsn, options string) (w *Worker, id int64, app string, release func(), done chan error) {
	c := newClient(t, testDSN(t))
	q := makeQueue(t, c, QueuePolicy{LeaseDuration: Duration(time.Minute)})
	id, err := c.Enqueue(context.Background(), q, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	app = "jqtest-" + q
	started := make(chan struct{})
	gate := make(chan struct{})
	wdsn := withParam(dsn, "application_name="+app)
	if options != "" {
		wdsn = withParam(wdsn, "options="+url.QueryEscape(options))
	}
	w, _ = NewWorker(wdsn, WorkerOptions{Queue: q, Concurrency: 1, BatchSize: 1, PollInterval: 200 * time.Millisecond,
		ReconnectBase: 20 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, NoListen: true, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error { close(started); <-gate; return nil }})
	done = make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the job did not start")
	}
	return w, id, app, func() { close(gate) }, done
}

func stopWorker(t *testing.T, w *Worker, done chan error) {
	w.Stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// A real serialization failure (40001) of the completion: the worker's
// session is SERIALIZABLE and another transaction updates the job's row
// and commits while the completion waits for it.  The completion is sent
// again and succeeds.
func TestSerializationFailureRetried(t *testing.T) {
	dsn := testDSN(t)
	db := testDB(t)
	ctx := context.Background()
	w, id, app, release, done := blockedWorker(t, dsn, "-c default_transaction_isolation=serializable")
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "UPDATE jobqueue.jobs SET priority = priority WHERE id = $1", id); err != nil {
		t.Fatal(err)
	}
	release()
	waitFor(t, "the completion to wait for the row", time.Minute, func() bool {
		var n int
		q1(t, db, &n, "SELECT count(*)::int FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'", app)
		return n == 1
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job to succeed", time.Minute, func() bool {
		var s string
		q1(t, db, &s, "SELECT status::text FROM jobqueue.jobs WHERE id = $1", id)
		return s == "succeeded"
	})
	stopWorker(t, w, done)
	if s := w.Stats(); s.Retried < 1 || s.Completed != 1 || s.Fenced != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A real deadlock (40P01) in the worker's batch call: the completion of
// two jobs updates their rows, and a test trigger on jobqueue.jobs then
// waits until another transaction, which holds an advisory lock, waits
// for those rows, and takes that advisory lock itself: a cycle, which the
// worker's session (the second to wait, with a short deadlock_timeout)
// detects, and the server rolls its call back.  The call is sent again
// (the advisory lock is free by then), and both jobs succeed once.
func TestDeadlockInBatchRetried(t *testing.T) {
	dsn := testDSN(t)
	db := testDB(t)
	ctx := context.Background()
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{LeaseDuration: Duration(time.Minute)})
	var ids []int64
	for i := 0; i < 2; i++ {
		id, err := c.Enqueue(ctx, q, i, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var key int64
	q1(t, db, &key, "SELECT hashtext($1)::bigint", q)
	app := "jqtest-" + q
	other := "jqtest-other-" + q
	fn := `"jq_test_deadlock_` + q + `"`
	if _, err := db.Exec(ctx, `CREATE FUNCTION public.`+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			LOOP
				IF pg_catalog.pg_try_advisory_xact_lock(`+strconv.FormatInt(key, 10)+`) THEN
					RETURN NULL; -- the other transaction is over
				END IF;
				IF EXISTS (SELECT FROM pg_catalog.pg_stat_activity
						   WHERE application_name = '`+other+`' AND wait_event_type = 'Lock') THEN
					PERFORM pg_catalog.pg_advisory_xact_lock(`+strconv.FormatInt(key, 10)+`); -- the cycle
					RETURN NULL;
				END IF;
				PERFORM pg_catalog.pg_sleep(0.01);
			END LOOP;
		END $$`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec(context.Background(), `DROP FUNCTION public.`+fn+`() CASCADE`) })
	if _, err := db.Exec(ctx, `CREATE TRIGGER `+fn+` AFTER UPDATE ON jobqueue.jobs FOR EACH ROW `+
		`WHEN (NEW.queue_name = '`+q+`' AND NEW.status = 'succeeded') EXECUTE FUNCTION public.`+fn+`()`); err != nil {
		t.Fatal(err)
	}

	var started sync.WaitGroup
	started.Add(2)
	gate := make(chan struct{})
	logs := &syncBuffer{}
	wdsn := withParam(withParam(dsn, "application_name="+app), "options="+url.QueryEscape("-c deadlock_timeout=100"))
	var mu sync.Mutex
	runs := map[int64]int{}
	w, err := NewWorker(wdsn, WorkerOptions{Queue: q, Concurrency: 2, BatchSize: 2, PollInterval: 200 * time.Millisecond,
		NoListen: true, Logger: log.New(logs, "", 0),
		Handler: func(ctx context.Context, j *Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			started.Done()
			<-gate
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	started.Wait()

	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SET LOCAL deadlock_timeout = '10min'; SET LOCAL application_name = '"+other+"'"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_catalog.pg_advisory_xact_lock($1)", key); err != nil {
		t.Fatal(err)
	}
	close(gate)
	waitFor(t, "the batch call to reach the trigger", time.Minute, func() bool {
		var n int
		q1(t, db, &n, "SELECT count(*)::int FROM pg_stat_activity WHERE application_name = $1 AND wait_event = 'PgSleep'", app)
		return n == 1
	})
	// wait for the rows the call updated: the trigger then closes the cycle
	if _, err := tx.Exec(ctx, "SELECT FROM jobqueue.jobs WHERE id = ANY ($1) FOR UPDATE", ids); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both jobs to succeed", time.Minute, func() bool {
		var n int
		q1(t, db, &n, "SELECT count(*)::int FROM jobqueue.jobs WHERE queue_name = $1 AND status = 'succeeded'", q)
		return n == 2
	})
	stopWorker(t, w, done)
	if !strings.Contains(logs.String(), "deadlock detected") || !strings.Contains(logs.String(), "40P01") {
		t.Fatalf("no deadlock in the worker's log:\n%s", logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Fatalf("job %d ran %d times", id, runs[id])
		}
	}
	if s := w.Stats(); s.Retried < 1 || s.Completed != 2 || s.Fenced != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// A real lock timeout (55P03, the session's lock_timeout) while another
// transaction holds the job's row: the completion is sent again until the
// row is free.
func TestLockTimeoutRetried(t *testing.T) {
	dsn := testDSN(t)
	db := testDB(t)
	ctx := context.Background()
	w, id, _, release, done := blockedWorker(t, dsn, "-c lock_timeout=50")
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT FROM jobqueue.jobs WHERE id = $1 FOR UPDATE", id); err != nil {
		t.Fatal(err)
	}
	release()
	waitFor(t, "two lock timeouts", time.Minute, func() bool { return w.Stats().Retried >= 2 })
	_ = tx.Rollback(ctx)
	waitFor(t, "the job to succeed", time.Minute, func() bool {
		var s string
		q1(t, db, &s, "SELECT status::text FROM jobqueue.jobs WHERE id = $1", id)
		return s == "succeeded"
	})
	stopWorker(t, w, done)
	if s := w.Stats(); s.Completed != 1 || s.Fenced != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// Errors no retry fixes stop the worker at start, with what to check, and
// no reconnection: a wrong password (28P01, also on the listener's DSN),
// an unknown role (28000), an unknown database (3D000), a database
// without the extension (3F000), an unknown queue (42704).
func TestFatalErrorsStopAtStart(t *testing.T) {
	dsn := testDSN(t)
	badPw, noDB, noExt := os.Getenv("JQ_TEST_BADPW_DSN"), os.Getenv("JQ_TEST_NODB_DSN"), os.Getenv("JQ_TEST_NOEXT_DSN")
	if badPw == "" || noDB == "" || noExt == "" {
		t.Skip("JQ_TEST_BADPW_DSN, JQ_TEST_NODB_DSN, JQ_TEST_NOEXT_DSN are not set (scripts/test_clients.sh sets them)")
	}
	u, _ := url.Parse(dsn)
	unknownRole := *u
	unknownRole.User = url.User("no_such_role_jq")
	queue := makeQueue(t, newClient(t, dsn), QueuePolicy{})
	for _, c := range []struct {
		name, dsn, listen, queue, code, hint string
	}{
		{"wrong password", badPw, "", queue, "28P01", "authentication failed"},
		{"wrong password of the listener", dsn, badPw, queue, "28P01", "authentication failed"},
		{"unknown role", unknownRole.String(), "", queue, "28000", "authentication failed"},
		{"unknown database", noDB, "", queue, "3D000", "the database does not exist"},
		{"no extension", noExt, "", queue, "3F000", "the jobqueue extension is missing"},
		{"unknown queue", dsn, "", "no-such-queue-jq", "42704", "unknown queue among no-such-queue-jq"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logs := &syncBuffer{}
			w, _ := NewWorker(c.dsn, WorkerOptions{Queue: c.queue, ListenDSN: c.listen, PollInterval: 200 * time.Millisecond,
				ReconnectBase: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond, Logger: log.New(logs, "", 0),
				Handler: func(ctx context.Context, j *Job) error { return nil }})
			done := make(chan error, 1)
			go func() { done <- w.Run(context.Background()) }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				w.Stop()
				t.Fatalf("Run did not stop; log:\n%s", logs.String())
			}
			var fe *FatalError
			var pgErr *pgconn.PgError
			if !errors.As(err, &fe) || !errors.As(err, &pgErr) || pgErr.Code != c.code || !strings.Contains(err.Error(), c.hint) {
				t.Fatalf("got %v", err)
			}
			if l := logs.String(); strings.Contains(l, "reconnecting") || !strings.Contains(l, "ERROR: jobqueue: worker stopped: "+c.hint) {
				t.Fatalf("log:\n%s", l)
			}
		})
	}
}
