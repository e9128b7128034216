package jobqueue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgconn"
)

func TestClassifyRetryableByDefault(t *testing.T) {
	f := classify(errors.New("bad thing"))
	if f.code != "errorString" || f.message != "bad thing" || !f.retryable || f.retryIn != nil ||
		f.stack != "*errors.errorString: bad thing" {
		t.Fatalf("got %+v", f)
	}
}

type fieldCoded struct{ Code string }

func (e *fieldCoded) Error() string { return "field " + e.Code }

type methodCoded struct{}

func (methodCoded) Error() string { return "method" }
func (methodCoded) Code() string  { return "BY_METHOD" }

// The rule all clients share: the error's own code if it has a non-empty
// one, else its type name.
func TestErrorCodeRule(t *testing.T) {
	_, statErr := os.Stat("/no/such/file")
	var arr []int
	_, runtimeErr := func() (_ int, err error) {
		defer func() { err = recover().(error) }()
		return arr[1], nil
	}()
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("x"), "errorString"},
		{statErr, "PathError"},
		{fmt.Errorf("loading: %w", statErr), "PathError"},
		{fmt.Errorf("loading: %v", statErr), "errorString"},
		{Permanent(RetryIn(statErr, time.Second)), "PathError"},
		{WithCode(statErr, "NO_CONFIG"), "NO_CONFIG"},
		{fmt.Errorf("w: %w", WithCode(errors.New("x"), "INNER")), "INNER"},
		{&fieldCoded{"23505"}, "23505"},
		{&fieldCoded{""}, "fieldCoded"},
		{&pgconn.PgError{Code: "40001"}, "40001"},
		{methodCoded{}, "BY_METHOD"},
		{&panicError{value: "boom"}, "panic"},
		{&panicError{value: runtimeErr}, "boundsError"},
		{context.DeadlineExceeded, "deadlineExceededError"},
	} {
		if got := ErrorCode(c.err); got != c.want {
			t.Errorf("%#v: got %q, want %q", c.err, got, c.want)
		}
	}
}

// A panic's failure carries the stack of the goroutine that panicked; an
// error's, its chain.  NUL bytes and invalid UTF-8 (which PostgreSQL's
// text refuses) are replaced.
func TestFailureStackAndText(t *testing.T) {
	var err error
	func() {
		defer func() { err = &panicError{value: recover(), stack: debug.Stack()} }()
		panicHere()
	}()
	f := classify(err)
	if f.code != "panic" || f.message != "panic: at the disco" || !strings.Contains(f.stack, "jobqueue.panicHere") {
		t.Fatalf("got %+v", f)
	}
	f = classify(fmt.Errorf("sending: %w", WithCode(errors.New("nul\x00 and \xff"), "X\x00")))
	if f.message != "sending: nul\\0 and \uFFFD" || f.code != "X\\0" ||
		f.stack != "*fmt.wrapError: sending: nul\\0 and \uFFFD\n*jobqueue.codedError: nul\\0 and \uFFFD\n*errors.errorString: nul\\0 and \uFFFD" {
		t.Fatalf("got %+v", f)
	}
	if f := classify(errors.New(strings.Repeat("x", 20000))); len(f.stack) != maxStack {
		t.Fatalf("stack of %d bytes", len(f.stack))
	}
}

func panicHere() { panic("at the disco") }

func TestClassifyDB(t *testing.T) {
	for code, want := range map[string]errClass{
		"40001": errTransient, "40P01": errTransient, "57014": errTransient, "55P03": errTransient, "53300": errTransient,
		"08006": errConnection, "57P01": errConnection,
		"22P05": errData, "22P02": errData, "54000": errData,
		"28P01": errFatal, "28000": errFatal, "3D000": errFatal, "3F000": errFatal, "42883": errFatal, "42704": errFatal, "42501": errFatal,
	} {
		if got := classifyDB(fmt.Errorf("call: %w", &pgconn.PgError{Code: code})); got != want {
			t.Errorf("%s: got %v, want %v", code, got, want)
		}
	}
	if classifyDB(io.EOF) != errConnection {
		t.Error("an error without SQLSTATE is a connection problem")
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
	if fmt.Sprint(args) != fmt.Sprint([]interface{}{"emails", `{"n":1}`, 5, at, 2, "k", nil, nil, nil, nil, nil, nil, nil}) {
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

// The jobs of a claim as the server writes them (json_agg of
// json_build_array): payloads with nested values, strings with quotes,
// brackets and commas; the empty claim is NULL, not "[]", but "[]" is read
// too.
func TestSplitJobs(t *testing.T) {
	data := []byte(`[[17, {"a": [1, {"b": "x]\"},"}], "c": null}, 1, 3, "2026-11-30T12:44:51.123456+00:00", 299.9987, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v,q=\"x\\\\\"", "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01"], ` + "\n " +
		`[18, "just a string, with \\ and \" and ]", 2, 1, "2026-11-30T12:44:51+00:00", 0.5, null, null, null], ` + "\n " +
		`[19, 42, 1, 1, "2026-11-30T12:44:51.5+01:00", 1e-3, null, "a=b", null]]`)
	rows, err := splitJobs(data)
	if err != nil || len(rows) != 3 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	want := []string{`{"a": [1, {"b": "x]\"},"}], "c": null}`, `"just a string, with \\ and \" and ]"`, `42`}
	for i, r := range rows {
		if string(r[1]) != want[i] {
			t.Fatalf("row %d payload %s", i, r[1])
		}
	}
	j, lease, err := parseJob("q", &rows[0])
	if err != nil || j.ID != 17 || j.Attempt != 1 || j.Token != 3 || lease != time.Duration(299.9987*float64(time.Second)) ||
		!j.LeaseExpiresAt.Equal(time.Date(2026, 11, 30, 12, 44, 51, 123456000, time.UTC)) || j.Queue != "q" ||
		j.Traceparent != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" ||
		j.Tracestate != `k=v,q="x\\"` || j.TraceOrigin != "00-1af7651916cd43dd8448eb211c80319c-c7ad6b7169203331-01" {
		t.Fatalf("%+v %v %v", j, lease, err)
	}
	if j, _, err := parseJob("q", &rows[2]); err != nil || string(j.Payload) != "42" || j.Traceparent != "" || j.Tracestate != "a=b" || j.TraceOrigin != "" || !j.LeaseExpiresAt.Equal(time.Date(2026, 11, 30, 11, 44, 51, 5e8, time.UTC)) {
		t.Fatalf("%+v %v", j, err)
	}
	if rows, err := splitJobs([]byte(`[]`)); err != nil || len(rows) != 0 {
		t.Fatalf("%v %v", rows, err)
	}
	for _, bad := range []string{``, `{}`, `[[1, 2]]`, `[[1, 2, 3, 4, "x", 5`, `[[1, {"a": 1}, 3, 4, "x", 5, 6, 7, 8, 9]]`, `[[1, "open, 3, 4, "x", 5, 6, 7, 8]]`, `[[1, 2, 3, 4, "x", 5, 6]]`} {
		if _, err := splitJobs([]byte(bad)); err == nil {
			t.Fatalf("%q: no error", bad)
		}
	}
}
