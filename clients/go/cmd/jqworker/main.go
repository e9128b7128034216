// Command jqworker is a worker process for the tests that signal or kill
// it, and for the cross-language test.
//
//	jqworker DSN QUEUE CONCURRENCY BATCH SHUTDOWN_TIMEOUT_MS [RECORD_TABLE]
//
// Without RECORD_TABLE, a job's payload {"sleep": s} makes its handler
// wait s seconds (less if its context is cancelled); with it, each job
// inserts (id, 'go') into that table.  Prints "owner <owner>", "start
// <id>", "cancelled <id> <reason>", "done <id>", and at exit "stats <json>".
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"jobqueue"

	"github.com/jackc/pgx/v4/pgxpool"
)

var out sync.Mutex

func say(format string, a ...interface{}) {
	out.Lock()
	defer out.Unlock()
	fmt.Printf(format+"\n", a...)
}

func main() {
	if len(os.Args) < 6 {
		fmt.Fprintln(os.Stderr, "usage: jqworker DSN QUEUE CONCURRENCY BATCH SHUTDOWN_TIMEOUT_MS [RECORD_TABLE]")
		os.Exit(2)
	}
	dsn, queue := os.Args[1], os.Args[2]
	conc, _ := strconv.Atoi(os.Args[3])
	batch, _ := strconv.Atoi(os.Args[4])
	timeoutMs, _ := strconv.Atoi(os.Args[5])
	ctx := context.Background()
	var pool *pgxpool.Pool
	table := ""
	if len(os.Args) > 6 {
		table = os.Args[6]
		var err error
		if pool, err = pgxpool.Connect(ctx, dsn); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pool.Close()
	}
	handler := func(ctx context.Context, job *jobqueue.Job) error {
		if pool != nil {
			_, err := pool.Exec(ctx, "INSERT INTO "+table+" (job_id, lang) VALUES ($1, 'go')", job.ID)
			return err
		}
		say("start %d", job.ID)
		var p struct{ Sleep float64 }
		_ = json.Unmarshal(job.Payload, &p)
		select {
		case <-time.After(time.Duration(p.Sleep * float64(time.Second))):
			say("done %d", job.ID)
		case <-ctx.Done():
			say("cancelled %d %s", job.ID, job.CancelReason())
		}
		return nil
	}
	w, err := jobqueue.NewWorker(dsn, jobqueue.WorkerOptions{Queue: queue, Handler: handler,
		Concurrency: conc, BatchSize: batch, ShutdownTimeout: time.Duration(timeoutMs) * time.Millisecond,
		PollInterval: 500 * time.Millisecond, HandleSignals: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	say("owner %s", w.Owner())
	err = w.Run(ctx)
	s, _ := json.Marshal(w.Stats())
	say("stats %s", s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
