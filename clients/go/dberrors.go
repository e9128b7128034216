package jobqueue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgconn"
)

// What the worker does about an error of a database call.
type errClass int

const (
	// errConnection: the connection is lost or unusable (no SQLSTATE, or
	// class 08, 57P01-57P03); reconnect and send again.
	errConnection errClass = iota
	// errTransient: the call was rolled back by a condition of the moment
	// (40001 serialization failure, 40P01 deadlock, 57014 statement
	// cancelled or timed out, 55P03 lock not available, class 53
	// insufficient resources); send it again on the same connection.
	errTransient
	// errData: the server refused a value the call carried (class 22 data
	// exception, such as 22P05 for "\u0000" in a jsonb result, or 54000 for
	// a result over jobqueue.max_result_size); for completions with
	// results, one job's data.
	errData
	// errFatal: no retry can fix it (authentication, an unknown database,
	// no jobqueue extension, an unknown queue, missing privileges, ...):
	// the worker stops.
	errFatal
)

func classifyDB(err error) errClass {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return errConnection
	}
	c := pgErr.Code
	switch {
	case strings.HasPrefix(c, "08"), c == "57P01", c == "57P02", c == "57P03":
		return errConnection
	case c == "40001", c == "40P01", c == "57014", c == "55P03", strings.HasPrefix(c, "53"):
		return errTransient
	case strings.HasPrefix(c, "22"), c == "54000":
		return errData
	}
	return errFatal
}

func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// fatalError: what Run returns when an error no retry can fix stops the
// worker; it wraps the database's error (errors.As finds the
// *pgconn.PgError) and says what to check.
func fatalError(err error, queues []string) error {
	hint := ""
	switch c := sqlState(err); {
	case c == "28P01" || c == "28000":
		hint = "authentication failed: check the user and password of the DSN (and pg_hba.conf)"
	case c == "3D000":
		hint = "the database does not exist: check the database name of the DSN"
	case c == "3F000" || c == "42883" || c == "42P01":
		hint = "the jobqueue extension is missing or older than this client: CREATE EXTENSION jobqueue " +
			"(or ALTER EXTENSION jobqueue UPDATE) in this database"
	case c == "42704":
		hint = fmt.Sprintf("unknown queue among %s: create it with jq_create_queue", strings.Join(queues, ", "))
	case c == "42501":
		hint = "permission denied: grant the worker's role the worker functions (jobqueue.jq_grant_worker)"
	default:
		hint = "an error no retry can fix"
	}
	return &FatalError{Hint: hint, Err: err}
}

// FatalError is returned by Worker.Run when an error that no retry can fix
// (authentication, unknown database, missing extension, unknown queue,
// missing privileges) stopped the worker.
type FatalError struct {
	Hint string // what to check
	Err  error  // the database's error (a *pgconn.PgError)
}

func (e *FatalError) Error() string {
	return "jobqueue: worker stopped: " + e.Hint + ": " + e.Err.Error()
}
func (e *FatalError) Unwrap() error { return e.Err }

// errNoExtension: the database has no jobqueue extension (found when the
// worker connects).
var errNoExtension = &pgconn.PgError{Severity: "ERROR", Code: "3F000",
	Message: "the extension jobqueue is not installed in this database"}
