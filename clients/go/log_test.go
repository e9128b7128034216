package jobqueue

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// A handler's failure in the default configuration (no Logger: standard
// error) is logged at WARNING with its stack trace, and the stack is in
// the job's error history.
func TestHandlerFailureLoggedByDefault(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{MaxAttempts: Int(1)})
	id, err := c.Enqueue(ctx, q, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var copied sync.WaitGroup
	copied.Add(1)
	go func() { defer copied.Done(); _, _ = io.Copy(&out, r) }()
	stderr := os.Stderr
	os.Stderr = wr
	w, err := NewWorker(dsn, WorkerOptions{Queue: q, PollInterval: 200 * time.Millisecond, NoListen: true,
		Handler: func(ctx context.Context, j *Job) error { failingHandlerFrame(); return nil }})
	os.Stderr = stderr
	if err != nil {
		t.Fatal(err)
	}
	stop := runWorker(t, w)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	j, err := c.Wait(wctx, id, &WaitOptions{PollInterval: 100 * time.Millisecond})
	cancel()
	stop()
	_ = wr.Close()
	copied.Wait()
	if err != nil || j.Status != "dead" || j.LastErrorCode != "panic" || len(j.Errors) != 1 {
		t.Fatalf("%+v %v", j, err)
	}
	if !strings.Contains(j.Errors[0].Stack, "jobqueue.failingHandlerFrame") {
		t.Fatalf("no stack in the history: %q", j.Errors[0].Stack)
	}
	l := out.String()
	if !strings.Contains(l, "jobqueue: ") || !strings.Contains(l, "WARNING: job ") ||
		!strings.Contains(l, "failed (panic: panic: the handler broke)") || !strings.Contains(l, "jobqueue.failingHandlerFrame") {
		t.Fatalf("the log:\n%s", l)
	}
}

func failingHandlerFrame() { panic("the handler broke") }
