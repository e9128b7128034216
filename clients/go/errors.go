package jobqueue

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
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
// the job's last_error_code).  See ErrorCode for the rule.
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

// ErrorCode is the error code recorded for a handler's error, by the rule
// all jobqueue clients share: the error's own code if it has a non-empty
// one, else its type name.  In Go, walking the chain of err (errors.Unwrap)
// from the outside in:
//   - the first error with a method ErrorCode() string or Code() string, or
//     a string field Code (a *pgconn.PgError gives its SQLSTATE), that is
//     not empty, gives the code;
//   - otherwise the dynamic type name, without package and "*", of the
//     first error that is not a wrapper of this package (Permanent,
//     RetryIn) nor of fmt.Errorf's %w: errors.New gives "errorString",
//     &fs.PathError{...} "PathError", fmt.Errorf("open: %w", pathErr) also
//     "PathError".
//
// A recovered panic is reported with the code of its value when that is an
// error (a runtime error: "boundsError", ...), "panic" otherwise.
func ErrorCode(err error) string {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if c := ownCode(e); c != "" {
			return c
		}
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e.(type) {
		case *permanentError, *retryInError, *panicError:
			continue
		}
		name := typeName(e)
		if (name == "wrapError" || name == "wrapErrors") && errors.Unwrap(e) != nil &&
			reflect.TypeOf(e).Elem().PkgPath() == "fmt" {
			continue
		}
		return name
	}
	return "error"
}

func ownCode(e error) string {
	switch c := e.(type) {
	case Coded:
		return c.ErrorCode()
	case interface{ Code() string }:
		return c.Code()
	}
	v := reflect.ValueOf(e)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("Code"); f.IsValid() && f.Kind() == reflect.String && f.CanInterface() {
			return f.String()
		}
	}
	return ""
}

func typeName(e error) string {
	t := reflect.TypeOf(e)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n := t.Name(); n != "" {
		return n
	}
	return strings.TrimLeft(t.String(), "*")
}

// panicError is a recovered panic: its value and the stack where it
// happened.
type panicError struct {
	value interface{}
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v", e.value) }

func (e *panicError) Unwrap() error {
	if err, ok := e.value.(error); ok {
		return err
	}
	return nil
}

func (e *panicError) ErrorCode() string {
	if err, ok := e.value.(error); ok {
		return ErrorCode(err)
	}
	return "panic"
}

// failure is what jq_fail gets for a handler's error.
type failure struct {
	code      string
	message   string
	retryable bool
	retryIn   *time.Duration
	stack     string
}

// maxStack bounds the stack trace a worker sends (the server trims it
// too).
const maxStack = 8192

func classify(err error) failure {
	f := failure{code: cutBytes(cleanText(ErrorCode(err)), 128), message: cleanText(err.Error()), retryable: true}
	if f.code == "" {
		f.code = "error"
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
	f.stack = cutBytes(cleanText(stackText(err)), maxStack)
	return f
}

// stackText: for a panic, the stack of the goroutine where it happened;
// for an error, its chain (type and message of each error, outermost
// first) and, for errors that format themselves with "%+v" (such as
// github.com/pkg/errors, which prints where the error was made), that.
func stackText(err error) string {
	var b strings.Builder
	var pe *panicError
	if errors.As(err, &pe) {
		b.WriteString(err.Error())
		b.WriteString("\n\n")
		b.Write(pe.stack)
		return b.String()
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		fmt.Fprintf(&b, "%T: %s\n", e, e.Error())
		if _, ok := e.(fmt.Formatter); ok {
			if s := fmt.Sprintf("%+v", e); s != e.Error() {
				b.WriteString(s)
				b.WriteString("\n")
			}
			break
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// cleanText makes s storable as PostgreSQL text: no NUL bytes (which text
// refuses), valid UTF-8.
func cleanText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\\0")
	}
	return strings.ToValidUTF8(s, "\uFFFD")
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
