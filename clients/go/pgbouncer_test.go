package jobqueue

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v4"
)

// Through PgBouncer in transaction pooling mode (JQ_TEST_BOUNCER_DSN), with
// fewer server connections than clients: enqueue (also in a caller's
// transaction), claim, complete, fail, heartbeat and replay; LISTEN on a
// direct connection.
func TestThroughPgBouncer(t *testing.T) {
	bdsn := os.Getenv("JQ_TEST_BOUNCER_DSN")
	if bdsn == "" {
		t.Skip("JQ_TEST_BOUNCER_DSN is not set")
	}
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, bdsn)
	q := makeQueue(t, c, QueuePolicy{LeaseDuration: Duration(2 * time.Second), MaxAttempts: Int(2)})
	cfg, _ := ConnConfig(bdsn)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := conn.Begin(ctx)
	if _, err := c.Enqueue(ctx, q, map[string]string{"kind": "rolled back"}, &EnqueueOptions{Tx: tx}); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	tx, _ = conn.Begin(ctx)
	if _, err := c.Enqueue(ctx, q, map[string]string{"kind": "long"}, &EnqueueOptions{Tx: tx}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	var ps []interface{}
	for i := 0; i < 300; i++ {
		k := "ok"
		if i%10 == 0 {
			k = "flaky"
		}
		ps = append(ps, map[string]string{"kind": k})
	}
	ids, err := c.EnqueueMany(ctx, q, ps, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadID, _ := c.Enqueue(ctx, q, map[string]string{"kind": "permanent"}, nil)
	var mu sync.Mutex
	runs := map[int64]int{}
	replayed := false
	handler := func(ctx context.Context, j *Job) error {
		mu.Lock()
		runs[j.ID]++
		r := replayed
		mu.Unlock()
		s := string(j.Payload)
		switch {
		case s == `{"kind": "flaky"}` && j.Attempt == 1:
			return errors.New("once")
		case s == `{"kind": "permanent"}` && !r:
			return Permanent(errors.New("not yet"))
		case s == `{"kind": "long"}`:
			time.Sleep(3 * time.Second) // heartbeats through the pooler
		}
		return nil
	}
	var workers []*Worker
	var stops []func()
	for i := 0; i < 4; i++ {
		w, _ := NewWorker(bdsn, WorkerOptions{Queue: q, Handler: handler, ListenDSN: dsn, Concurrency: 4, BatchSize: 10,
			PollInterval: 500 * time.Millisecond, Logger: quietLogger()})
		workers = append(workers, w)
		stops = append(stops, runWorker(t, w))
	}
	waitFor(t, "the permanent failure", time.Minute, func() bool {
		var s string
		q1(t, db, &s, "SELECT status::text FROM jobqueue.jobs WHERE id = $1", deadID)
		return s == "dead"
	})
	mu.Lock()
	replayed = true
	mu.Unlock()
	var ok bool
	if err := c.Pool.QueryRow(ctx, "SELECT jobqueue.jq_retry($1)", deadID).Scan(&ok); err != nil || !ok { // through the pooler
		t.Fatal(ok, err)
	}
	waitFor(t, "every job to succeed", time.Minute, func() bool {
		var n int
		q1(t, db, &n, "SELECT count(*)::int FROM jobqueue.jobs WHERE queue_name = $1 AND status = 'succeeded'", q)
		return n == 302
	})
	for _, s := range stops {
		s()
	}
	var sum Stats
	for _, w := range workers {
		s := w.Stats()
		sum.Heartbeats += s.Heartbeats
		sum.Fenced += s.Fenced
		sum.Completed += s.Completed
	}
	if sum.Heartbeats < 1 || sum.Fenced != 0 || sum.Completed != 302 {
		t.Fatalf("stats %+v", sum)
	}
	for i, id := range ids {
		want := 1
		if i%10 == 0 {
			want = 2
		}
		if runs[id] != want {
			t.Fatalf("job %d ran %d times", id, runs[id])
		}
	}
	var n int
	q1(t, db, &n, "SELECT count(*)::int FROM jobqueue.jobs WHERE queue_name = $1 AND payload->>'kind' = 'rolled back'", q)
	if n != 0 {
		t.Fatal("the rolled back job exists")
	}
}
