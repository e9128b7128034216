// Package jobqueue is the Go client of the jobqueue PostgreSQL extension: a
// producer (Client) and a worker (Worker) on pgx v4.  Every call is one of
// the extension's SQL functions (jobqueue.jq_*).
package jobqueue

import (
	"context"
	"encoding/json"
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
}

// EnqueueOptions are the options of jq_enqueue; the zero value means the
// defaults.  Tx: enqueue in the caller's transaction (the job exists if
// and only if it commits) instead of on the client's pool.
type EnqueueOptions struct {
	Priority       int
	RunAt          time.Time // zero: ready now
	MaxAttempts    int       // 0: the queue's
	IdempotencyKey string    // "": none
	Tx             Querier
}

// QueuePolicy is the policy of jq_create_queue; zero fields take the
// extension's defaults.
type QueuePolicy struct {
	MaxAttempts   int
	LeaseDuration time.Duration
	MaxRuntime    time.Duration
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	Retention     time.Duration
}

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
		nullable(o.MaxAttempts, o.MaxAttempts == 0), nullable(o.IdempotencyKey, o.IdempotencyKey == "")}, nil
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
			"max_attempts => $5::int, idempotency_key => $6::text)", args...).Scan(&id)
	return id, err
}

// EnqueueMany adds one job per payload in one statement and returns the
// ids in order (Priority and RunAt of opts apply to all).
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
	rows, err := c.db(opts).Query(ctx,
		"SELECT id FROM jobqueue.jq_enqueue_many($1, $2::text[]::jsonb[], priority => $3::int, run_at => $4::timestamptz) AS id",
		queue, texts, o.Priority, nullable(o.RunAt, o.RunAt.IsZero()))
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
	args := []interface{}{queue}
	sql := "SELECT jobqueue.jq_create_queue($1"
	add := func(name string, v interface{}, cast string) {
		args = append(args, v)
		sql += fmt.Sprintf(", %s => $%d::%s", name, len(args), cast)
	}
	if p.MaxAttempts != 0 {
		add("max_attempts", p.MaxAttempts, "int")
	}
	for _, iv := range []struct {
		name string
		d    time.Duration
	}{{"lease_duration", p.LeaseDuration}, {"max_runtime", p.MaxRuntime}, {"backoff_base", p.BackoffBase},
		{"backoff_max", p.BackoffMax}, {"retention", p.Retention}} {
		if iv.d != 0 {
			add(iv.name, seconds(iv.d), "interval")
		}
	}
	_, err := c.Pool.Exec(ctx, sql+")", args...)
	return err
}

// seconds is d as an interval literal.
func seconds(d time.Duration) string {
	return fmt.Sprintf("%f seconds", d.Seconds())
}
