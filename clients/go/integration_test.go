package jobqueue

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

func TestEnqueueInCallersTransaction(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{})
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, _ := conn.Begin(ctx)
	if _, err := c.Enqueue(ctx, q, map[string]int{"order": 42}, &EnqueueOptions{Tx: tx}); err != nil {
		t.Fatal(err)
	}
	if ids, err := c.EnqueueMany(ctx, q, []interface{}{1, 2}, &EnqueueOptions{Tx: tx}); err != nil || len(ids) != 2 {
		t.Fatal(ids, err)
	}
	_ = tx.Rollback(ctx)
	if n := statusCounts(t, db, q); len(n) != 0 {
		t.Fatalf("rolled back, but jobs: %v", n)
	}
	tx, _ = conn.Begin(ctx)
	id, err := c.Enqueue(ctx, q, map[string]int{"order": 43}, &EnqueueOptions{Tx: tx})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var got int64
	q1(t, db, &got, "SELECT id FROM jobqueue.jobs WHERE queue_name = $1", q)
	if got != id {
		t.Fatalf("got %d, want %d", got, id)
	}
}

func TestEnqueueOptions(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{})
	a, err := c.Enqueue(ctx, q, map[string]int{"a": 1}, &EnqueueOptions{Priority: 7, RunAt: time.Now().Add(time.Hour),
		MaxAttempts: 2, IdempotencyKey: "key-1"})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Enqueue(ctx, q, map[string]int{"a": 2}, &EnqueueOptions{IdempotencyKey: "key-1"}); b != a {
		t.Fatalf("idempotency key: %d != %d", b, a)
	}
	ids, err := c.EnqueueMany(ctx, q, []interface{}{map[string]int{"i": 0}, map[string]int{"i": 1}, json.RawMessage(`{"i": 2}`)},
		&EnqueueOptions{Priority: 3})
	if err != nil || len(ids) != 3 || !sort.SliceIsSorted(ids, func(i, j int) bool { return ids[i] < ids[j] }) {
		t.Fatal(ids, err)
	}
	var row string
	q1(t, db, &row, "SELECT concat_ws(',', priority, max_attempts, idempotency_key, payload, "+
		"available_at > now() + interval '3500 s') FROM jobqueue.jobs WHERE id = $1", a)
	if row != `7,2,key-1,{"a": 1},t` {
		t.Fatalf("got %s", row)
	}
	q1(t, db, &row, "SELECT string_agg(payload->>'i' || ':' || priority, ',' ORDER BY id) FROM jobqueue.jobs WHERE id = ANY($1)", ids)
	if row != "0:3,1:3,2:3" {
		t.Fatalf("got %s", row)
	}
	_, err = c.Enqueue(ctx, "no-such-queue-xyz", 1, nil)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42704" {
		t.Fatalf("got %v", err)
	}
}

func TestWorkerDrains2000Jobs(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{MaxAttempts: Int(5), LeaseDuration: Duration(2 * time.Second)})
	type payload struct {
		N    int    `json:"n"`
		Kind string `json:"kind"`
	}
	var payloads []interface{}
	for i := 0; i < 2000; i++ {
		k := "ok"
		switch {
		case i%100 == 50:
			k = "flaky"
		case i == 7:
			k = "permanent"
		case i == 11:
			k = "long"
		case i == 13:
			k = "lost"
		}
		payloads = append(payloads, payload{i, k})
	}
	ids, err := c.EnqueueMany(ctx, q, payloads, nil)
	if err != nil {
		t.Fatal(err)
	}
	kind := map[int64]string{}
	of := map[string][]int64{}
	for i, id := range ids {
		k := payloads[i].(payload).Kind
		kind[id] = k
		of[k] = append(of[k], id)
	}
	lost := of["lost"][0]
	var mu sync.Mutex
	successes := map[int64]int{}
	started := map[int64]bool{}
	told := map[int64]string{}
	handler := func(ctx context.Context, job *Job) error {
		var p payload
		_ = json.Unmarshal(job.Payload, &p)
		mu.Lock()
		started[job.ID] = true
		mu.Unlock()
		switch {
		case p.Kind == "flaky" && job.Attempt == 1:
			return errors.New("first attempt fails")
		case p.Kind == "permanent":
			return Permanent(WithCode(errors.New("cannot be done"), "BAD_PAYLOAD"))
		case p.Kind == "long":
			time.Sleep(3500 * time.Millisecond) // past the 2 s lease: heartbeats keep it
		case p.Kind == "lost":
			select {
			case <-ctx.Done():
				mu.Lock()
				told[job.ID] = job.CancelReason()
				mu.Unlock()
			case <-time.After(30 * time.Second):
			}
			return nil
		}
		mu.Lock()
		successes[job.ID]++
		mu.Unlock()
		return nil
	}
	w, _ := NewWorker(dsn, WorkerOptions{Queue: q, Handler: handler, Concurrency: 4, BatchSize: 10,
		PollInterval: 500 * time.Millisecond, Logger: quietLogger()})
	stop := runWorker(t, w)
	locked := func(f func() bool) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return f() }
	}
	waitFor(t, "the lost job to start", time.Minute, locked(func() bool { return started[lost] }))
	var ok bool
	q1(t, db, &ok, "SELECT jobqueue.jq_cancel($1)", lost)
	waitFor(t, "the lost job's handler to be told", time.Minute, locked(func() bool { return told[lost] != "" }))
	waitFor(t, "every job to be finished", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 1998, "dead": 1, "cancelled": 1}))
	stop()
	if told[lost] != "lease lost" {
		t.Fatalf("told %q", told[lost])
	}
	for _, id := range ids {
		if k := kind[id]; k != "permanent" && k != "lost" && successes[id] != 1 {
			t.Fatalf("job %d (%s) succeeded %d times", id, k, successes[id])
		}
	}
	check := func(id int64, want string) {
		t.Helper()
		var got string
		q1(t, db, &got, "SELECT concat_ws(',', status, attempt_count, last_error_code, errors -> -1 ->> 'retryable') FROM jobqueue.jobs WHERE id = $1", id)
		if got != want {
			t.Fatalf("job %d: got %s, want %s", id, got, want)
		}
	}
	for _, id := range of["flaky"] {
		check(id, "succeeded,2,errorString,true")
	}
	check(of["permanent"][0], "dead,1,BAD_PAYLOAD,false")
	check(of["long"][0], "succeeded,1") // never reaped: no error at all
	check(lost, "cancelled,1")
	s := w.Stats()
	if s.Completed != 1998 || s.Failed != 21 || s.Lost != 1 || s.Fenced != 1 || s.Claimed != 2020 || s.Heartbeats < 1 {
		t.Fatalf("stats %+v", s)
	}
}

// A handler's SetResult is the job's result; completions go with the next
// claim in one jq_complete_and_claim while there is more to claim.
func TestResultsAndCompleteAndClaim(t *testing.T) {
	dsn := testDSN(t)
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{})
	var payloads []interface{}
	for i := 0; i < 300; i++ {
		payloads = append(payloads, map[string]int{"n": i})
	}
	if _, err := c.EnqueueMany(context.Background(), q, payloads, nil); err != nil {
		t.Fatal(err)
	}
	w, _ := NewWorker(dsn, WorkerOptions{Queue: q, Concurrency: 4, BatchSize: 20, PollInterval: 200 * time.Millisecond, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error {
			var p struct{ N int }
			if err := json.Unmarshal(j.Payload, &p); err != nil {
				return err
			}
			if p.N%3 == 0 {
				return nil
			}
			return j.SetResult(map[string]int{"double": 2 * p.N})
		}})
	stop := runWorker(t, w)
	waitFor(t, "300 jobs", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 300}))
	stop()
	if s := w.Stats(); s.Completed != 300 || s.Fenced != 0 {
		t.Fatalf("stats %+v", s)
	}
	if w.combined == 0 || w.combinedJobs < 200 {
		t.Fatalf("%d jq_complete_and_claim calls completed %d jobs; want most of 300", w.combined, w.combinedJobs)
	}
	rows, err := db.Query(context.Background(), "SELECT (payload->>'n')::int, result::text FROM jobqueue.jobs WHERE queue_name = $1", q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var k int
		var res *string
		if err := rows.Scan(&k, &res); err != nil {
			t.Fatal(err)
		}
		n++
		want := fmt.Sprintf(`{"double": %d}`, 2*k)
		if (k%3 == 0) != (res == nil) || (res != nil && *res != want) {
			t.Fatalf("job n=%d: result %v", k, res)
		}
	}
	if n != 300 {
		t.Fatalf("%d rows", n)
	}
}

// A result over jobqueue.max_result_size: that job is dead
// (RESULT_TOO_LARGE), the others of the same batch complete.
func TestResultTooLargeFailsOnlyItsJob(t *testing.T) {
	dsn := testDSN(t)
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{})
	var payloads []interface{}
	for i := 0; i < 10; i++ {
		payloads = append(payloads, map[string]bool{"big": i == 3})
	}
	ids, err := c.EnqueueMany(context.Background(), q, payloads, nil)
	if err != nil {
		t.Fatal(err)
	}
	wdsn := dsn + "?options=-c%20jobqueue.max_result_size%3D1000"
	if strings.Contains(dsn, "?") {
		wdsn = dsn + "&options=-c%20jobqueue.max_result_size%3D1000"
	}
	w, _ := NewWorker(wdsn, WorkerOptions{Queue: q, Concurrency: 2, BatchSize: 10, PollInterval: 200 * time.Millisecond, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error {
			var p struct{ Big bool }
			_ = json.Unmarshal(j.Payload, &p)
			if p.Big {
				return j.SetResult(map[string]string{"blob": strings.Repeat("x", 5000)})
			}
			return j.SetResult(map[string]bool{"ok": true})
		}})
	stop := runWorker(t, w)
	waitFor(t, "the batch", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 9, "dead": 1}))
	stop()
	var got string
	q1(t, db, &got, "SELECT status || ':' || last_error_code FROM jobqueue.jobs WHERE id = $1", ids[3])
	if got != "dead:RESULT_TOO_LARGE" {
		t.Fatalf("the job with the large result: %s", got)
	}
	var okCount int
	q1(t, db, &okCount, `SELECT count(*) FROM jobqueue.jobs WHERE queue_name = $1 AND status = 'succeeded' AND result = '{"ok": true}'`, q)
	if s := w.Stats(); okCount != 9 || s.Completed != 9 || s.Failed != 1 {
		t.Fatalf("%d results stored; stats %+v", okCount, s)
	}
}

func TestRetryInSetsTheDelay(t *testing.T) {
	dsn := testDSN(t)
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{})
	id, _ := c.Enqueue(context.Background(), q, 1, nil)
	w, _ := NewWorker(dsn, WorkerOptions{Queue: q, Concurrency: 1, BatchSize: 1, PollInterval: 200 * time.Millisecond, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error {
			return RetryIn(WithCode(errors.New("rate limited"), "HTTP_429"), 120*time.Second)
		}})
	stop := runWorker(t, w)
	waitFor(t, "the failure", time.Minute, func() bool {
		var code *string
		q1(t, db, &code, "SELECT last_error_code FROM jobqueue.jobs WHERE id = $1", id)
		return code != nil && *code == "HTTP_429"
	})
	stop()
	var got string
	q1(t, db, &got, "SELECT status || ':' || (available_at > now() + interval '100 s') FROM jobqueue.jobs WHERE id = $1", id)
	if got != "pending:true" {
		t.Fatalf("got %s", got)
	}
}

func TestWorkerReconnects(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{})
	batch := func(from int) []interface{} {
		var p []interface{}
		for i := from; i < from+50; i++ {
			p = append(p, i)
		}
		return p
	}
	if _, err := c.EnqueueMany(ctx, q, batch(0), nil); err != nil {
		t.Fatal(err)
	}
	app := "jqtest-" + q
	wdsn := dsn + "?application_name=" + app
	if strings.Contains(dsn, "?") {
		wdsn = dsn + "&application_name=" + app
	}
	var mu sync.Mutex
	seen := map[int64]bool{}
	w, _ := NewWorker(wdsn, WorkerOptions{Queue: q, Concurrency: 2, BatchSize: 5, PollInterval: 200 * time.Millisecond,
		ReconnectBase: 50 * time.Millisecond, ReconnectMax: 200 * time.Millisecond, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error { mu.Lock(); seen[j.ID] = true; mu.Unlock(); return nil }})
	stop := runWorker(t, w)
	defer stop()
	conns := func() int {
		var n int
		q1(t, db, &n, "SELECT count(*)::int FROM pg_stat_activity WHERE application_name = $1", app)
		return n
	}
	waitFor(t, "the first 50 jobs", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 50}))
	waitFor(t, "both connections", time.Minute, func() bool { return conns() == 2 })
	var killed int
	q1(t, db, &killed, "SELECT count(pg_terminate_backend(pid))::int FROM pg_stat_activity WHERE application_name = $1", app)
	if killed != 2 {
		t.Fatalf("terminated %d connections", killed)
	}
	if _, err := c.EnqueueMany(ctx, q, batch(50), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next 50 jobs", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 100}))
	waitFor(t, "both connections to come back", time.Minute, func() bool { return conns() == 2 })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 100 {
		t.Fatalf("saw %d jobs", len(seen))
	}
}

// workerBinary: cmd/jqworker, as built by scripts/test_clients.sh
// (JQ_GO_WORKER) or here.
func workerBinary(t *testing.T) string {
	if b := os.Getenv("JQ_GO_WORKER"); b != "" {
		return b
	}
	b := filepath.Join(t.TempDir(), "jqworker")
	if out, err := exec.Command("go", "build", "-o", b, "jobqueue/cmd/jqworker").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return b
}

type proc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	done  chan error
}

func startProc(t *testing.T, args ...string) *proc {
	p := &proc{cmd: exec.Command(workerBinary(t), args...), done: make(chan error, 1)}
	out, _ := p.cmd.StdoutPipe()
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

func (p *proc) ids(word string) map[int64]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := map[int64]bool{}
	for _, l := range p.lines {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == word {
			id, _ := strconv.ParseInt(f[1], 10, 64)
			m[id] = true
		}
	}
	return m
}

func (p *proc) line(word string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if strings.HasPrefix(l, word+" ") {
			return strings.TrimPrefix(l, word+" ")
		}
	}
	return ""
}

func TestSigtermReleasesUnfinishedJobs(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{LeaseDuration: Duration(time.Minute)}) // a release, not the reaper, must free them
	quick := map[int64]bool{}
	for i := 0; i < 2; i++ {
		id, _ := c.Enqueue(ctx, q, map[string]float64{"sleep": 1.5}, &EnqueueOptions{Priority: 10})
		quick[id] = true
	}
	var slowP []interface{}
	for i := 0; i < 10; i++ {
		slowP = append(slowP, map[string]float64{"sleep": 60})
	}
	slow, _ := c.EnqueueMany(ctx, q, slowP, nil)
	p := startProc(t, dsn, q, "4", "4", "3000")
	waitFor(t, "4 running handlers and 4 waiting", time.Minute, func() bool {
		return len(p.ids("start")) >= 4 && statusCounts(t, db, q)["running"] == 8
	})
	t0 := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not exit")
	}
	if time.Since(t0) > 10*time.Second {
		t.Fatalf("shutdown took %v", time.Since(t0))
	}
	started, done, cancelled := p.ids("start"), p.ids("done"), p.ids("cancelled")
	for id := range quick {
		if !done[id] {
			t.Fatalf("quick job %d not done", id)
		}
	}
	for id := range started {
		if !quick[id] && !cancelled[id] {
			t.Fatalf("slow job %d was not told", id)
		}
	}
	for _, id := range slow {
		var got string
		q1(t, db, &got, "SELECT concat_ws(',', status, attempt_count, coalesce(lease_owner, 'none'), available_at <= now()) FROM jobqueue.jobs WHERE id = $1", id)
		if got != "pending,0,none,t" {
			t.Fatalf("job %d: %s", id, got)
		}
	}
	var s Stats
	if err := json.Unmarshal([]byte(p.line("stats")), &s); err != nil || s.Released != s.Claimed-2 || s.Completed != 2 {
		t.Fatalf("stats %q %v", p.line("stats"), err)
	}
}

func TestKilledWorkersJobsComeBack(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{LeaseDuration: Duration(2 * time.Second)})
	var ps []interface{}
	for i := 0; i < 6; i++ {
		ps = append(ps, map[string]float64{"sleep": 60})
	}
	ids, _ := c.EnqueueMany(ctx, q, ps, nil)
	p := startProc(t, dsn, q, "4", "2", "1000")
	waitFor(t, "4 running handlers, 2 waiting", time.Minute, func() bool {
		return len(p.ids("start")) == 4 && statusCounts(t, db, q)["running"] == 6
	})
	owner := p.line("owner")
	_ = p.cmd.Process.Kill()
	<-p.done
	var n int
	q1(t, db, &n, "SELECT count(*)::int FROM jobqueue.jobs WHERE queue_name = $1 AND lease_owner = $2", q, owner)
	if n != 6 {
		t.Fatalf("the killed worker held %d jobs", n)
	}
	var mu sync.Mutex
	attempts := map[int64]int{}
	w, _ := NewWorker(dsn, WorkerOptions{Queue: q, Concurrency: 4, BatchSize: 10, PollInterval: 200 * time.Millisecond, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error {
			mu.Lock()
			attempts[j.ID] = j.Attempt
			mu.Unlock()
			return nil
		}})
	stop := runWorker(t, w)
	waitFor(t, "the reaped jobs to be done by the second worker", time.Minute, countsAre(t, db, q, map[string]int{"succeeded": 6}))
	stop()
	for _, id := range ids {
		if attempts[id] != 2 {
			t.Fatalf("job %d: attempt %d", id, attempts[id])
		}
		var hist string
		q1(t, db, &hist, "SELECT string_agg((e->>'code') || '/' || (e->>'owner'), ',') FROM jobqueue.jobs, jsonb_array_elements(errors) e WHERE id = $1", id)
		if hist != "LEASE_EXPIRED/"+owner {
			t.Fatalf("job %d: history %s", id, hist)
		}
	}
}

func TestQuickstartInReadme(t *testing.T) {
	dsn := testDSN(t)
	example, err := os.ReadFile("examples/quickstart/main.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, _ := os.ReadFile("README.md")
	if !strings.Contains(string(readme), strings.TrimSpace(string(example))) {
		t.Fatal("README.md does not contain examples/quickstart/main.go verbatim")
	}
	cmd := exec.Command("go", "run", "jobqueue/examples/quickstart")
	cmd.Env = append(os.Environ(), "JOBQUEUE_DSN="+dsn)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "sent 3 e-mails") {
		t.Fatalf("%v\n%s", err, out)
	}
}
