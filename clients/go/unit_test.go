package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestClassifyRetryableByDefault(t *testing.T) {
	f := classify(errors.New("bad thing"))
	if f.code != "ERROR" || f.message != "bad thing" || !f.retryable || f.retryIn != nil {
		t.Fatalf("got %+v", f)
	}
}

func TestClassifyPermanentAndCode(t *testing.T) {
	f := classify(fmt.Errorf("wrapped: %w", Permanent(WithCode(errors.New("no such mailbox"), "BAD_ADDRESS"))))
	if f.retryable || f.code != "BAD_ADDRESS" {
		t.Fatalf("got %+v", f)
	}
	if Permanent(nil) != nil || RetryIn(nil, time.Second) != nil || WithCode(nil, "X") != nil {
		t.Fatal("wrapping nil must give nil")
	}
}

func TestClassifyRetryIn(t *testing.T) {
	f := classify(RetryIn(WithCode(errors.New("429"), "HTTP_429"), 90*time.Second))
	if !f.retryable || f.retryIn == nil || *f.retryIn != 90*time.Second || f.code != "HTTP_429" {
		t.Fatalf("got %+v", f)
	}
	if f := classify(Permanent(RetryIn(errors.New("x"), time.Second))); f.retryIn != nil {
		t.Fatal("a permanent failure has no retry delay")
	}
	if f := classify(RetryIn(errors.New("x"), -time.Second)); f.retryIn != nil {
		t.Fatal("a negative delay is ignored")
	}
}

func TestCutBytes(t *testing.T) {
	if got := cutBytes(strings.Repeat("é", 100), 128); len(got) != 128 {
		t.Fatalf("len %d", len(got))
	}
	if got := cutBytes("aé", 2); got != "a" {
		t.Fatalf("got %q", got)
	}
	if f := classify(WithCode(errors.New(""), strings.Repeat("x", 200))); len(f.code) != 128 || f.message != f.code {
		t.Fatalf("got %+v", f)
	}
}

func TestBackoff(t *testing.T) {
	b := &backoff{base: 100 * time.Millisecond, max: time.Second, rand: func() float64 { return 1 }}
	var got []time.Duration
	for i := 0; i < 6; i++ {
		got = append(got, b.next())
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("got %v", got)
		}
	}
	b.reset()
	b.rand = func() float64 { return 0 }
	if d := b.next(); d != 50*time.Millisecond {
		t.Fatalf("got %v", d)
	}
}

func TestEnqueueArgs(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	args, err := EnqueueArgs("emails", map[string]int{"n": 1}, &EnqueueOptions{Priority: 5, RunAt: at, MaxAttempts: 2, IdempotencyKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(args) != fmt.Sprint([]interface{}{"emails", `{"n":1}`, 5, at, 2, "k"}) {
		t.Fatalf("got %v", args)
	}
	args, _ = EnqueueArgs("q", []byte(`{"raw":true}`), nil)
	if args[1] != `{"raw":true}` || args[2] != 0 || args[3] != nil || args[4] != nil || args[5] != nil {
		t.Fatalf("got %v", args)
	}
	if _, err := EnqueueArgs("q", make(chan int), nil); err == nil {
		t.Fatal("a payload that is not JSON must fail")
	}
}

func TestNewWorkerOptions(t *testing.T) {
	h := func(ctx context.Context, j *Job) error { return nil }
	if _, err := NewWorker("x", WorkerOptions{Queue: "q"}); err == nil {
		t.Fatal("a handler is required")
	}
	if _, err := NewWorker("x", WorkerOptions{Queue: "q", Handler: h, Concurrency: -1}); err == nil {
		t.Fatal("concurrency is checked")
	}
	if _, err := NewWorker("x", WorkerOptions{Queue: "q", Handler: h, HeartbeatFraction: 2}); err == nil {
		t.Fatal("the heartbeat fraction is checked")
	}
	w, err := NewWorker("x", WorkerOptions{Queue: "q", Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	if w.opts.Concurrency != 4 || w.opts.BatchSize != 10 || w.opts.ListenDSN != "x" || !strings.HasSuffix(w.Owner(), ":q") {
		t.Fatalf("defaults: %+v", w.opts)
	}
}

func TestStopWithoutServer(t *testing.T) {
	w, _ := NewWorker("postgresql://nobody@127.0.0.1:1/x?connect_timeout=1", WorkerOptions{Queue: "q", NoListen: true,
		Handler:       func(ctx context.Context, j *Job) error { return nil },
		ReconnectBase: 10 * time.Millisecond, ReconnectMax: 20 * time.Millisecond, Logger: quietLogger()})
	done := make(chan error)
	go func() { done <- w.Run(context.Background()) }()
	w.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after Stop")
	}
}
