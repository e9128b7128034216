package jobqueue

import (
	"errors"
	"time"
	"unicode/utf8"
)

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks a handler's error as not retryable: the job is dead at
// once (jq_fail with retryable => false).
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type retryInError struct {
	err   error
	delay time.Duration
}

func (e *retryInError) Error() string { return e.err.Error() }
func (e *retryInError) Unwrap() error { return e.err }

// RetryIn makes a handler's error retryable after delay instead of the
// queue's backoff (jq_fail with retry_in).
func RetryIn(err error, delay time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryInError{err, delay}
}

// Coded is implemented by errors that carry their own error code (stored in
// the job's last_error_code); other errors are reported as "ERROR".
type Coded interface{ ErrorCode() string }

type codedError struct {
	err  error
	code string
}

func (e *codedError) Error() string     { return e.err.Error() }
func (e *codedError) Unwrap() error     { return e.err }
func (e *codedError) ErrorCode() string { return e.code }

// WithCode gives err the error code recorded in the job's history.
func WithCode(err error, code string) error {
	if err == nil {
		return nil
	}
	return &codedError{err, code}
}

// failure is what jq_fail gets for a handler's error.
type failure struct {
	code      string
	message   string
	retryable bool
	retryIn   *time.Duration
}

func classify(err error) failure {
	f := failure{code: "ERROR", message: err.Error(), retryable: true}
	var c Coded
	if errors.As(err, &c) && c.ErrorCode() != "" {
		f.code = cutBytes(c.ErrorCode(), 128)
	}
	var p *permanentError
	if errors.As(err, &p) {
		f.retryable = false
	}
	var r *retryInError
	if f.retryable && errors.As(err, &r) && r.delay >= 0 {
		d := r.delay
		f.retryIn = &d
	}
	if f.message == "" {
		f.message = f.code
	}
	return f
}

// cutBytes cuts s to at most max bytes on a UTF-8 character boundary.
func cutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	end := max
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end]
}

// backoff: reconnect delays doubling from base to max, each uniform in
// [d/2, d].
type backoff struct {
	base, max time.Duration
	failures  int
	rand      func() float64
}

func (b *backoff) next() time.Duration {
	d := b.base
	for i := 0; i < b.failures && d < b.max; i++ {
		d *= 2
	}
	if d > b.max {
		d = b.max
	}
	b.failures++
	return time.Duration(float64(d) * (0.5 + 0.5*b.rand()))
}

func (b *backoff) reset() { b.failures = 0 }
