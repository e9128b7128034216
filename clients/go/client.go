// Package jobqueue is the Go client of the jobqueue PostgreSQL extension: a
// producer (Client) and a worker (Worker) on pgx v4.  Every call is one of
// the extension's SQL functions (jobqueue.jq_*).
package jobqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgconn/stmtcache"
	"github.com/jackc/pgx/v4"
	"github.com/jackc/pgx/v4/pgxpool"
)

// Querier is what Enqueue needs from a connection: a pgx.Tx, *pgx.Conn or
// *pgxpool.Pool.
type Querier interface {
	Query(ctx context.Context, sql string, args ...interface{}) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...interface{}) pgx.Row
}

// Client enqueues jobs through a small pool of connections.
type Client struct {
	Pool *pgxpool.Pool
	q    Querier // set by In
}

// In returns a Client whose calls (Enqueue, EnqueueMany, Cancel, Retry,
// RetryDead, Job, ...; not Wait) go through q, such as the caller's pgx.Tx:
// they take effect if and only if that transaction commits.
func (c *Client) In(q Querier) *Client { return &Client{Pool: c.Pool, q: q} }

// EnqueueOptions are the options of jq_enqueue; the zero value means the
// defaults.  Tx: enqueue in the caller's transaction (the job exists if
// and only if it commits) instead of on the client's pool.
type EnqueueOptions struct {
	Priority       int
	RunAt          time.Time // zero: ready now
	MaxAttempts    int       // 0: the queue's
	IdempotencyKey string    // "": none
	GroupKey       string    // "": none (Enqueue)
	GroupKeys      []string  // EnqueueMany: one per payload ("": none), or nil
	DependsOn      []int64   // the job(s) wait until these have succeeded
	// Debounce (Enqueue): replace the pending, never claimed job of
	// DebounceKey ("": none), moved to now + Debounce, never past the
	// key's first call + DebounceMaxWait (0: no bound).
	DebounceKey     string
	Debounce        time.Duration
	DebounceMaxWait time.Duration
	StartBy         time.Time // zero: the queue's max_wait, if any; not claimed by then, the job never runs
	Cost            float64   // 0: measured; the job's declared cost for fair share
	Tx              Querier
}

// QueuePolicy is the policy of jq_create_queue and jq_alter_queue: every
// argument of theirs.  A nil field is not sent (jq_create_queue: the
// extension's default; jq_alter_queue: left as it is); a set field is sent
// as it is, zero included: Retention: Duration(0) keeps no history,
// AlterQueue's GroupConcurrency: Int(0) removes the limit.  Int, Duration,
// Bool, Float and String make the pointers.
type QueuePolicy struct {
	MaxAttempts       *int
	LeaseDuration     *time.Duration
	MaxRuntime        *time.Duration
	BackoffBase       *time.Duration
	BackoffMax        *time.Duration
	Retention         *time.Duration
	Notify            *bool // AlterQueue only: the wake-up notifications
	NotifyFinished    *bool
	GroupConcurrency  *int
	GroupOrdered      *bool
	Fairness          *string // "priority" or "round_robin"
	PriorityAging     *time.Duration
	RateLimit         *float64 // jobs started per second
	RateBurst         *int
	GroupRateLimit    *float64 // per group without an override
	GroupRateBurst    *int
	MaxWait           *time.Duration // a job not claimed within it of becoming available expires
	MaxPending        *int           // admission limits: beyond them an enqueue fails with 53400
	GroupMaxPending   *int
	FairShareHalfLife *time.Duration
}

// Int returns a pointer to v (for QueuePolicy).
func Int(v int) *int { return &v }

// Duration returns a pointer to d (for QueuePolicy).
func Duration(d time.Duration) *time.Duration { return &d }

// Bool returns a pointer to v (for QueuePolicy).
func Bool(v bool) *bool { return &v }

// Float returns a pointer to v (for QueuePolicy).
func Float(v float64) *float64 { return &v }

// String returns a pointer to v (for QueuePolicy).
func String(v string) *string { return &v }

// describeCache keeps pgx from creating named prepared statements: it
// caches statement descriptions and runs every query as an unnamed
// statement, which works behind PgBouncer in transaction pooling mode.
func describeCache(conn *pgconn.PgConn) stmtcache.Cache {
	return stmtcache.New(conn, stmtcache.ModeDescribe, 512)
}

// ConnConfig parses dsn for pgx with the statement cache in describe mode
// (unless the dsn sets statement_cache_mode or statement_cache_capacity).
func ConnConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(dsn, "statement_cache_") {
		cfg.BuildStatementCache = describeCache
	}
	return cfg, nil
}

// NewClient connects a pool (pgxpool settings such as pool_max_conns may
// be given in dsn).
func NewClient(ctx context.Context, dsn string) (*Client, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(dsn, "statement_cache_") {
		cfg.ConnConfig.BuildStatementCache = describeCache
	}
	pool, err := pgxpool.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{Pool: pool}, nil
}

// Close closes the pool.
func (c *Client) Close() { c.Pool.Close() }

func jsonText(payload interface{}) (string, error) {
	switch p := payload.(type) {
	case json.RawMessage:
		return string(p), nil
	case []byte:
		return string(p), nil
	}
	b, err := json.Marshal(payload)
	return string(b), err
}

func (c *Client) db(opts *EnqueueOptions) Querier {
	if opts != nil && opts.Tx != nil {
		return opts.Tx
	}
	if c.q != nil {
		return c.q
	}
	return c.Pool
}

func nullable(v interface{}, isNull bool) interface{} {
	if isNull {
		return nil
	}
	return v
}

// EnqueueArgs are the parameters of jq_enqueue for one job.
func EnqueueArgs(queue string, payload interface{}, opts *EnqueueOptions) ([]interface{}, error) {
	text, err := jsonText(payload)
	if err != nil {
		return nil, fmt.Errorf("jobqueue: payload: %w", err)
	}
	var o EnqueueOptions
	if opts != nil {
		o = *opts
	}
	return []interface{}{queue, text, o.Priority, nullable(o.RunAt, o.RunAt.IsZero()),
		nullable(o.MaxAttempts, o.MaxAttempts == 0), nullable(o.IdempotencyKey, o.IdempotencyKey == ""),
		nullable(o.DependsOn, o.DependsOn == nil), nullable(o.GroupKey, o.GroupKey == ""),
		nullable(o.DebounceKey, o.DebounceKey == ""),
		nullable(seconds(o.Debounce), o.Debounce == 0 || o.DebounceKey == ""),
		nullable(seconds(o.DebounceMaxWait), o.DebounceMaxWait == 0),
		nullable(o.StartBy, o.StartBy.IsZero()), nullable(o.Cost, o.Cost == 0)}, nil
}

// Enqueue adds one job and returns its id (the existing job's id for a
// known idempotency key).  opts may be nil.
func (c *Client) Enqueue(ctx context.Context, queue string, payload interface{}, opts *EnqueueOptions) (int64, error) {
	args, err := EnqueueArgs(queue, payload, opts)
	if err != nil {
		return 0, err
	}
	var id int64
	err = c.db(opts).QueryRow(ctx,
		"SELECT jobqueue.jq_enqueue($1, $2::jsonb, priority => $3::int, run_at => $4::timestamptz, "+
			"max_attempts => $5::int, idempotency_key => $6::text, depends_on => $7::bigint[], group_key => $8::text, "+
			"debounce_key => $9::text, debounce => $10::interval, debounce_max_wait => $11::interval, "+
			"start_by => $12::timestamptz, cost => $13::float8)",
		args...).Scan(&id)
	return id, err
}

// EnqueueMany adds one job per payload in one statement and returns the
// ids in order (Priority, RunAt and DependsOn of opts apply to all; GroupKeys per job).
func (c *Client) EnqueueMany(ctx context.Context, queue string, payloads []interface{}, opts *EnqueueOptions) ([]int64, error) {
	texts := make([]string, len(payloads))
	for i, p := range payloads {
		t, err := jsonText(p)
		if err != nil {
			return nil, fmt.Errorf("jobqueue: payload %d: %w", i, err)
		}
		texts[i] = t
	}
	var o EnqueueOptions
	if opts != nil {
		o = *opts
	}
	var groups interface{}
	if o.GroupKeys != nil {
		keys := make([]*string, len(o.GroupKeys))
		for i := range o.GroupKeys {
			if o.GroupKeys[i] != "" {
				keys[i] = &o.GroupKeys[i]
			}
		}
		groups = keys
	}
	rows, err := c.db(opts).Query(ctx,
		"SELECT id FROM jobqueue.jq_enqueue_many($1, $2::text[]::jsonb[], priority => $3::int, run_at => $4::timestamptz, "+
			"depends_on => $5::bigint[], group_keys => $6::text[], start_by => $7::timestamptz, cost => $8::float8) AS id",
		queue, texts, o.Priority, nullable(o.RunAt, o.RunAt.IsZero()), nullable(o.DependsOn, o.DependsOn == nil), groups,
		nullable(o.StartBy, o.StartBy.IsZero()), nullable(o.Cost, o.Cost == 0))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ids := make([]int64, 0, len(payloads))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// CreateQueue runs jq_create_queue; an existing queue is left as it is.
func (c *Client) CreateQueue(ctx context.Context, queue string, p QueuePolicy) error {
	if p.Notify != nil {
		return errors.New("jobqueue: QueuePolicy.Notify applies to AlterQueue only")
	}
	return c.queueCall(ctx, "jq_create_queue", queue, p)
}

// AlterQueue runs jq_alter_queue: the fields set change, the others stay.
func (c *Client) AlterQueue(ctx context.Context, queue string, p QueuePolicy) error {
	return c.queueCall(ctx, "jq_alter_queue", queue, p)
}

func (c *Client) queueCall(ctx context.Context, fn, queue string, p QueuePolicy) error {
	args := []interface{}{queue}
	sql := "SELECT jobqueue." + fn + "($1"
	add := func(name string, v interface{}, cast string) {
		args = append(args, v)
		sql += fmt.Sprintf(", %s => $%d::%s", name, len(args), cast)
	}
	ints := []struct {
		name string
		v    *int
	}{{"max_attempts", p.MaxAttempts}, {"group_concurrency", p.GroupConcurrency}, {"rate_burst", p.RateBurst},
		{"group_rate_burst", p.GroupRateBurst}, {"max_pending", p.MaxPending}, {"group_max_pending", p.GroupMaxPending}}
	for _, iv := range ints {
		if iv.v != nil {
			add(iv.name, *iv.v, "int")
		}
	}
	durations := []struct {
		name string
		d    *time.Duration
	}{{"lease_duration", p.LeaseDuration}, {"max_runtime", p.MaxRuntime}, {"backoff_base", p.BackoffBase},
		{"backoff_max", p.BackoffMax}, {"retention", p.Retention}, {"priority_aging", p.PriorityAging},
		{"max_wait", p.MaxWait}, {"fair_share_half_life", p.FairShareHalfLife}}
	for _, iv := range durations {
		if iv.d != nil {
			add(iv.name, seconds(*iv.d), "interval")
		}
	}
	bools := []struct {
		name string
		v    *bool
	}{{"notify", p.Notify}, {"notify_finished", p.NotifyFinished}, {"group_ordered", p.GroupOrdered}}
	for _, bv := range bools {
		if bv.v != nil {
			add(bv.name, *bv.v, "boolean")
		}
	}
	if p.Fairness != nil {
		add("fairness", *p.Fairness, "text")
	}
	if p.RateLimit != nil {
		add("rate_limit", *p.RateLimit, "float8")
	}
	if p.GroupRateLimit != nil {
		add("group_rate_limit", *p.GroupRateLimit, "float8")
	}
	var ignored string
	err := c.db(nil).QueryRow(ctx, sql+")::text", args...).Scan(&ignored)
	return err
}

// seconds is d as an interval literal.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%f seconds", d.Seconds())
}
