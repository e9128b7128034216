package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"time"

	"jobqueue"
)

func main() {
	ctx := context.Background()
	dsn := os.Getenv("JOBQUEUE_DSN") // e.g. postgresql://localhost/mydb

	// Producer: the queue (once, e.g. at deployment: an existing queue is
	// left alone), then jobs; set EnqueueOptions.Tx to enqueue in your transaction.
	client, err := jobqueue.NewClient(ctx, dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	if err := client.CreateQueue(ctx, "reports", jobqueue.QueuePolicy{MaxAttempts: jobqueue.Int(5), LeaseDuration: jobqueue.Duration(time.Minute)}); err != nil {
		log.Fatal(err)
	}
	for _, to := range []string{"ann@example.com", "bob@example.com", "eve@example.com"} {
		if _, err := client.Enqueue(ctx, "reports", map[string]string{"to": to}, nil); err != nil {
			log.Fatal(err)
		}
	}

	// Worker: the handler runs once per job; nil completes the job, an
	// error fails it: jobqueue.Permanent(err) makes it dead at once, any
	// other error is retried with the queue's backoff.
	var mu sync.Mutex
	var sent []string
	var worker *jobqueue.Worker
	handler := func(ctx context.Context, job *jobqueue.Job) error {
		if !strings.Contains(string(job.Payload), "@") {
			return jobqueue.Permanent(errors.New("not an address"))
		}
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, string(job.Payload)) // the real work; pass job.ID downstream as idempotency key
		if len(sent) >= 3 {
			worker.Stop() // like SIGTERM, Ctrl-C or cancelling Run's context: a graceful shutdown
		}
		return nil
	}
	worker, err = jobqueue.NewWorker(dsn, jobqueue.WorkerOptions{
		Queue: "reports", Handler: handler, Concurrency: 4, BatchSize: 10, HandleSignals: true})
	if err != nil {
		log.Fatal(err)
	}
	if err := worker.Run(ctx); err != nil { // running jobs finish, the others are released
		log.Fatal(err)
	}
	fmt.Printf("sent %d e-mails\n", len(sent))
}
