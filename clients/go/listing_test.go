package jobqueue

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgconn"
)

// dsnAs: the test DSN with another user (the test server trusts every
// role but jq_password).
func dsnAs(t *testing.T, dsn, role string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// DeadJobs and Schedules for the admin and monitor sets of rights, which
// hold no rights on the tables: jq_jobs and jq_schedules, with payloads,
// results and errors for the admin only.
func TestListingAsAdminAndMonitor(t *testing.T) {
	dsn := testDSN(t)
	ctx := context.Background()
	db := testDB(t)
	c := newClient(t, dsn)
	q := makeQueue(t, c, QueuePolicy{MaxAttempts: Int(1)})
	for _, role := range []string{"jq_go_admin", "jq_go_monitor"} {
		if _, err := db.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
			t.Fatal(err)
		}
		r := role
		t.Cleanup(func() {
			_, _ = db.Exec(context.Background(), "SELECT jobqueue.jq_revoke_admin($1)", r)
			_, _ = db.Exec(context.Background(), "SELECT jobqueue.jq_revoke_monitor($1)", r)
			_, _ = db.Exec(context.Background(), "DROP ROLE IF EXISTS "+r)
		})
	}
	if _, err := db.Exec(ctx, "SELECT jobqueue.jq_grant_admin('jq_go_admin'), jobqueue.jq_grant_monitor('jq_go_monitor')"); err != nil {
		t.Fatal(err)
	}

	// two dead jobs (the second died last), one pending
	id1, _ := c.Enqueue(ctx, q, map[string]int{"n": 1}, nil)
	id2, _ := c.Enqueue(ctx, q, map[string]int{"n": 2}, nil)
	for _, id := range []int64{id1, id2} {
		var ok bool
		q1(t, db, &ok, "SELECT jobqueue.jq_fail(id, token, 'BROKEN', 'it broke', false) = 'dead' "+
			"FROM jobqueue.jq_claim($1, 1, 'test') WHERE id = $2", q, id)
		if !ok {
			t.Fatalf("job %d did not die", id)
		}
	}
	if _, err := c.Enqueue(ctx, q, map[string]int{"n": 3}, nil); err != nil {
		t.Fatal(err)
	}
	name := q + "-hourly"
	if _, err := c.Schedule(ctx, name, q, "0 * * * *", map[string]int{"s": 1}, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.Unschedule(context.Background(), name) })

	for _, role := range []string{"jq_go_admin", "jq_go_monitor"} {
		rc := newClient(t, dsnAs(t, dsn, role))
		// the tables are out of reach
		var n int
		err := rc.Pool.QueryRow(ctx, "SELECT count(*)::int FROM jobqueue.jobs").Scan(&n)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Fatalf("%s reads jobqueue.jobs: %v", role, err)
		}
		dead, err := rc.DeadJobs(ctx, q, 0)
		if err != nil || len(dead) != 2 || dead[0].ID != id2 || dead[1].ID != id1 {
			t.Fatalf("%s: DeadJobs %+v %v", role, dead, err)
		}
		d := dead[0]
		if d.Status != "dead" || d.LastErrorCode != "BROKEN" || d.Attempt != 1 || d.FinishedAt == nil || d.Queue != q {
			t.Fatalf("%s: %+v", role, d)
		}
		if role == "jq_go_admin" && (len(d.Errors) != 1 || d.Errors[0].Message != "it broke") {
			t.Fatalf("the admin sees the error history: %+v", d.Errors)
		}
		if role == "jq_go_monitor" && len(d.Errors) != 0 {
			t.Fatalf("the monitor sees no error history: %+v", d.Errors)
		}
		if one, err := rc.DeadJobs(ctx, q, 1); err != nil || len(one) != 1 || one[0].ID != id2 {
			t.Fatalf("%s: DeadJobs limit 1 %+v %v", role, one, err)
		}
		list, err := rc.Schedules(ctx)
		if err != nil {
			t.Fatalf("%s: Schedules %v", role, err)
		}
		var s *ScheduleInfo
		for i := range list {
			if list[i].Name == name {
				s = &list[i]
			}
		}
		if s == nil || s.Queue != q || s.Cron != "0 * * * *" || !s.Enabled || s.NextRunAt == nil ||
			!s.NextRunAt.After(time.Now().Add(-time.Minute)) {
			t.Fatalf("%s: %+v", role, s)
		}
		if role == "jq_go_admin" && string(s.Payload) != `{"s": 1}` {
			t.Fatalf("the admin sees the payload: %q", s.Payload)
		}
		if role == "jq_go_monitor" && s.Payload != nil {
			t.Fatalf("the monitor sees no payload: %q", s.Payload)
		}
	}
}
