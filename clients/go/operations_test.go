package jobqueue

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v4"
)

// The client's calls beyond enqueue against a real server: policies that
// say zero, groups and dependencies, Job, Wait (notified and polling),
// Cancel, Retry, RetryDead, DeadJobs, Pause, Resume, schedules; Cancel and
// Retry inside a caller's transaction that rolls back.
func TestClientCalls(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{Retention: Duration(0), MaxAttempts: Int(1), NotifyFinished: Bool(true),
		GroupConcurrency: Int(1), Fairness: String("round_robin"), RateLimit: Float(1000), RateBurst: Int(50)})
	var policy string
	q1(t, db, &policy, "SELECT concat_ws(',', retention, max_attempts, notify_finished, group_concurrency, fairness) FROM jobqueue.queues WHERE queue_name = $1", q)
	if policy != "00:00:00,1,t,1,round_robin" {
		t.Fatalf("policy %s", policy)
	}
	if err := c.AlterQueue(ctx, q, QueuePolicy{GroupConcurrency: Int(0), Retention: Duration(time.Hour), Notify: Bool(false)}); err != nil {
		t.Fatal(err)
	}
	q1(t, db, &policy, "SELECT concat_ws(',', retention, coalesce(group_concurrency, -1), notify) FROM jobqueue.queues WHERE queue_name = $1", q)
	if policy != "01:00:00,-1,f" {
		t.Fatalf("altered policy %s", policy)
	}
	if err := c.CreateQueue(ctx, q, QueuePolicy{Notify: Bool(true)}); err == nil {
		t.Fatal("Notify is for AlterQueue only")
	}

	a, err := c.Enqueue(ctx, q, map[string]int{"a": 1}, &EnqueueOptions{GroupKey: "tenant-1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Enqueue(ctx, q, map[string]int{"b": 1}, &EnqueueOptions{DependsOn: []int64{a}})
	if err != nil {
		t.Fatal(err)
	}
	many, err := c.EnqueueMany(ctx, q, []interface{}{1, 2}, &EnqueueOptions{GroupKeys: []string{"g", ""}, DependsOn: []int64{a}})
	if err != nil || len(many) != 2 {
		t.Fatal(many, err)
	}
	var groups string
	q1(t, db, &groups, "SELECT string_agg(coalesce(nullif(group_key, ''), '-') || ':' || status, ',' ORDER BY id) FROM jobqueue.jobs WHERE queue_name = $1", q)
	if groups != "tenant-1:pending,-:waiting,g:waiting,-:waiting" {
		t.Fatalf("groups %s", groups)
	}
	jb, err := c.Job(ctx, b)
	if err != nil || jb.Status != "waiting" || len(jb.WaitingFor) != 1 || jb.WaitingFor[0] != a || jb.Queue != q {
		t.Fatalf("%+v %v", jb, err)
	}
	if _, err := c.Job(ctx, -1); !errors.Is(err, ErrJobNotFound) {
		t.Fatalf("unknown job: %v", err)
	}

	// Wait: a worker fails a (dead at once, max_attempts 1); the queue
	// announces.
	w, _ := NewWorker(dsn, WorkerOptions{Queue: q, PollInterval: 200 * time.Millisecond, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error { return Permanent(WithCode(errors.New("no"), "NOPE")) }})
	stop := runWorker(t, w)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	ja, err := c.Wait(wctx, a, nil)
	cancel()
	stop()
	if err != nil || ja.Status != "dead" || ja.LastErrorCode != "NOPE" || len(ja.Errors) != 1 || ja.Errors[0].Message != "no" {
		t.Fatalf("%+v %v", ja, err)
	}
	// The stack trace (here the error chain) is in the history entry, since 1.4.
	if st := ja.Errors[0].Stack; st != "*jobqueue.permanentError: no\n*jobqueue.codedError: no\n*errors.errorString: no" {
		t.Fatalf("stack %q", st)
	}
	dead, err := c.DeadJobs(ctx, q, 0)
	if err != nil || len(dead) != 1 || dead[0].ID != a {
		t.Fatalf("%+v %v", dead, err)
	}
	q1(t, db, &groups, "SELECT string_agg(status::text, ',' ORDER BY id) FROM jobqueue.jobs WHERE queue_name = $1", q)
	if groups != "dead,cancelled,cancelled,cancelled" {
		t.Fatalf("statuses %s", groups)
	}

	// Retry and Cancel in a transaction that rolls back change nothing.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, _ := conn.Begin(ctx)
	if ok, err := c.In(tx).Retry(ctx, a, time.Time{}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := c.In(tx).Retry(ctx, b, time.Time{}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := c.In(tx).Cancel(ctx, b); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := c.In(tx).Enqueue(ctx, q, 3, nil); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback(ctx)
	if n := statusCounts(t, db, q); n["dead"] != 1 || n["cancelled"] != 3 || len(n) != 2 {
		t.Fatalf("after the rollback: %v", n)
	}

	// Pause: a retried job is not claimed; Resume: it is.
	if err := c.Pause(ctx, q); err != nil {
		t.Fatal(err)
	}
	if n, err := c.RetryDead(ctx, q, "NOPE", 0); n != 1 || err != nil {
		t.Fatal(n, err)
	}
	var claimed int
	q1(t, db, &claimed, "SELECT count(*)::int FROM jobqueue.jq_claim($1, 1, 'test')", q)
	if claimed != 0 {
		t.Fatal("a paused queue gave a job")
	}
	if err := c.Resume(ctx, q); err != nil {
		t.Fatal(err)
	}
	// Wait by polling (a queue that does not announce): the job is
	// completed by hand.
	if err := c.AlterQueue(ctx, q, QueuePolicy{NotifyFinished: Bool(false)}); err != nil {
		t.Fatal(err)
	}
	done := make(chan *JobInfo, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		j, err := c.Wait(wctx, a, &WaitOptions{PollInterval: 100 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		done <- j
	}()
	var ok bool
	q1(t, db, &ok, "SELECT jobqueue.jq_complete(id, token, '{\"by\": \"hand\"}') FROM jobqueue.jq_claim($1, 1, 'test')", q)
	if j := <-done; !ok || j == nil || j.Status != "succeeded" || string(j.Result) != `{"by": "hand"}` {
		t.Fatalf("%v %+v", ok, j)
	}
	wctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := c.Wait(wctx, b, &WaitOptions{PollInterval: 50 * time.Millisecond}); err != nil {
		t.Fatalf("a cancelled job is finished: %v", err)
	}

	// Schedules.
	next, err := c.Schedule(ctx, q+"-nightly", q, "0 3 * * *", map[string]int{"n": 1}, &ScheduleOptions{Timezone: "Europe/Berlin", CatchUp: "all"})
	if err != nil || next == nil {
		t.Fatal(next, err)
	}
	list, err := c.Schedules(ctx)
	found := false
	for _, s := range list {
		if s.Name == q+"-nightly" {
			found = s.Queue == q && s.CatchUp == "all" && s.Timezone == "Europe/Berlin" && s.Enabled && s.NextRunAt.Equal(*next)
		}
	}
	if err != nil || !found {
		t.Fatalf("%+v %v", list, err)
	}
	if ok, err := c.Unschedule(ctx, q+"-nightly"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, _ := c.Unschedule(ctx, q+"-nightly"); ok {
		t.Fatal("unscheduled twice")
	}
}

// One worker serves two queues over its two connections.
func TestWorkerServesSeveralQueues(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	qa, qb := makeQueue(t, c, QueuePolicy{}), makeQueue(t, c, QueuePolicy{})
	for _, q := range []string{qa, qb} {
		if _, err := c.EnqueueMany(ctx, q, []interface{}{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, nil); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(chan string, 100)
	w, _ := NewWorker(dsn, WorkerOptions{Queues: []string{qa, qb}, BatchSize: 5, PollInterval: 200 * time.Millisecond, Logger: quietLogger(),
		Handler: func(ctx context.Context, j *Job) error { seen <- j.Queue; return nil }})
	stop := runWorker(t, w)
	waitFor(t, "both queues", time.Minute, func() bool {
		return countsAre(t, db, qa, map[string]int{"succeeded": 12})() && countsAre(t, db, qb, map[string]int{"succeeded": 12})()
	})
	// Notified: a job enqueued later in the second queue.
	if _, err := c.Enqueue(ctx, qb, 13, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the later job", time.Minute, countsAre(t, db, qb, map[string]int{"succeeded": 13}))
	stop()
	close(seen)
	n := map[string]int{}
	for q := range seen {
		n[q]++
	}
	if n[qa] != 12 || n[qb] != 13 || len(w.Queues()) != 2 {
		t.Fatalf("%v", n)
	}
}
