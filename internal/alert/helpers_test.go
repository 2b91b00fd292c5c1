package alert

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// wait bounds every Eventually in these tests.
const wait = 10 * time.Second

// secretPath is the token-bearing part of the test webhook URLs; no log line
// or error may contain it.
const secretPath = "/services/T0/B0/s3cr3t-token"

// request is what the test webhook received.
type request struct {
	method, path, query, contentType string
	body                             []byte
}

// webhook is a local server standing in for Slack, Teams, Google Chat or a
// raw receiver. respond answers the n-th request (from 1).
type webhook struct {
	srv      *httptest.Server
	hits     atomic.Uint64
	requests chan request
}

func newWebhook(t *testing.T, respond func(n uint64, w http.ResponseWriter, r *http.Request)) *webhook {
	t.Helper()
	h := &webhook{requests: make(chan request, 2*QueueLength)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := h.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		select {
		case h.requests <- request{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), body}:
		default:
		}
		respond(n, w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// url is the webhook's URL with a token in its path and query, as real
// webhook URLs have.
func (h *webhook) url() string { return h.srv.URL + secretPath + "?token=s3cr3t-query" }

func status(code int) func(uint64, http.ResponseWriter, *http.Request) {
	return func(_ uint64, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// hang answers no request until the client gives up or release is closed.
func hang(release <-chan struct{}) func(uint64, http.ResponseWriter, *http.Request) {
	return func(_ uint64, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
}

// logBuffer collects log lines, V(1) included.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.b.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 1})
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newTestSender is NewSender with millisecond backoff.
func newTestSender(cfg Config, client *http.Client, log logr.Logger) *Sender {
	s := NewSender(cfg, client, log)
	s.backoff = time.Millisecond
	return s
}

// run starts s and returns a function that stops it and reports whether
// Start returned within wait, and its error.
func run(t *testing.T, s *Sender) (stop func() (returned bool, err error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Start(ctx) }()
	var once sync.Once
	var returned bool
	var err error
	stop = func() (bool, error) {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
				returned = true
			case <-time.After(wait):
			}
		})
		return returned, err
	}
	t.Cleanup(func() {
		if ok, _ := stop(); !ok {
			t.Errorf("Start did not return within %s of its context's end", wait)
		}
	})
	return stop
}

func mustParse(t *testing.T, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func webAlert() Alert {
	return Alert{
		Kind: "Deployment", Namespace: "shop", Name: "web",
		Sources: []string{"ConfigMap shop/app", "Secret shop/db"},
		Time:    t0,
	}
}
