package testbed

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// AuditEvent is what nudge's tests and benchmark read of one audit.k8s.io/v1
// Event of the plane's audit log (Options.AuditLog).
type AuditEvent struct {
	Stage      string    `json:"stage"`
	Verb       string    `json:"verb"`
	RequestURI string    `json:"requestURI"`
	Received   time.Time `json:"requestReceivedTimestamp"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	// ObjectRef is nil for a non-resource request (e.g. GET /apis).
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	// ResponseStatus is nil before the response (stage RequestReceived).
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// Resource returns the event's resource, "" for a non-resource request.
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	return e.ObjectRef.Resource
}

// Code returns the response's HTTP status code, 0 when there is none yet.
func (e AuditEvent) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// ReadAuditLog calls fn with every event of the audit log at path written
// after byte offset, and returns the offset to read from next time; a
// partial last line (still being written) is left for then. With user not
// empty, only that user's events are decoded. It returns an error when the
// log cannot be read or a line is not an event.
func ReadAuditLog(path string, offset int64, user string, fn func(AuditEvent)) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return offset, fmt.Errorf("opening the audit log: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	var needle []byte // a cheap filter before decoding
	if user != "" {
		needle = []byte(`"username":"` + user + `"`)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			return offset, nil
		}
		if err != nil {
			return offset, fmt.Errorf("reading the audit log: %w", err)
		}
		offset += int64(len(line))
		if needle != nil && !bytes.Contains(line, needle) {
			continue
		}
		var ev AuditEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			return offset, fmt.Errorf("parsing audit event %q: %w", line, err)
		}
		if user == "" || ev.User.Username == user {
			fn(ev)
		}
	}
}
