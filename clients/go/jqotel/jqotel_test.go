package jqotel_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"jobqueue"
	"jobqueue/jqotel"
)

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func testDSN(t *testing.T) string {
	d := os.Getenv("JQ_TEST_DSN")
	if d == "" {
		t.Skip("JQ_TEST_DSN is not set (scripts/test_clients.sh sets it)")
	}
	return d
}

// run serves queue with handler (inside jqotel.Handler of tp) until the
// job id has status want.
func run(t *testing.T, db *pgxpool.Pool, dsn, queue string, id int64, want string, tp trace.TracerProvider, h jobqueue.Handler) {
	t.Helper()
	w, err := jobqueue.NewWorker(dsn, jobqueue.WorkerOptions{Queue: queue, Handler: jqotel.Handler(tp, h),
		PollInterval: 100 * time.Millisecond, Logger: log.New(io.Discard, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var st string
		if err := db.QueryRow(context.Background(), "SELECT status::text FROM jobqueue.jobs WHERE id = $1", id).Scan(&st); err != nil {
			t.Fatal(err)
		}
		if st == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: status %s, waited for %s", id, st, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.Stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A trigger enqueues under SET LOCAL jobqueue.traceparent (plain SQL, no
// client): the worker's span is in that trace, the child of that span; a
// failed attempt's span has status Error, the retry's span the same parent.
func TestSpanFromTriggerEnqueue(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db, err := pgxpool.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := jobqueue.NewClient(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queue := "gootel-" + randHex(5)
	if err := c.CreateQueue(ctx, queue, jobqueue.QueuePolicy{LeaseDuration: jobqueue.Duration(5 * time.Second),
		BackoffBase: jobqueue.Duration(50 * time.Millisecond), BackoffMax: jobqueue.Duration(100 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	table := "gootel_orders_" + randHex(4)
	for _, s := range []string{
		"CREATE TABLE " + table + " (id int PRIMARY KEY)",
		"CREATE FUNCTION " + table + "_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN " +
			"PERFORM jobqueue.jq_enqueue('" + queue + "', pg_catalog.jsonb_build_object('order', NEW.id)); RETURN NEW; END $$",
		"CREATE TRIGGER enqueue AFTER INSERT ON " + table + " FOR EACH ROW EXECUTE FUNCTION " + table + "_enqueue()",
	} {
		if _, err := db.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	defer db.Exec(ctx, "DROP TABLE "+table+"; DROP FUNCTION "+table+"_enqueue()")
	traceID, spanID := randHex(16), randHex(8)
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SET LOCAL jobqueue.traceparent = '00-"+traceID+"-"+spanID+"-01'"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+table+" VALUES (7)"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := db.QueryRow(ctx, "SELECT id FROM jobqueue.jobs WHERE queue_name = $1", queue).Scan(&id); err != nil {
		t.Fatal(err)
	}

	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	var active trace.SpanContext
	run(t, db, dsn, queue, id, "succeeded", tp, func(ctx context.Context, job *jobqueue.Job) error {
		if job.Attempt == 1 {
			return jobqueue.WithCode(jobqueue.RetryIn(errors.New("the shop is closed"), 0), "E_CLOSED")
		}
		active = trace.SpanContextFromContext(ctx)
		return nil
	})

	spans := sr.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2 (a failed attempt, its retry)", len(spans))
	}
	for i, s := range spans {
		a := attrs(s)
		if s.SpanContext().TraceID().String() != traceID || s.Parent().SpanID().String() != spanID || !s.Parent().IsRemote() {
			t.Errorf("span %d: trace %s parent %s, want the producer's %s %s", i, s.SpanContext().TraceID(), s.Parent().SpanID(), traceID, spanID)
		}
		if s.SpanKind() != trace.SpanKindConsumer || s.Name() != "process "+queue {
			t.Errorf("span %d: kind %v name %q", i, s.SpanKind(), s.Name())
		}
		if a["messaging.system"].AsString() != "jobqueue" || a["jobqueue.queue"].AsString() != queue ||
			a["jobqueue.job.id"].AsInt64() != id || a["jobqueue.job.attempt"].AsInt64() != int64(i+1) {
			t.Errorf("span %d: attributes %v", i, s.Attributes())
		}
	}
	failed, ok := spans[0], spans[1]
	if failed.Status().Code != codes.Error || failed.Status().Description != "the shop is closed" ||
		attrs(failed)["error.type"].AsString() != "E_CLOSED" || attrs(failed)["jobqueue.job.outcome"].AsString() != "failed" ||
		len(failed.Events()) != 1 || failed.Events()[0].Name != "exception" {
		t.Errorf("failed attempt: status %v, attributes %v, events %v", failed.Status(), failed.Attributes(), failed.Events())
	}
	if ok.Status().Code != codes.Unset || attrs(ok)["jobqueue.job.outcome"].AsString() != "succeeded" {
		t.Errorf("retry: status %v, attributes %v", ok.Status(), ok.Attributes())
	}
	if !active.Equal(ok.SpanContext()) {
		t.Errorf("the handler's ctx has span %v, want its own span %v", active, ok.SpanContext())
	}
}

func TestRemoteSpanContext(t *testing.T) {
	sc, ok := jqotel.RemoteSpanContext("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if !ok || sc.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" || sc.SpanID().String() != "b7ad6b7169203331" ||
		!sc.IsSampled() || !sc.IsRemote() {
		t.Errorf("got %v %v", sc, ok)
	}
	for _, bad := range []string{"", "x", "00-00000000000000000000000000000000-b7ad6b7169203331-01",
		"00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"} {
		if _, ok := jqotel.RemoteSpanContext(bad); ok {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// A dependent job with a tracestate of its own: its span continues its
// producer's trace with that tracestate, and links to the trace of the
// dependency that released it (its trace_origin).
func TestSpanTracestateAndOrigin(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db, err := pgxpool.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	queue := "gootel-" + randHex(5)
	if _, err := db.Exec(ctx, "SELECT jobqueue.jq_create_queue($1)", queue); err != nil {
		t.Fatal(err)
	}
	depTP := "00-" + randHex(16) + "-" + randHex(8) + "-01"
	ownTP := "00-" + randHex(16) + "-" + randHex(8) + "-01"
	var dep, id int64
	if err := db.QueryRow(ctx, "SELECT jobqueue.jq_enqueue($1, '{}', traceparent => $2)", queue, depTP).Scan(&dep); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, "SELECT jobqueue.jq_enqueue($1, '{}', depends_on => ARRAY[$2::bigint], "+
		"traceparent => $3, tracestate => 'vendor=abc,other=x')", queue, dep, ownTP).Scan(&id); err != nil {
		t.Fatal(err)
	}

	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	run(t, db, dsn, queue, id, "succeeded", tp, func(ctx context.Context, job *jobqueue.Job) error { return nil })

	var child sdktrace.ReadOnlySpan
	for _, s := range sr.Ended() {
		if attrs(s)["jobqueue.job.id"].AsInt64() == id {
			child = s
		}
	}
	if child == nil {
		t.Fatalf("no span for job %d among %d", id, len(sr.Ended()))
	}
	own, _ := jqotel.RemoteSpanContext(ownTP)
	origin, _ := jqotel.RemoteSpanContext(depTP)
	if child.Parent().TraceID() != own.TraceID() || child.Parent().SpanID() != own.SpanID() {
		t.Errorf("parent %v, want the producer's %v", child.Parent(), own)
	}
	if got := child.Parent().TraceState().String(); got != "vendor=abc,other=x" {
		t.Errorf("tracestate %q", got)
	}
	if links := child.Links(); len(links) != 1 || links[0].SpanContext.TraceID() != origin.TraceID() ||
		links[0].SpanContext.SpanID() != origin.SpanID() {
		t.Errorf("links %v, want one to the dependency's %v", links, origin)
	}
}
