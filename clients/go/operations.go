package jobqueue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgconn"
	"github.com/jackc/pgx/v4"
)

// ErrJobNotFound: jq_job has no row for the id (unknown, purged, or deleted
// when it succeeded in a queue that keeps no history).
var ErrJobNotFound = errors.New("jobqueue: no such job")

// JobInfo is a job as jq_job shows it.
type JobInfo struct {
	ID            int64
	Queue         string
	Status        string // waiting, pending, running, succeeded, dead, cancelled
	Attempt       int
	MaxAttempts   int
	Priority      int
	Result        json.RawMessage // nil: none
	Progress      json.RawMessage
	LastErrorCode string
	Errors        []JobError // the failure and replay history, oldest first
	CreatedAt     time.Time
	AvailableAt   time.Time
	StartedAt     *time.Time
	FinishedAt    *time.Time
	WaitingFor    []int64 // dependencies that have not succeeded
}

// Finished: succeeded, dead or cancelled.
func (j *JobInfo) Finished() bool {
	return j.Status == "succeeded" || j.Status == "dead" || j.Status == "cancelled"
}

// JobError is an entry of a job's error history: a failure (Code,
// Message, Retryable, Owner, Attempt, Stack since 1.4) or an event
// ("replay", "dependency_failed").
type JobError struct {
	At        time.Time       `json:"at"`
	Attempt   int             `json:"attempt"`
	Code      string          `json:"code"`
	Message   string          `json:"message"`
	Retryable *bool           `json:"retryable"`
	Owner     string          `json:"owner"`
	Stack     string          `json:"stack"`
	Event     string          `json:"event"`
	Detail    json.RawMessage `json:"detail"`
}

const sqlJobColumns = "id, queue_name, status::text, attempt, max_attempts, priority, result::text, progress::text, " +
	"last_error_code, errors::text, created_at, available_at, started_at, finished_at, waiting_for"

func scanJob(row pgx.Row) (*JobInfo, error) {
	var j JobInfo
	var result, progress, code, errs *string
	if err := row.Scan(&j.ID, &j.Queue, &j.Status, &j.Attempt, &j.MaxAttempts, &j.Priority, &result, &progress,
		&code, &errs, &j.CreatedAt, &j.AvailableAt, &j.StartedAt, &j.FinishedAt, &j.WaitingFor); err != nil {
		return nil, err
	}
	if result != nil {
		j.Result = json.RawMessage(*result)
	}
	if progress != nil {
		j.Progress = json.RawMessage(*progress)
	}
	if code != nil {
		j.LastErrorCode = *code
	}
	if errs != nil {
		if err := json.Unmarshal([]byte(*errs), &j.Errors); err != nil {
			return nil, fmt.Errorf("jobqueue: the error history of job %d: %w", j.ID, err)
		}
	}
	return &j, nil
}

// Job returns the job (jq_job), or ErrJobNotFound.
func (c *Client) Job(ctx context.Context, id int64) (*JobInfo, error) {
	j, err := scanJob(c.db(nil).QueryRow(ctx, "SELECT "+sqlJobColumns+" FROM jobqueue.jq_job($1::bigint)", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrJobNotFound
	}
	return j, err
}

// WaitOptions: PollInterval is the longest time between two looks at the
// job (default 2 s).
type WaitOptions struct {
	PollInterval time.Duration
}

// Wait returns the job once it has finished (succeeded, dead or
// cancelled), or ctx's error (give it a deadline for a timeout).  It
// listens on channel jobqueue_finished (announced by queues with
// notify_finished) on a connection of the pool, looks at the job, and
// looks again at each notification that names it, or after a poll
// interval that grows from 50 ms to PollInterval (queues that do not
// announce).  A job that succeeds in a queue that keeps no history is
// deleted: Wait then returns a JobInfo with only ID and Status, from the
// notification (without one, ErrJobNotFound).  Wait does not use a
// Querier given with In.
func (c *Client) Wait(ctx context.Context, id int64, opts *WaitOptions) (*JobInfo, error) {
	max := 2 * time.Second
	if opts != nil && opts.PollInterval > 0 {
		max = opts.PollInterval
	}
	conn, err := c.Pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	listening := false
	defer func() {
		if listening {
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, err := conn.Exec(uctx, "UNLISTEN "+FinishedChannel); err != nil {
				_ = conn.Conn().Close(uctx) // not given back with a LISTEN on
			}
			cancel()
		}
		conn.Release()
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+FinishedChannel); err != nil {
		return nil, err
	}
	listening = true
	prefix := strconv.FormatInt(id, 10) + " "
	interval := 50 * time.Millisecond
	for {
		j, err := scanJob(conn.QueryRow(ctx, "SELECT "+sqlJobColumns+" FROM jobqueue.jq_job($1::bigint)", id))
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, ErrJobNotFound
		}
		if err != nil {
			return nil, err
		}
		if j.Finished() {
			return j, nil
		}
		for look := false; !look; {
			wctx, cancel := context.WithTimeout(ctx, interval)
			n, err := conn.Conn().WaitForNotification(wctx)
			cancel()
			switch {
			case err == nil:
				if n.Channel == FinishedChannel && strings.HasPrefix(n.Payload, prefix) {
					if status := strings.TrimPrefix(n.Payload, prefix); status == "succeeded" {
						// In a queue without history the job is gone now.
						if j, err := c.jobOn(ctx, conn.Conn(), id); err == nil || !errors.Is(err, ErrJobNotFound) {
							return j, err
						}
						return &JobInfo{ID: id, Status: status}, nil
					}
					look = true
				}
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err):
				look = true
				if interval *= 2; interval > max {
					interval = max
				}
			default:
				listening = false
				return nil, err
			}
		}
	}
}

func (c *Client) jobOn(ctx context.Context, q Querier, id int64) (*JobInfo, error) {
	j, err := scanJob(q.QueryRow(ctx, "SELECT "+sqlJobColumns+" FROM jobqueue.jq_job($1::bigint)", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrJobNotFound
	}
	return j, err
}

// FinishedChannel is the NOTIFY channel of finished jobs (queues with
// notify_finished); the payload is "<id> <status>".
const FinishedChannel = "jobqueue_finished"

func (c *Client) boolCall(ctx context.Context, sql string, args ...interface{}) (bool, error) {
	var ok bool
	err := c.db(nil).QueryRow(ctx, sql, args...).Scan(&ok)
	return ok, err
}

// Cancel cancels a pending or running job (jq_cancel); false if it was in
// another state or unknown.
func (c *Client) Cancel(ctx context.Context, id int64) (bool, error) {
	return c.boolCall(ctx, "SELECT jobqueue.jq_cancel($1::bigint)", id)
}

// Retry replays a dead or cancelled job (jq_retry), pending at runAt (zero:
// now); false if it was in another state or unknown.
func (c *Client) Retry(ctx context.Context, id int64, runAt time.Time) (bool, error) {
	return c.boolCall(ctx, "SELECT jobqueue.jq_retry($1::bigint, $2::timestamptz)", id, nullable(runAt, runAt.IsZero()))
}

// RetryDead replays up to maxJobs (0: 100) dead jobs of the queue, only
// those whose last error code is errorCode unless it is "" (jq_retry_dead);
// it returns how many.
func (c *Client) RetryDead(ctx context.Context, queue, errorCode string, maxJobs int) (int64, error) {
	if maxJobs == 0 {
		maxJobs = 100
	}
	var n int64
	err := c.db(nil).QueryRow(ctx, "SELECT jobqueue.jq_retry_dead($1, $2::text, $3::int)", queue,
		nullable(errorCode, errorCode == ""), maxJobs).Scan(&n)
	return n, err
}

// DeadJobs returns up to limit (0: 100) dead jobs of the queue, most
// recently dead first (jq_jobs), with their error histories.  It needs the admin or
// monitor set (jq_grant_admin, jq_grant_monitor), no rights on the
// tables; for a monitor the result, progress and error history are empty
// (jq_jobs shows them only to roles that may read jobs' data).
func (c *Client) DeadJobs(ctx context.Context, queue string, limit int) ([]JobInfo, error) {
	if limit == 0 {
		limit = 100
	}
	rows, err := c.db(nil).Query(ctx, "SELECT id, queue_name, status::text, attempt, max_attempts, priority, "+
		"result::text, progress::text, last_error_code, errors::text, created_at, available_at, started_at, "+
		"finished_at, '{}'::bigint[] FROM jobqueue.jq_jobs($1, status => 'dead', max_jobs => $2::int)",
		queue, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var jobs []JobInfo
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, *j)
	}
	return jobs, rows.Err()
}

// Pause pauses the queue (jq_pause_queue): no claims until Resume.
func (c *Client) Pause(ctx context.Context, queue string) error {
	_, err := c.boolCall(ctx, "SELECT jobqueue.jq_pause_queue($1) IS NULL", queue)
	return err
}

// Resume resumes the queue (jq_resume_queue).
func (c *Client) Resume(ctx context.Context, queue string) error {
	_, err := c.boolCall(ctx, "SELECT jobqueue.jq_resume_queue($1) IS NULL", queue)
	return err
}

// ScheduleOptions are the options of jq_schedule; the zero value means the
// defaults (UTC, priority 0, catch-up "latest", enabled).
type ScheduleOptions struct {
	Timezone string
	Priority int
	CatchUp  string // "latest", "all" or "none"
	Disabled bool
}

// Schedule creates or replaces a schedule (jq_schedule): a job into queue
// at every slot of cron, with payload (a JSON object; nil: {}).  It
// returns the next run time (nil when disabled).
func (c *Client) Schedule(ctx context.Context, name, queue, cron string, payload interface{}, opts *ScheduleOptions) (*time.Time, error) {
	text := "{}"
	if payload != nil {
		var err error
		if text, err = jsonText(payload); err != nil {
			return nil, fmt.Errorf("jobqueue: payload: %w", err)
		}
	}
	var o ScheduleOptions
	if opts != nil {
		o = *opts
	}
	if o.Timezone == "" {
		o.Timezone = "UTC"
	}
	if o.CatchUp == "" {
		o.CatchUp = "latest"
	}
	var next *time.Time
	err := c.db(nil).QueryRow(ctx, "SELECT jobqueue.jq_schedule($1, $2, $3, $4::jsonb, timezone => $5, priority => $6::int, "+
		"catch_up => $7, enabled => $8::boolean)", name, queue, cron, text, o.Timezone, o.Priority, o.CatchUp, !o.Disabled).Scan(&next)
	return next, err
}

// Unschedule deletes a schedule (jq_unschedule); false if there was none.
func (c *Client) Unschedule(ctx context.Context, name string) (bool, error) {
	return c.boolCall(ctx, "SELECT jobqueue.jq_unschedule($1)", name)
}

// ScheduleInfo is a schedule.
type ScheduleInfo struct {
	Name, Queue, Cron, Timezone string
	Payload                     json.RawMessage
	Priority                    int
	Enabled                     bool
	CatchUp                     string
	NextRunAt, LastRunAt        *time.Time
	LastJobID                   *int64
}

// Schedules lists the schedules of the database, by name (jq_schedules).
// It needs the admin or monitor set, no rights on the tables; for a
// monitor Payload is nil (jq_schedules shows payloads only to roles that
// may read jobs' data).
func (c *Client) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	rows, err := c.db(nil).Query(ctx, "SELECT schedule_name, queue_name, cron, timezone, payload::text, priority, enabled, "+
		"catch_up, next_run_at, last_run_at, last_job_id FROM jobqueue.jq_schedules() ORDER BY schedule_name")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ScheduleInfo
	for rows.Next() {
		var s ScheduleInfo
		var payload *string
		if err := rows.Scan(&s.Name, &s.Queue, &s.Cron, &s.Timezone, &payload, &s.Priority, &s.Enabled, &s.CatchUp,
			&s.NextRunAt, &s.LastRunAt, &s.LastJobID); err != nil {
			return nil, err
		}
		if payload != nil {
			s.Payload = json.RawMessage(*payload)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
