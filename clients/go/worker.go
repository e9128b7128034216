package jobqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math/rand"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

// Channel is the NOTIFY channel of jobqueue; the payload is the queue name.
const Channel = "jobqueue"

// A claim returns its jobs as one JSON array of [id, payload, attempt,
// token, lease_expires_at, seconds of lease left, traceparent, tracestate,
// trace_origin] (in the
// order of the claim), decoded in one pass.  The lease left is measured against
// clock_timestamp(): the claim of jq_complete_and_claim reads the clock
// after its completions.
const sqlJobsJSON = "SELECT pg_catalog.json_agg(pg_catalog.json_build_array(c.id, c.payload, c.attempt, c.token, " +
	"c.lease_expires_at, pg_catalog.date_part('epoch', " +
	"c.lease_expires_at - pg_catalog.clock_timestamp()), c.traceparent, c.tracestate, c.trace_origin) " +
	"ORDER BY c.n)::text " +
	"FROM %s WITH ORDINALITY AS c(id, payload, attempt, token, lease_expires_at, " +
	"traceparent, tracestate, trace_origin, n)"

var (
	sqlClaim            = fmt.Sprintf(sqlJobsJSON, "jobqueue.jq_claim($1, $2::int, $3)")
	sqlCompleteAndClaim = fmt.Sprintf(sqlJobsJSON,
		"jobqueue.jq_complete_and_claim($1, $2::bigint[], $3::bigint[], $4::int, $5, NULL, $6::text[]::jsonb[])")
)

const (
	sqlCompleteMany = "SELECT id FROM jobqueue.jq_complete_many($1::bigint[], $2::bigint[], $3::text[]::jsonb[]) AS id"
	sqlFail         = "SELECT jobqueue.jq_fail($1::bigint, $2::bigint, $3, $4, retryable => $5::boolean, " +
		"retry_in => $6::interval)::text"
	// What the worker checks when it connects: the extension is there, and
	// whether its jq_fail takes a stack trace.
	sqlCheckExtension = "SELECT EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace = e.extnamespace " +
		"AND p.proname OPERATOR(pg_catalog.=) 'jq_fail' AND 'stack' OPERATOR(pg_catalog.=) ANY (p.proargnames)) " +
		"FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'jobqueue'"
	sqlHeartbeat = "SELECT pg_catalog.date_part('epoch', h - pg_catalog.now()) " +
		"FROM jobqueue.jq_heartbeat($1::bigint, $2::bigint) AS h"
	sqlRelease = "SELECT jobqueue.jq_release($1::bigint, $2::bigint)"
	// The same calls naming the job's queue first (1.4, whose jq_fail also
	// keeps a stack trace in the error history entry): on Citus each is one statement on the queue's shard;
	// a call by id alone looks the queue up on every shard first.
	sqlCompleteManyQ = "SELECT id FROM jobqueue.jq_complete_many($1::text, $2::bigint[], $3::bigint[], " +
		"$4::text[]::jsonb[]) AS id"
	sqlFailStackQ = "SELECT jobqueue.jq_fail($1::text, $2::bigint, $3::bigint, $4, $5, " +
		"retryable => $6::boolean, retry_in => $7::interval, stack => $8::text)::text"
	sqlHeartbeatQ = "SELECT pg_catalog.date_part('epoch', h - pg_catalog.now()) " +
		"FROM jobqueue.jq_heartbeat($1::text, $2::bigint, $3::bigint) AS h"
	sqlReleaseQ = "SELECT jobqueue.jq_release($1::text, $2::bigint, $3::bigint)"
)

// Job is a claimed job as the handler sees it.
type Job struct {
	ID             int64
	Payload        json.RawMessage
	Attempt        int
	Token          int64
	LeaseExpiresAt time.Time
	Queue          string
	// Traceparent is the W3C trace context its producer recorded
	// (jobqueue.traceparent or the traceparent argument), "" when none.
	Traceparent string
	// Tracestate is the W3C tracestate recorded with it, "" when none.
	Tracestate string
	// TraceOrigin is the traceparent of the job this one came from (the
	// dependency that released it, the schedule's run, the job it
	// replays), "" when none.
	TraceOrigin string

	mu     sync.Mutex
	reason string
	result *string // JSON text, set by SetResult
}

// SetResult sets the job's result: v as JSON, stored with the completion
// when the handler returns nil (jq_complete_and_claim's or
// jq_complete_many's results).  A json.RawMessage is taken as it is; nil
// stores no result.  It returns the error of json.Marshal.
func (j *Job) SetResult(v interface{}) error {
	var text *string
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		s := string(b)
		text = &s
	}
	j.mu.Lock()
	j.result = text
	j.mu.Unlock()
	return nil
}

// CancelReason says why the handler's context was cancelled: "lease lost"
// (the heartbeat was refused, or the lease ran out before one got through)
// or "shutdown" (the shutdown deadline passed); "" while it was not.
func (j *Job) CancelReason() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.reason
}

// Handler runs one job.  nil completes it; an error fails it: retryable
// unless wrapped with Permanent, after the queue's backoff unless wrapped
// with RetryIn.  ctx is cancelled when the job's lease is lost or at the
// shutdown deadline (see Job.CancelReason); it is not cancelled by the
// graceful stop itself.
type Handler func(ctx context.Context, job *Job) error

// WorkerOptions configure a Worker; zero fields take the defaults.
type WorkerOptions struct {
	Queue             string   // the queue to serve ...
	Queues            []string // ... or several (with Queue, if set, first): claims take turns among them
	Handler           Handler
	Concurrency       int           // handlers running at once (default 4)
	BatchSize         int           // jobs per jq_claim (default 10)
	ListenDSN         string        // a direct connection for LISTEN (default: the dsn)
	NoListen          bool          // no LISTEN: polling only
	PollInterval      time.Duration // claim at least this often when idle (default 5 s)
	HeartbeatFraction float64       // heartbeat each time this fraction of the lease passed (default 1/3)
	ShutdownTimeout   time.Duration // running handlers get this long after the stop (default 30 s)
	FlushInterval     time.Duration // results are sent at most this long after the first is ready (default 50 ms)
	Owner             string        // lease_owner (default host:pid:queue)
	ReconnectBase     time.Duration // first reconnect delay (default 100 ms), doubling ...
	ReconnectMax      time.Duration // ... up to this (default 10 s)
	HandleSignals     bool          // SIGTERM and SIGINT stop Run gracefully
	Logger            *log.Logger   // default: standard error, prefix "jobqueue: "; handler failures are logged with "WARNING: "
}

// Stats are the worker's counters.
type Stats struct {
	Claimed, Completed, Failed, Released, Fenced, Heartbeats, Lost int64
	// Retried: calls sent again after a transient error (serialization
	// failure, deadlock, statement timeout, lock timeout).
	Retried int64
}

// Worker runs a handler for the jobs of one queue.
type Worker struct {
	dsn    string
	opts   WorkerOptions
	queues []string
	log    *log.Logger

	fatalOnce sync.Once
	fatal     error // set by the listener: an error no retry fixes

	mu    sync.Mutex
	stats Stats

	stopOnce sync.Once
	stopCh   chan struct{}
	notifyCh chan struct{}
	// The queues named by notifications since the main loop last looked.
	notifyMu  sync.Mutex
	notifyQs  []string
	notifyAll bool

	// The handlers: Concurrency goroutines take claimed jobs from readyCh
	// and put their results in resBuf; they wake the main loop (wakeCh)
	// for the first result and when wakeAt of them are there, not for
	// each one.
	readyCh  chan *held
	resMu    sync.Mutex
	resBuf   []result
	resFirst time.Time // when the first result in resBuf came
	wakeCh   chan struct{}
	wakeAt   int64 // atomic: min(BatchSize, jobs held); 1 when stopping

	combined, combinedJobs int64 // calls of jq_complete_and_claim and their completions (tests)
}

type held struct {
	job      *Job
	cancel   context.CancelFunc
	ctx      context.Context
	deadline time.Time
	nextHb   time.Time
	aborted  bool
}

type result struct {
	h   *held
	err error
}

// NewWorker checks the options; Run does the work.
func NewWorker(dsn string, opts WorkerOptions) (*Worker, error) {
	var queues []string
	seen := map[string]bool{}
	for _, q := range append([]string{opts.Queue}, opts.Queues...) {
		if q != "" && !seen[q] {
			seen[q] = true
			queues = append(queues, q)
		}
	}
	if len(queues) == 0 || opts.Handler == nil {
		return nil, errors.New("jobqueue: a queue (Queue or Queues) and Handler are required")
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 4
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = 10
	}
	if opts.Concurrency < 1 || opts.BatchSize < 1 {
		return nil, errors.New("jobqueue: Concurrency and BatchSize must be at least 1")
	}
	if opts.HeartbeatFraction == 0 {
		opts.HeartbeatFraction = 1.0 / 3
	}
	if opts.HeartbeatFraction <= 0 || opts.HeartbeatFraction >= 1 {
		return nil, errors.New("jobqueue: HeartbeatFraction must be between 0 and 1")
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 5 * time.Second
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = 50 * time.Millisecond
	}
	if opts.ReconnectBase == 0 {
		opts.ReconnectBase = 100 * time.Millisecond
	}
	if opts.ReconnectMax == 0 {
		opts.ReconnectMax = 10 * time.Second
	}
	if opts.ListenDSN == "" {
		opts.ListenDSN = dsn
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = cutBytes(fmt.Sprintf("%s:%d:%s", host, os.Getpid(), strings.Join(queues, ",")), 256)
	}
	l := opts.Logger
	if l == nil {
		l = log.New(os.Stderr, "jobqueue: ", log.LstdFlags)
	}
	return &Worker{dsn: dsn, opts: opts, queues: queues, log: l, stopCh: make(chan struct{}),
		notifyCh: make(chan struct{}, 1), wakeCh: make(chan struct{}, 1), wakeAt: 1,
		readyCh: make(chan *held, opts.Concurrency+opts.BatchSize)}, nil
}

// Owner is the lease owner the worker claims as.
func (w *Worker) Owner() string { return w.opts.Owner }

// Stats returns a copy of the counters.
func (w *Worker) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

func (w *Worker) count(f func(*Stats)) {
	w.mu.Lock()
	f(&w.stats)
	w.mu.Unlock()
}

// Stop asks Run to shut down gracefully (like cancelling its context).
func (w *Worker) Stop() { w.stopOnce.Do(func() { close(w.stopCh) }) }

func (w *Worker) newBackoff() *backoff {
	return &backoff{base: w.opts.ReconnectBase, max: w.opts.ReconnectMax, rand: rand.Float64}
}

func (w *Worker) connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := ConnConfig(dsn)
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// Queues are the queues the worker serves.
func (w *Worker) Queues() []string { return append([]string(nil), w.queues...) }

// stopFatal: an error no retry fixes, found outside the main loop (the
// listener's connection); the worker shuts down and Run returns it.
func (w *Worker) stopFatal(err error) {
	w.fatalOnce.Do(func() {
		w.mu.Lock()
		w.fatal = fatalError(err, w.queues)
		w.mu.Unlock()
		w.log.Printf("ERROR: %v", w.fatal)
		w.Stop()
	})
}

// Run works until ctx is cancelled or Stop is called, then shuts down:
// no more claims; claimed jobs not started are released at once; running
// handlers get ShutdownTimeout to finish, then their contexts are
// cancelled and their jobs released.  It returns nil after a shutdown, or
// the SQL error (not a connection problem, which is retried) that stopped
// it.
func (w *Worker) Run(ctx context.Context) error {
	if w.opts.HandleSignals {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
		defer stop()
	}
	go func() {
		select {
		case <-ctx.Done():
			w.Stop()
		case <-w.stopCh:
		}
	}()
	listenCtx, stopListen := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if !w.opts.NoListen {
		wg.Add(1)
		go func() { defer wg.Done(); w.listenLoop(listenCtx) }()
	}
	w.log.Printf("worker %s: queue %s, concurrency %d, batch %d", w.opts.Owner, strings.Join(w.queues, ", "),
		w.opts.Concurrency, w.opts.BatchSize)
	for i := 0; i < w.opts.Concurrency; i++ {
		go w.handlerLoop()
	}
	err := w.mainLoop()
	// The handler goroutines end; one still running a handler past the
	// shutdown ends when the handler returns (its result is ignored).
	close(w.readyCh)
	stopListen()
	wg.Wait()
	w.mu.Lock()
	if err == nil {
		err = w.fatal
	}
	w.mu.Unlock()
	w.log.Printf("worker %s stopped: %+v", w.opts.Owner, w.Stats())
	return err
}

func (w *Worker) listenLoop(ctx context.Context) {
	b := w.newBackoff()
	for ctx.Err() == nil {
		conn, err := w.connect(ctx, w.opts.ListenDSN)
		if err != nil && ctx.Err() == nil && classifyDB(err) == errFatal {
			w.stopFatal(err)
			return
		}
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+Channel)
			if err == nil {
				b.reset()
				w.notified("") // anything sent while nobody listened
				for {
					var n *pgconn.Notification
					n, err = conn.WaitForNotification(ctx)
					if err != nil {
						break
					}
					if n.Channel == Channel && w.serves(n.Payload) {
						w.notified(n.Payload)
					}
				}
			}
			conn.Close(context.Background())
		}
		if ctx.Err() != nil {
			return
		}
		d := b.next()
		w.log.Printf("listener connection lost (%v); reconnecting in %v", err, d.Round(time.Millisecond))
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
}

func (w *Worker) serves(queue string) bool {
	for _, q := range w.queues {
		if q == queue {
			return true
		}
	}
	return false
}

// notified: a notification named queue ("": maybe every queue); the main
// loop claims from it.
func (w *Worker) notified(queue string) {
	w.notifyMu.Lock()
	if queue == "" {
		w.notifyAll = true
	} else {
		w.notifyQs = append(w.notifyQs, queue)
	}
	w.notifyMu.Unlock()
	select {
	case w.notifyCh <- struct{}{}:
	default:
	}
}

// loop is the state of mainLoop, used only by its goroutine.
type loop struct {
	conn     *pgx.Conn
	held     map[int64]*held
	ready    []*held // taken back from readyCh at the shutdown, to be released
	pending  []result
	firstRes time.Time // when the oldest pending result came
	want     []bool    // per queue: it may have jobs to claim
	next     int       // the queue whose turn it is
	nextPoll time.Time
	canStack bool // jq_fail takes a stack trace (1.4), and the queue-first calls exist
	stopAt   time.Time
	// The earliest heartbeat or lease deadline of the held jobs, or
	// earlier (a job that left makes it early, never late): the held jobs
	// are looked at only when it has passed.
	nextTimer time.Time
}

func dbCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func (w *Worker) mainLoop() error {
	st := &loop{held: map[int64]*held{}, want: make([]bool, len(w.queues))}
	st.wantAll()
	b := w.newBackoff()
	stopping := false
	for {
		if !stopping {
			select {
			case <-w.stopCh: // also when stopped before the first claim
				stopping = true
			default:
			}
		}
		now := time.Now()
		if stopping && st.stopAt.IsZero() {
			st.stopAt = now.Add(w.opts.ShutdownTimeout)
			w.log.Printf("stopping: no more claims; %d jobs held, %v to finish", len(st.held), w.opts.ShutdownTimeout)
		}
		if !st.stopAt.IsZero() && len(st.held) == 0 {
			w.closeConn(st)
			return nil
		}
		done, err := w.step(st, now)
		if done {
			w.closeConn(st)
			return nil
		}
		if err != nil {
			class := classifyDB(err)
			if class == errFatal || class == errData {
				err = fatalError(err, w.queues)
				w.log.Printf("ERROR: %v", err)
				w.abandon(st, "shutdown")
				w.closeConn(st)
				return err
			}
			d := b.next()
			if class == errTransient && st.conn != nil && !st.conn.IsClosed() {
				// Rolled back, nothing changed: the same call again.
				w.count(func(s *Stats) { s.Retried++ })
				w.log.Printf("a call was rolled back (%v); %d jobs held; sending again in %v", err, len(st.held), d.Round(time.Millisecond))
			} else {
				w.closeConn(st)
				w.log.Printf("connection lost (%v); %d jobs held; reconnecting in %v", err, len(st.held), d.Round(time.Millisecond))
			}
			w.checkDeadlines(st, time.Now())
			if !st.stopAt.IsZero() {
				if time.Now().After(st.stopAt) {
					w.abandon(st, "shutdown") // the leases run out; the reaper gives the jobs back
					return nil
				}
				if left := time.Until(st.stopAt); left < d {
					d = left
				}
			}
			stopping = w.wait(st, d, stopping)
			continue
		}
		b.reset()
		if !time.Now().Before(st.nextTimer) {
			continue // the next step sends the heartbeats due and sets the timer again
		}
		if w.flushDue(st, time.Now()) {
			continue
		}
		if st.anyWant() && st.stopAt.IsZero() && w.claimSize(st, 0) > 0 {
			continue
		}
		until := st.nextPoll
		if !st.stopAt.IsZero() {
			until = st.stopAt
		}
		if len(st.pending) > 0 && st.firstRes.Add(w.opts.FlushInterval).Before(until) {
			until = st.firstRes.Add(w.opts.FlushInterval)
		}
		if st.nextTimer.Before(until) {
			until = st.nextTimer
		}
		d := time.Until(until)
		if d > w.opts.PollInterval {
			d = w.opts.PollInterval
		}
		stopping = w.wait(st, d, stopping)
	}
}

// wait for a result, a notification, the stop, or d.
func (w *Worker) wait(st *loop, d time.Duration, stopping bool) bool {
	if d < 0 {
		d = 0
	}
	t := time.NewTimer(d)
	defer t.Stop()
	stopCh := w.stopCh
	if stopping {
		stopCh = nil
	}
	select {
	case <-w.wakeCh:
		w.takeResults(st)
	case <-w.notifyCh:
		w.takeNotifications(st)
	case <-stopCh:
		return true
	case <-t.C:
	}
	return stopping
}

func (st *loop) wantAll() {
	for i := range st.want {
		st.want[i] = true
	}
}

func (st *loop) anyWant() bool {
	for _, v := range st.want {
		if v {
			return true
		}
	}
	return false
}

// pick: the next queue (in turn) that may have jobs; -1 if none.  When the
// poll interval has passed, every queue may.
func (st *loop) pick(now time.Time) int {
	if !now.Before(st.nextPoll) {
		st.wantAll()
	}
	for k := range st.want {
		if i := (st.next + k) % len(st.want); st.want[i] {
			return i
		}
	}
	return -1
}

// takeNotifications: the queues named by notifications may have jobs.
func (w *Worker) takeNotifications(st *loop) {
	w.notifyMu.Lock()
	if w.notifyAll {
		st.wantAll()
	}
	for _, q := range w.notifyQs {
		for i, name := range w.queues {
			if name == q {
				st.want[i] = true
			}
		}
	}
	w.notifyQs, w.notifyAll = w.notifyQs[:0], false
	w.notifyMu.Unlock()
}

func (w *Worker) closeConn(st *loop) {
	if st.conn != nil {
		st.conn.Close(context.Background())
		st.conn = nil
	}
}

// takeResults moves the handlers' results to st.pending.
func (w *Worker) takeResults(st *loop) {
	w.resMu.Lock()
	if len(w.resBuf) > 0 {
		if len(st.pending) == 0 {
			st.firstRes = w.resFirst
		}
		st.pending = append(st.pending, w.resBuf...)
		w.resBuf = w.resBuf[:0]
	}
	w.resMu.Unlock()
}

// setWakeAt: the handlers wake the main loop when this many results are
// there (a batch, or every held job; 1 when stopping).
func (w *Worker) setWakeAt(st *loop) {
	n := int64(w.opts.BatchSize)
	if int64(len(st.held)) < n {
		n = int64(len(st.held))
	}
	if !st.stopAt.IsZero() || n < 1 {
		n = 1
	}
	atomic.StoreInt64(&w.wakeAt, n)
}

func (w *Worker) handlerLoop() {
	for h := range w.readyCh {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					err = &panicError{value: p, stack: debug.Stack()}
				}
			}()
			err = w.opts.Handler(h.ctx, h.job)
		}()
		w.resMu.Lock()
		if len(w.resBuf) == 0 {
			w.resFirst = time.Now()
		}
		w.resBuf = append(w.resBuf, result{h, err})
		n := int64(len(w.resBuf))
		w.resMu.Unlock()
		if n == 1 || n >= atomic.LoadInt64(&w.wakeAt) {
			select {
			case w.wakeCh <- struct{}{}:
			default:
			}
		}
	}
}

// flushDue: results are sent in batches, when BatchSize of them are
// ready, every held job is finished, or the oldest waited FlushInterval.
func (w *Worker) flushDue(st *loop, now time.Time) bool {
	n := len(st.pending)
	return n > 0 && (n >= w.opts.BatchSize || n >= len(st.held) || !st.stopAt.IsZero() ||
		!now.Before(st.firstRes.Add(w.opts.FlushInterval)))
}

// claimSize: none while enough jobs wait for a handler; a whole batch once
// there is room for one; less only when the handlers would run out and no
// results wait to be sent (those go with the next claim, within
// FlushInterval: a claim of its own would cost a round trip).
// finishing: held jobs whose completion goes in the same call.
func (w *Worker) claimSize(st *loop, finishing int) int {
	ready := len(w.readyCh)
	if ready >= w.opts.Concurrency {
		return 0
	}
	room := w.opts.BatchSize + w.opts.Concurrency - (len(st.held) - finishing)
	if room < w.opts.BatchSize && (ready > 0 || (finishing == 0 && len(st.pending) > 0)) {
		return 0
	}
	if room > w.opts.BatchSize {
		room = w.opts.BatchSize
	}
	if room < 0 {
		return 0
	}
	return room
}

// step: one round of database work.  done: the shutdown is complete.
func (w *Worker) step(st *loop, now time.Time) (done bool, err error) {
	// Collect finished handlers without waiting.
	w.takeResults(st)
	if st.conn == nil || st.conn.IsClosed() {
		ctx, cancel := dbCtx()
		st.conn, err = w.connect(ctx, w.dsn)
		if err == nil {
			err = w.checkExtension(ctx, st)
			if err != nil {
				st.conn.Close(context.Background())
			}
		}
		cancel()
		if err != nil {
			st.conn = nil
			return false, err
		}
	}
	if w.flushDue(st, now) {
		if err := w.flush(st, st.stopAt.IsZero()); err != nil {
			return false, err
		}
	}
	if !now.Before(st.nextTimer) {
		if err := w.heartbeats(st, now); err != nil {
			return false, err
		}
	}
	if !st.stopAt.IsZero() {
		// The jobs no handler took are released.
		for taken := true; taken; {
			select {
			case h := <-w.readyCh:
				st.ready = append(st.ready, h)
			default:
				taken = false
			}
		}
		for len(st.ready) > 0 {
			if err := w.release(st, st.ready[0]); err != nil {
				return false, err
			}
			st.ready = st.ready[1:]
		}
		if len(st.held) == 0 {
			return true, nil
		}
		if time.Now().After(st.stopAt) {
			if err := w.flush(st, false); err != nil {
				return false, err
			}
			for _, h := range st.held {
				w.abort(h, "shutdown")
				w.log.Printf("job %d did not finish within the shutdown timeout; releasing", h.job.ID)
				if err := w.release(st, h); err != nil {
					return false, err
				}
			}
			return true, nil
		}
		return false, nil
	}
	if err := w.claim(st, now); err != nil {
		return false, err
	}
	return false, nil
}

// checkExtension: the database has the extension (else an error no retry
// fixes), and whether its jq_fail takes a stack trace.
func (w *Worker) checkExtension(ctx context.Context, st *loop) error {
	err := st.conn.QueryRow(ctx, sqlCheckExtension).Scan(&st.canStack)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNoExtension
	}
	return err
}

func (w *Worker) claim(st *loop, now time.Time) error {
	qi := st.pick(now)
	if qi < 0 {
		return nil
	}
	n := w.claimSize(st, 0)
	if n <= 0 {
		return nil
	}
	ctx, cancel := dbCtx()
	defer cancel()
	var jobs []byte
	if err := st.conn.QueryRow(ctx, sqlClaim, w.queues[qi], n, w.opts.Owner).Scan(&jobs); err != nil {
		// A claim that failed (also in its commit) claimed nothing.
		return err
	}
	return w.claimed(st, qi, jobs, n)
}

// claimed takes the jobs of a claim of n from queue qi (jq_claim or
// jq_complete_and_claim): jobs is the JSON text of sqlJobsJSON, nil when
// none came.
func (w *Worker) claimed(st *loop, qi int, jobs []byte, n int) error {
	st.want[qi] = false
	st.next = (qi + 1) % len(w.queues)
	var rows [][jobFields][]byte
	if jobs != nil {
		var err error
		if rows, err = splitJobs(jobs); err != nil {
			return err
		}
	}
	now := time.Now()
	claimed := make([]*held, 0, len(rows))
	for i := range rows {
		j, lease, err := parseJob(w.queues[qi], &rows[i])
		if err != nil {
			return fmt.Errorf("jobqueue: the jobs of a claim: %w", err)
		}
		if lease < time.Millisecond {
			lease = time.Millisecond
		}
		hctx, hcancel := context.WithCancel(context.Background())
		claimed = append(claimed, &held{job: j, ctx: hctx, cancel: hcancel, deadline: now.Add(lease),
			nextHb: now.Add(time.Duration(float64(lease) * w.opts.HeartbeatFraction))})
	}
	st.nextPoll = time.Now().Add(w.opts.PollInterval)
	for _, h := range claimed {
		st.held[h.job.ID] = h
		if h.nextHb.Before(st.nextTimer) || st.nextTimer.IsZero() {
			st.nextTimer = h.nextHb
		}
	}
	w.setWakeAt(st)
	for _, h := range claimed {
		w.readyCh <- h // room: at most BatchSize + Concurrency are held
	}
	w.count(func(s *Stats) { s.Claimed += int64(len(claimed)) })
	if len(claimed) == n {
		st.want[qi] = true
	}
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// flush sends the results: failures with jq_fail, then the completions.
// With claim (and room for a claim) the completions and the next claim go
// in one call, jq_complete_and_claim; else (and for jobs whose lease the
// worker saw lost) jq_complete_many, which says which were refused.
func (w *Worker) flush(st *loop, claim bool) error {
	if len(st.pending) == 0 {
		return nil
	}
	ctx, cancel := dbCtx()
	defer cancel()
	var ok, lost []result
	for len(st.pending) > 0 {
		r := st.pending[0]
		if r.err == nil {
			st.pending = st.pending[1:]
			if r.h.aborted {
				lost = append(lost, r)
			} else {
				ok = append(ok, r)
			}
			continue
		}
		f := classify(r.err)
		status, err := w.fail(ctx, st, r.h, f)
		if err != nil {
			st.pending = append(append(ok, lost...), st.pending...)
			return err
		}
		st.pending = st.pending[1:]
		w.finished(st, r)
		w.logFailure(r.h.job, f, status)
	}
	if len(lost) > 0 {
		if err := w.completeMany(ctx, st, lost); err != nil {
			st.pending = append(lost, ok...)
			return err
		}
	}
	if len(ok) == 0 {
		return nil
	}
	n, qi := 0, -1
	if claim {
		if qi = st.pick(time.Now()); qi >= 0 {
			n = w.claimSize(st, len(ok))
		}
	}
	var err error
	if n > 0 {
		err = w.completeAndClaim(ctx, st, ok, qi, n)
	} else {
		err = w.completeMany(ctx, st, ok)
	}
	if err != nil {
		// Not sent: again, on this or the next connection (except those
		// already finished one at a time).
		st.pending = st.pending[:0]
		for _, r := range ok {
			if st.held[r.h.job.ID] == r.h {
				st.pending = append(st.pending, r)
			}
		}
	}
	return err
}

// fail sends jq_fail for a handler's failure; the new status, nil when
// refused (the lease was lost).
func (w *Worker) fail(ctx context.Context, st *loop, h *held, f failure) (*string, error) {
	var retryIn interface{}
	if f.retryIn != nil {
		retryIn = seconds(*f.retryIn)
	}
	var status *string
	var err error
	if st.canStack {
		var stack interface{}
		if f.stack != "" {
			stack = f.stack
		}
		err = st.conn.QueryRow(ctx, sqlFailStackQ, h.job.Queue, h.job.ID, h.job.Token, f.code,
			f.message, f.retryable, retryIn, stack).Scan(&status)
	} else {
		err = st.conn.QueryRow(ctx, sqlFail, h.job.ID, h.job.Token, f.code, f.message,
			f.retryable, retryIn).Scan(&status)
	}
	return status, err
}

// logFailure: a handler's failure, at WARNING, with its stack trace.
func (w *Worker) logFailure(j *Job, f failure, status *string) {
	if status == nil {
		w.count(func(s *Stats) { s.Fenced++ })
		w.log.Printf("WARNING: job %d (queue %s) attempt %d failed (%s: %s); the failure was refused (lease lost)\n%s",
			j.ID, j.Queue, j.Attempt, f.code, f.message, f.stack)
		return
	}
	w.count(func(s *Stats) { s.Failed++ })
	w.log.Printf("WARNING: job %d (queue %s) attempt %d failed (%s: %s): now %s\n%s",
		j.ID, j.Queue, j.Attempt, f.code, f.message, *status, f.stack)
}

func (w *Worker) finished(st *loop, r result) {
	delete(st.held, r.h.job.ID)
	r.h.cancel()
	w.setWakeAt(st)
}

// completionArgs: ids, tokens and results (nil when every result is nil).
func completionArgs(rs []result) ([]int64, []int64, []*string) {
	ids := make([]int64, len(rs))
	tokens := make([]int64, len(rs))
	values := make([]*string, len(rs))
	any := false
	for i, r := range rs {
		ids[i], tokens[i] = r.h.job.ID, r.h.job.Token
		r.h.job.mu.Lock()
		values[i] = r.h.job.result
		r.h.job.mu.Unlock()
		if values[i] != nil {
			any = true
		}
	}
	if !any {
		values = nil
	}
	return ids, tokens, values
}

// refusedData: the call failed on a value it carried, and it carried
// results (the data of one job, or more): the jobs are then completed one
// at a time.
func refusedData(err error, values []*string) bool {
	return values != nil && classifyDB(err) == errData
}

// completeMany completes with jq_complete_many, which returns the ids
// completed: the others were refused (fenced).  With the queue-first call,
// one call per queue.
func (w *Worker) completeMany(ctx context.Context, st *loop, rs []result) error {
	if st.canStack {
		for i := 1; i < len(rs); i++ {
			if rs[i].h.job.Queue != rs[0].h.job.Queue {
				return w.completeManyByQueue(ctx, st, rs)
			}
		}
	}
	ids, tokens, values := completionArgs(rs)
	var rows pgx.Rows
	var err error
	if st.canStack {
		rows, err = st.conn.Query(ctx, sqlCompleteManyQ, rs[0].h.job.Queue, ids, tokens, values)
	} else {
		rows, err = st.conn.Query(ctx, sqlCompleteMany, ids, tokens, values)
	}
	if err != nil {
		return err
	}
	completed := make(map[int64]bool, len(rs))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		completed[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		if refusedData(err, values) && len(rs) > 1 {
			return w.completeOneByOne(ctx, st, rs)
		}
		return err
	}
	for _, r := range rs {
		w.finished(st, r)
		if completed[r.h.job.ID] {
			w.count(func(s *Stats) { s.Completed++ })
		} else {
			w.count(func(s *Stats) { s.Fenced++ })
			w.log.Printf("job %d: completion refused (lease lost)", r.h.job.ID)
		}
	}
	return nil
}

// completeManyByQueue: completeMany for each queue of rs in turn.
func (w *Worker) completeManyByQueue(ctx context.Context, st *loop, rs []result) error {
	var order []string
	byQueue := make(map[string][]result)
	for _, r := range rs {
		q := r.h.job.Queue
		if _, ok := byQueue[q]; !ok {
			order = append(order, q)
		}
		byQueue[q] = append(byQueue[q], r)
	}
	for _, q := range order {
		if err := w.completeMany(ctx, st, byQueue[q]); err != nil {
			return err
		}
	}
	return nil
}

// completeAndClaim completes these jobs and claims up to n more, in one
// call.  The call does not say which completions were refused (a job
// cancelled or reaped without the worker seeing it): all count as
// completed.
func (w *Worker) completeAndClaim(ctx context.Context, st *loop, rs []result, qi, n int) error {
	ids, tokens, values := completionArgs(rs)
	var jobs []byte
	if err := st.conn.QueryRow(ctx, sqlCompleteAndClaim, w.queues[qi], ids, tokens, n, w.opts.Owner, values).Scan(&jobs); err != nil {
		if refusedData(err, values) {
			return w.completeOneByOne(ctx, st, rs)
		}
		return err
	}
	// The completions are done: they leave st.held before the jobs
	// claimed come in.
	for _, r := range rs {
		w.finished(st, r)
	}
	if err := w.claimed(st, qi, jobs, n); err != nil {
		return err
	}
	w.count(func(s *Stats) { s.Completed += int64(len(rs)) })
	w.combined++
	w.combinedJobs += int64(len(rs))
	return nil
}

// completeOneByOne: the server refused a result of the batch (larger than
// jobqueue.max_result_size, or a value jsonb cannot hold such as
// "\u0000"; the call failed and changed nothing).  The jobs are completed
// one at a time, and the ones whose result is refused fail, permanently
// (the same result would be refused at every attempt): RESULT_TOO_LARGE
// or RESULT_INVALID, with the server's message.
func (w *Worker) completeOneByOne(ctx context.Context, st *loop, rs []result) error {
	for i, r := range rs {
		err := w.completeMany(ctx, st, rs[i:i+1])
		if err == nil {
			continue
		}
		if classifyDB(err) != errData {
			return err
		}
		f := failure{code: "RESULT_INVALID", message: cleanText(err.Error()), retryable: false}
		if sqlState(err) == "54000" {
			f.code = "RESULT_TOO_LARGE"
		}
		status, ferr := w.fail(ctx, st, r.h, f)
		if ferr != nil {
			return ferr
		}
		w.finished(st, r)
		w.logFailure(r.h.job, f, status)
	}
	return nil
}

// heartbeats sends the heartbeats that are due, cancels the jobs whose
// lease ran out, and sets st.nextTimer.
func (w *Worker) heartbeats(st *loop, now time.Time) error {
	w.checkDeadlines(st, now)
	next := now.Add(w.opts.PollInterval)
	defer func() { st.nextTimer = next }()
	for _, h := range st.held {
		if h.aborted || h.nextHb.After(now) {
			continue
		}
		ctx, cancel := dbCtx()
		var remaining *float64
		var err error
		if st.canStack {
			err = st.conn.QueryRow(ctx, sqlHeartbeatQ, h.job.Queue, h.job.ID, h.job.Token).Scan(&remaining)
		} else {
			err = st.conn.QueryRow(ctx, sqlHeartbeat, h.job.ID, h.job.Token).Scan(&remaining)
		}
		cancel()
		if err != nil {
			return err
		}
		t := time.Now()
		if remaining == nil {
			w.count(func(s *Stats) { s.Lost++ })
			w.log.Printf("job %d: heartbeat refused, lease lost; cancelling", h.job.ID)
			w.abort(h, "lease lost")
			continue
		}
		w.count(func(s *Stats) { s.Heartbeats++ })
		lease := time.Duration(*remaining * float64(time.Second))
		h.deadline = t.Add(lease)
		h.nextHb = t.Add(time.Duration(float64(lease) * w.opts.HeartbeatFraction))
	}
	for _, h := range st.held {
		if !h.aborted && h.nextHb.Before(next) {
			next = h.nextHb
		}
		if !h.aborted && h.deadline.Before(next) {
			next = h.deadline
		}
	}
	return nil
}

func (w *Worker) checkDeadlines(st *loop, now time.Time) {
	for _, h := range st.held {
		if !h.aborted && now.After(h.deadline) {
			w.count(func(s *Stats) { s.Lost++ })
			w.log.Printf("job %d: lease expired before a heartbeat got through; cancelling", h.job.ID)
			w.abort(h, "lease lost")
		}
	}
}

func (w *Worker) abort(h *held, reason string) {
	if h.aborted {
		return
	}
	h.aborted = true
	h.job.mu.Lock()
	h.job.reason = reason
	h.job.mu.Unlock()
	h.cancel()
}

func (w *Worker) abandon(st *loop, reason string) {
	for _, h := range st.held {
		w.abort(h, reason)
	}
}

func (w *Worker) release(st *loop, h *held) error {
	ctx, cancel := dbCtx()
	defer cancel()
	var ok bool
	var err error
	if st.canStack {
		err = st.conn.QueryRow(ctx, sqlReleaseQ, h.job.Queue, h.job.ID, h.job.Token).Scan(&ok)
	} else {
		err = st.conn.QueryRow(ctx, sqlRelease, h.job.ID, h.job.Token).Scan(&ok)
	}
	if err != nil {
		return err
	}
	delete(st.held, h.job.ID)
	h.cancel()
	if ok {
		w.count(func(s *Stats) { s.Released++ })
	} else {
		w.count(func(s *Stats) { s.Fenced++ })
	}
	return nil
}
