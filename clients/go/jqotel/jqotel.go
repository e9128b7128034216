// Package jqotel runs each job of a jobqueue.Worker in an OpenTelemetry
// span: wrap the handler,
//
//	jobqueue.WorkerOptions{Queue: "emails", Handler: jqotel.Handler(nil, handle)}
//
// and every run of a job is a CONSUMER span "process <queue>", the child of
// the W3C traceparent its producer recorded (jq_enqueue's argument or the
// producer's jobqueue.traceparent setting, so a job enqueued by a trigger
// or PL/pgSQL joins the application's trace) with its tracestate, linked to
// the trace of the job it came from (a dependency, a schedule's run, a
// replay) where there is one, with the queue, job id, attempt and outcome as
// attributes, status Error and the error recorded when the handler fails.  The span is in the handler's ctx: its own spans are
// children of it.
//
// It is a package of its own so that the client (package jobqueue) does
// not depend on OpenTelemetry; it builds with Debian's
// golang-opentelemetry-otel-dev (1.1.0).
package jqotel

import (
	"context"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"jobqueue"
)

// InstrumentationName names the tracer of the spans.
const InstrumentationName = "jobqueue/jqotel"

// Handler returns h inside a span per job, from tp's tracer (nil: the
// global TracerProvider, otel.GetTracerProvider(), at each job).
func Handler(tp trace.TracerProvider, h jobqueue.Handler) jobqueue.Handler {
	return func(ctx context.Context, job *jobqueue.Job) error {
		p := tp
		if p == nil {
			p = otel.GetTracerProvider()
		}
		if sc, ok := RemoteSpanContext(job.Traceparent); ok {
			if ts, err := trace.ParseTraceState(job.Tracestate); err == nil {
				sc = sc.WithTraceState(ts)
			}
			ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
		var links []trace.Link
		if sc, ok := RemoteSpanContext(job.TraceOrigin); ok {
			links = append(links, trace.Link{SpanContext: sc,
				Attributes: []attribute.KeyValue{attribute.String("jobqueue.link", "origin")}})
		}
		ctx, span := p.Tracer(InstrumentationName).Start(ctx, "process "+job.Queue,
			trace.WithLinks(links...),
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(
				attribute.String("messaging.system", "jobqueue"),
				attribute.String("messaging.operation", "process"),
				attribute.String("messaging.destination.name", job.Queue),
				attribute.String("messaging.message.id", strconv.FormatInt(job.ID, 10)),
				attribute.String("jobqueue.queue", job.Queue),
				attribute.Int64("jobqueue.job.id", job.ID),
				attribute.Int("jobqueue.job.attempt", job.Attempt),
			))
		defer span.End()
		err := h(ctx, job)
		if err != nil {
			// the code jq_fail gets (the rule of all the clients)
			span.SetAttributes(
				attribute.String("jobqueue.job.outcome", "failed"),
				attribute.String("error.type", jobqueue.ErrorCode(err)),
			)
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		} else {
			span.SetAttributes(attribute.String("jobqueue.job.outcome", "succeeded"))
		}
		return err
	}
}

// RemoteSpanContext is the span context of a W3C traceparent
// ("00-<trace id>-<span id>-<flags>", lower-case hex), marked remote; false
// when tp is empty or not valid.
func RemoteSpanContext(tp string) (trace.SpanContext, bool) {
	f := strings.Split(tp, "-")
	if len(f) != 4 || len(f[0]) != 2 || f[0] == "ff" || len(f[1]) != 32 || len(f[2]) != 16 || len(f[3]) != 2 ||
		strings.ToLower(tp) != tp {
		return trace.SpanContext{}, false
	}
	if _, err := strconv.ParseUint(f[0], 16, 8); err != nil {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(f[1])
	sid, err2 := trace.SpanIDFromHex(f[2])
	flags, err3 := strconv.ParseUint(f[3], 16, 8)
	if err1 != nil || err2 != nil || err3 != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    tid,
		SpanID:     sid,
		TraceFlags: trace.TraceFlags(flags) & trace.FlagsSampled,
		Remote:     true,
	})
	return sc, sc.IsValid()
}
