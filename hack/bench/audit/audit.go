// Package audit reads kube-apiserver's audit log as it grows, keeping one
// user's requests, and counts them by verb and resource: how the bench
// measures a controller's API requests.
package audit

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"nudge.dev/nudge/internal/testbed"
)

// Request is one API request of the controller, from the audit log.
type Request struct {
	At   time.Time // requestReceivedTimestamp
	Verb string    // get, list, watch, create, update, patch, delete, …
	What string    // resource[/subresource] (with its group unless core, apps or events.k8s.io), or the path of a non-resource request
	Code int
}

// Log reads kube-apiserver's audit log (one audit.k8s.io/v1 Event per
// line, written before the response is sent in blocking mode) as it grows,
// keeping the requests of one user. Each request is counted once: at
// ResponseComplete, or at ResponseStarted for a watch, whose completion comes
// only when it ends.
type Log struct {
	path     string
	user     string
	verb     string // keep only this verb, when not empty
	offset   int64
	requests []Request
}

// NewLog returns a reader of the requests of user in the audit log at
// path; of those with verb only, unless verb is "".
func NewLog(path, user, verb string) *Log {
	return &Log{path: path, user: user, verb: verb}
}

// Read reads the lines written since the last Read.
func (a *Log) Read() error {
	offset, err := testbed.ReadAuditLog(a.path, a.offset, a.user, func(ev testbed.AuditEvent) {
		if a.verb != "" && ev.Verb != a.verb || !(ev.Stage == "ResponseComplete" && ev.Verb != "watch" || ev.Stage == "ResponseStarted" && ev.Verb == "watch") {
			return
		}
		req := Request{At: ev.Received, Verb: ev.Verb, What: ev.RequestURI, Code: ev.Code()}
		if o := ev.ObjectRef; o != nil {
			req.What = o.Resource
			if o.Subresource != "" {
				req.What += "/" + o.Subresource
			}
			if o.APIGroup != "" && o.APIGroup != "apps" && o.APIGroup != "events.k8s.io" {
				req.What += "." + o.APIGroup
			}
		} else if i := strings.IndexByte(req.What, '?'); i >= 0 {
			req.What = req.What[:i]
		}
		a.requests = append(a.requests, req)
	})
	a.offset = offset
	return err
}

// Between returns the requests received at or after from and before to.
func (a *Log) Between(from, to time.Time) []Request {
	var out []Request
	for _, r := range a.requests {
		if !r.At.Before(from) && r.At.Before(to) {
			out = append(out, r)
		}
	}
	return out
}

// Counts are requests counted by "verb what".
type Counts map[string]int

// Count counts reqs by "verb what".
func Count(reqs []Request) Counts {
	c := Counts{}
	for _, r := range reqs {
		c[r.Verb+" "+r.What]++
	}
	return c
}

// Verb returns the number of requests with verb (on any resource).
func (c Counts) Verb(verb string) int {
	n := 0
	for k, v := range c {
		if strings.HasPrefix(k, verb+" ") {
			n += v
		}
	}
	return n
}

// Of returns the number of requests with one of verbs on what.
func (c Counts) Of(what string, verbs ...string) int {
	n := 0
	for _, v := range verbs {
		n += c[v+" "+what]
	}
	return n
}

// Total returns the number of requests.
func (c Counts) Total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

// String renders the counts as "patch deployments: 100, create events: 100",
// most first.
func (c Counts) String() string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c[keys[i]] != c[keys[j]] {
			return c[keys[i]] > c[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, c[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Resources renders counts keyed by resource alone: "deployments: 2".
func (c Counts) Resources() string {
	parts := make([]string, 0, len(c))
	for k, v := range c {
		parts = append(parts, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
