package jobqueue

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// The jobs of a claim come as the JSON text of sqlJobsJSON:
// [[id, payload, attempt, token, "lease_expires_at", seconds left,
// traceparent, tracestate, trace_origin], ...].
// splitJobs cuts it into the text of each element, without copying and
// without encoding/json's reflection (a third of the worker's CPU per job
// when it decoded them): the server writes valid JSON, so only the
// structure is followed (strings, nesting, separators).

var errJobsJSON = errors.New("jobqueue: unexpected JSON for the jobs of a claim")

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r') {
		i++
	}
	return i
}

// valueEnd is the end of the JSON value that starts at data[i].
func valueEnd(data []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(data); j++ {
		switch data[j] {
		case '"':
			for j++; j < len(data) && data[j] != '"'; j++ {
				if data[j] == '\\' {
					j++
				}
			}
			if j >= len(data) {
				return 0, errJobsJSON
			}
			if depth == 0 {
				return j + 1, nil
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return j, nil // a number ended by its array's end
			}
			if depth--; depth == 0 {
				return j + 1, nil
			}
		case ',', ' ', '\n', '\t', '\r':
			if depth == 0 {
				return j, nil
			}
		}
	}
	if depth == 0 && len(data) > i {
		return len(data), nil
	}
	return 0, errJobsJSON
}

// jobFields is the number of elements of each job in sqlJobsJSON.
const jobFields = 9

// splitJobs returns the elements of each job, as slices of data.
func splitJobs(data []byte) ([][jobFields][]byte, error) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, errJobsJSON
	}
	var rows [][jobFields][]byte
	for i = skipSpace(data, i+1); i < len(data) && data[i] != ']'; {
		if data[i] != '[' {
			return nil, errJobsJSON
		}
		i++
		var row [jobFields][]byte
		for k := range row {
			i = skipSpace(data, i)
			end, err := valueEnd(data, i)
			if err != nil || end == i {
				return nil, errJobsJSON
			}
			row[k] = data[i:end]
			i = skipSpace(data, end)
			want := byte(',')
			if k == len(row)-1 {
				want = ']'
			}
			if i >= len(data) || data[i] != want {
				return nil, errJobsJSON
			}
			i++
		}
		rows = append(rows, row)
		if i = skipSpace(data, i); i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	if i >= len(data) {
		return nil, errJobsJSON
	}
	return rows, nil
}

// parseJob makes the Job of one row of splitJobs, and says how much of its
// lease is left.
func parseJob(queue string, r *[jobFields][]byte) (*Job, time.Duration, error) {
	j := &Job{Queue: queue, Payload: append([]byte(nil), r[1]...)}
	var err [6]error
	j.ID, err[0] = strconv.ParseInt(string(r[0]), 10, 64)
	j.Attempt, err[1] = strconv.Atoi(string(r[2]))
	j.Token, err[2] = strconv.ParseInt(string(r[3]), 10, 64)
	if len(r[4]) < 2 || r[4][0] != '"' {
		err[3] = errJobsJSON
	} else {
		j.LeaseExpiresAt, err[3] = time.Parse(time.RFC3339Nano, string(r[4][1:len(r[4])-1]))
	}
	var remaining float64
	remaining, err[4] = strconv.ParseFloat(string(r[5]), 64)
	// the producer's W3C traceparent: hex digits and dashes, or null
	if len(r[6]) >= 2 && r[6][0] == '"' {
		j.Traceparent = string(r[6][1 : len(r[6])-1])
	}
	// its tracestate: printable ASCII, which JSON may escape
	j.Tracestate, err[5] = jsonString(r[7])
	// the traceparent of the job this one came from, like the traceparent
	if len(r[8]) >= 2 && r[8][0] == '"' {
		j.TraceOrigin = string(r[8][1 : len(r[8])-1])
	}
	for _, e := range err {
		if e != nil {
			return nil, 0, e
		}
	}
	return j, time.Duration(remaining * float64(time.Second)), nil
}

// jsonString is the string of a JSON string element, "" for null.
func jsonString(v []byte) (string, error) {
	if len(v) < 2 || v[0] != '"' {
		return "", nil
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	var s string
	err := json.Unmarshal(v, &s)
	return s, err
}
