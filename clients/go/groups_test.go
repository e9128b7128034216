package jobqueue

import (
	"context"
	"testing"
)

// SetGroupLimit, GroupLimits and GroupStats against a real server: an
// override limits its group's claims, a removed one is gone, a refused
// value is an error.
func TestGroupLimits(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{GroupConcurrency: Int(4)})
	if err := c.SetGroupLimit(ctx, q, "a", GroupLimit{Concurrency: Int(1), Weight: Float(2.5)}); err != nil {
		t.Fatal(err)
	}
	if err := c.SetGroupLimit(ctx, q, "b", GroupLimit{RateLimit: Float(3), RateBurst: Int(5)}); err != nil {
		t.Fatal(err)
	}
	ls, err := c.GroupLimits(ctx, q)
	if err != nil || len(ls) != 2 || ls[0].GroupKey != "a" || *ls[0].Concurrency != 1 || *ls[0].Weight != 2.5 ||
		ls[0].RateLimit != nil || ls[1].GroupKey != "b" || *ls[1].RateBurst != 5 || ls[1].Concurrency != nil {
		t.Fatalf("%+v %v", ls, err)
	}
	if err := c.SetGroupLimit(ctx, q, "b", GroupLimit{}); err != nil {
		t.Fatal(err)
	}
	if ls, err = c.GroupLimits(ctx, q); err != nil || len(ls) != 1 {
		t.Fatalf("%+v %v", ls, err)
	}
	if _, err := c.EnqueueMany(ctx, q, []interface{}{1, 2, 3}, &EnqueueOptions{GroupKeys: []string{"a", "a", "c"}}); err != nil {
		t.Fatal(err)
	}
	var claimed int
	q1(t, db, &claimed, "SELECT count(*)::int FROM jobqueue.jq_claim($1, 10, 'go')", q)
	if claimed != 2 {
		t.Fatalf("claimed %d, a's override is 1", claimed)
	}
	st, err := c.GroupStats(ctx, q)
	if err != nil || len(st) != 2 || *st[0].GroupKey != "a" || st[0].Ready != 1 || st[0].Running != 1 ||
		st[1].Running != 1 || st[0].Usage != nil {
		t.Fatalf("%+v %v", st, err)
	}
	if err := c.SetGroupLimit(ctx, q, "a", GroupLimit{Concurrency: Int(-1)}); err == nil {
		t.Fatal("a negative concurrency is refused")
	}
}
