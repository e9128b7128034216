package jobqueue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v4/pgxpool"
)

func quietLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func testDSN(t *testing.T) string {
	d := os.Getenv("JQ_TEST_DSN")
	if d == "" {
		t.Skip("JQ_TEST_DSN is not set (scripts/test_clients.sh sets it)")
	}
	return d
}

func testDB(t *testing.T) *pgxpool.Pool {
	p, err := pgxpool.Connect(context.Background(), testDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// makeQueue: a new queue, 2 s lease and 50-200 ms backoff unless told.
func makeQueue(t *testing.T, c *Client, p QueuePolicy) string {
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	name := "go-" + hex.EncodeToString(b)
	if p.LeaseDuration == nil {
		p.LeaseDuration = Duration(2 * time.Second)
	}
	if p.BackoffBase == nil {
		p.BackoffBase = Duration(50 * time.Millisecond)
	}
	if p.BackoffMax == nil {
		p.BackoffMax = Duration(200 * time.Millisecond)
	}
	if err := c.CreateQueue(context.Background(), name, p); err != nil {
		t.Fatal(err)
	}
	return name
}

func newClient(t *testing.T, dsn string) *Client {
	c, err := NewClient(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func statusCounts(t *testing.T, db *pgxpool.Pool, q string) map[string]int {
	rows, err := db.Query(context.Background(),
		"SELECT status::text, count(*)::int FROM jobqueue.jobs WHERE queue_name = $1 GROUP BY 1", q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		m[s] = n
	}
	return m
}

func countsAre(t *testing.T, db *pgxpool.Pool, q string, want map[string]int) func() bool {
	return func() bool { return reflect.DeepEqual(statusCounts(t, db, q), want) }
}

// waitFor polls cond until it is true; fails the test after timeout.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func q1(t *testing.T, db *pgxpool.Pool, dest interface{}, sql string, args ...interface{}) {
	t.Helper()
	if err := db.QueryRow(context.Background(), sql, args...).Scan(dest); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", sql, err))
	}
}

// runWorker starts w.Run in a goroutine; the returned function stops it
// and waits.
func runWorker(t *testing.T, w *Worker) func() {
	done := make(chan error, 1)
	go func() { done <- w.Run(context.Background()) }()
	return func() {
		w.Stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("Run did not return")
		}
	}
}
