package jobqueue

import (
	"context"
	"time"
)

// GroupLimit is one group's overrides of its queue's group defaults: a
// nil field is the queue's default.
type GroupLimit struct {
	Concurrency *int
	RateLimit   *float64
	RateBurst   *int
	Weight      *float64
}

// GroupLimitInfo is a row of jq_group_limits.
type GroupLimitInfo struct {
	GroupKey string
	GroupLimit
}

// GroupStats is a row of jq_group_stats; Usage and Share only under
// fairness "fair_share".
type GroupStats struct {
	GroupKey       *string
	Ready          int64
	Running        int64
	Scheduled      int64
	Dead           int64
	Blocked        bool
	OldestReadyAge *time.Duration
	Usage          *float64
	Share          *float64
}

// SetGroupLimit runs jq_set_group_limit: the overrides of one group of the
// queue; a GroupLimit with every field nil removes them.
func (c *Client) SetGroupLimit(ctx context.Context, queue, groupKey string, l GroupLimit) error {
	_, err := c.boolCall(ctx, "SELECT jobqueue.jq_set_group_limit($1, $2, concurrency => $3::int, "+
		"rate_limit => $4::float8, rate_burst => $5::int, weight => $6::float8) IS NULL",
		queue, groupKey, l.Concurrency, l.RateLimit, l.RateBurst, l.Weight)
	return err
}

// GroupLimits lists the overrides of the queue's groups (jq_group_limits),
// by group key.
func (c *Client) GroupLimits(ctx context.Context, queue string) ([]GroupLimitInfo, error) {
	rows, err := c.db(nil).Query(ctx, "SELECT group_key, concurrency, rate_limit, rate_burst, weight "+
		"FROM jobqueue.jq_group_limits($1)", queue)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []GroupLimitInfo
	for rows.Next() {
		var g GroupLimitInfo
		if err := rows.Scan(&g.GroupKey, &g.Concurrency, &g.RateLimit, &g.RateBurst, &g.Weight); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// GroupStats lists the queue's groups with unfinished jobs
// (jq_group_stats), by group key; the jobs without a group have a nil key.
func (c *Client) GroupStats(ctx context.Context, queue string) ([]GroupStats, error) {
	rows, err := c.db(nil).Query(ctx, "SELECT group_key, ready, running, scheduled, dead, blocked, "+
		"extract(epoch FROM oldest_ready_age)::float8, usage, share FROM jobqueue.jq_group_stats($1)", queue)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []GroupStats
	for rows.Next() {
		var g GroupStats
		var age *float64
		if err := rows.Scan(&g.GroupKey, &g.Ready, &g.Running, &g.Scheduled, &g.Dead, &g.Blocked, &age,
			&g.Usage, &g.Share); err != nil {
			return nil, err
		}
		if age != nil {
			d := time.Duration(*age * float64(time.Second))
			g.OldestReadyAge = &d
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
