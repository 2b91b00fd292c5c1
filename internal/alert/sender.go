package alert

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// QueueLength is the number of alerts a Sender holds while its worker is
// busy; Send drops what does not fit.
const QueueLength = 1000

const (
	firstBackoff = time.Second      // delay before the first retry; doubles after each
	maxBackoff   = 30 * time.Second // cap on a delay, Retry-After included
	maxErrorBody = 256              // bytes of a failed response's body worth logging
)

// ErrStarted is returned by a second call to Sender.Start.
var ErrStarted = errors.New("alert sender already started")

var (
	_ manager.Runnable               = (*Sender)(nil)
	_ manager.LeaderElectionRunnable = (*Sender)(nil)
)

// Sender delivers alerts to one webhook in the background. Create it with
// NewSender, run it with Start (or add it to a controller-runtime manager)
// and call Send from anywhere. A nil *Sender drops every alert.
type Sender struct {
	cfg      Config
	err      error // cfg's validation error; Start returns it
	client   *http.Client
	endpoint string // scheme://host of the webhook: all a log may say
	log      logr.Logger
	queue    chan Alert
	backoff  time.Duration
	started  atomic.Bool

	sent, failed, dropped, attempts atomic.Uint64
}

// Stats counts what a Sender did since NewSender.
type Stats struct {
	// Sent counts alerts the webhook accepted (a 2xx response).
	Sent uint64
	// Failed counts alerts given up on: a response other than 2xx, 429 or
	// 5xx, or the last attempt failing.
	Failed uint64
	// Dropped counts alerts not delivered for want of time: Send found the
	// queue full, or Start stopped with them queued, in flight or waiting
	// to be retried.
	Dropped uint64
	// Attempts counts HTTP requests made, retries included.
	Attempts uint64
}

// NewSender returns a Sender posting to cfg.WebhookURL with client (nil
// means a new client on http.DefaultTransport). The Sender uses a copy of
// client that refuses redirects, as Reloader does, and applies cfg.Proxy to
// a copy of its transport when that is an *http.Transport. A disabled cfg
// gives a Sender whose Send does nothing; an invalid one also, and its Start
// returns cfg.Validate's error.
func NewSender(cfg Config, client *http.Client, log logr.Logger) *Sender {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	s := &Sender{cfg: cfg, err: cfg.Validate(), log: log, backoff: firstBackoff}
	if !cfg.Enabled || s.err != nil {
		return s
	}
	s.endpoint = endpoint(cfg.WebhookURL)
	s.log = log.WithValues("sink", cfg.Sink, "endpoint", s.endpoint)
	s.client = httpClient(client, cfg.Proxy, s.log)
	s.queue = make(chan Alert, QueueLength)
	return s
}

func httpClient(client *http.Client, proxy *url.URL, log logr.Logger) *http.Client {
	c := &http.Client{}
	if client != nil {
		*c = *client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error {
		// A redirect is how some services answer a bad token; following it
		// could carry the alert elsewhere.
		return http.ErrUseLastResponse
	}
	if proxy != nil {
		rt := c.Transport
		if rt == nil {
			rt = http.DefaultTransport
		}
		if t, ok := rt.(*http.Transport); ok {
			t = t.Clone()
			t.Proxy = http.ProxyURL(proxy)
			c.Transport = t
		} else {
			log.Info("Ignored alert proxy: the HTTP client's transport is not an *http.Transport")
		}
	}
	return c
}

// endpoint returns the scheme and host of a webhook URL, the part a log may
// show: the token is in the path or query.
func endpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Scheme + "://" + u.Host
}

// Send queues a for delivery and returns at once. When the queue is full it
// drops a, counts it in Stats.Dropped and logs (at the first drop, then at
// every power of two). It copies a.Sources and sets a.Time to now when zero.
func (s *Sender) Send(a Alert) {
	if s == nil || s.queue == nil {
		return
	}
	a.Sources = slices.Clone(a.Sources)
	if a.Time.IsZero() {
		a.Time = time.Now()
	}
	select {
	case s.queue <- a:
	default:
		if n := s.dropped.Add(1); n&(n-1) == 0 {
			s.log.Info("Dropped alert: queue full", "queueLength", QueueLength, "dropped", n,
				"kind", a.Kind, "namespace", a.Namespace, "name", a.Name)
		}
	}
}

// Stats returns the Sender's counts so far; zero for a nil Sender.
func (s *Sender) Stats() Stats {
	if s == nil {
		return Stats{}
	}
	return Stats{
		Sent:     s.sent.Load(),
		Failed:   s.failed.Load(),
		Dropped:  s.dropped.Load(),
		Attempts: s.attempts.Load(),
	}
}

// NeedLeaderElection returns true: only the leader alerts, as only it rolls.
func (s *Sender) NeedLeaderElection() bool { return true }

// Start delivers queued alerts, one at a time, until ctx is done; then it
// abandons what is queued or in flight (counted in Stats.Dropped) and
// returns nil without waiting on the network. It returns the config's
// validation error at once, and ErrStarted when called a second time.
func (s *Sender) Start(ctx context.Context) error {
	if s.err != nil {
		return fmt.Errorf("starting alert sender: %w", s.err)
	}
	if !s.started.CompareAndSwap(false, true) {
		return ErrStarted
	}
	if s.queue == nil { // disabled
		<-ctx.Done()
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			s.abandon(0)
			return nil
		case a := <-s.queue:
			if ctx.Err() != nil { // select picks at random when both are ready
				s.abandon(1)
				return nil
			}
			s.deliver(ctx, a)
		}
	}
}

// abandon drops what is queued, plus n alerts already taken off the queue.
func (s *Sender) abandon(n uint64) {
	for {
		select {
		case <-s.queue:
			n++
		default:
			if n > 0 {
				s.dropped.Add(n)
				s.log.Info("Abandoned queued alerts at shutdown", "count", n)
			}
			return
		}
	}
}

// deliver posts a, retrying as cfg allows, and counts the outcome.
func (s *Sender) deliver(ctx context.Context, a Alert) {
	log := s.log.WithValues("kind", a.Kind, "namespace", a.Namespace, "name", a.Name)
	body, contentType, err := payload(s.cfg.Sink, a, s.cfg.AdditionalInfo)
	if err != nil {
		s.failed.Add(1)
		log.Error(err, "Failed to encode alert")
		return
	}
	for attempt := 1; ; attempt++ {
		res := s.post(ctx, body, contentType)
		switch {
		case res.err == nil:
			s.sent.Add(1)
			log.V(1).Info("Sent alert", "attempts", attempt)
			return
		case ctx.Err() != nil:
			s.dropped.Add(1)
			log.Info("Abandoned alert at shutdown", "attempts", attempt)
			return
		case !res.retryable || attempt > s.cfg.Retries:
			s.failed.Add(1)
			log.Error(res.err, "Failed to send alert", "attempts", attempt)
			return
		}
		delay := max(s.delay(attempt), res.retryAfter)
		log.V(1).Info("Retrying alert", "attempts", attempt, "after", delay, "error", res.err.Error())
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			s.dropped.Add(1)
			log.Info("Abandoned alert at shutdown", "attempts", attempt)
			return
		case <-t.C:
		}
	}
}

// delay returns the wait after failed attempt n (from 1): s.backoff doubled
// n-1 times, at most maxBackoff.
func (s *Sender) delay(n int) time.Duration {
	d := s.backoff
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// result is the outcome of one attempt.
type result struct {
	err error
	// retryable is true after a network error, a timeout, a 5xx or a 429.
	retryable bool
	// retryAfter is a 429 or 5xx response's Retry-After, at most maxBackoff.
	retryAfter time.Duration
}

// post makes one attempt. No error it returns quotes the URL's path or
// query.
func (s *Sender) post(ctx context.Context, body []byte, contentType string) result {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return result{err: fmt.Errorf("building request to %s: %w", s.endpoint, ErrInvalidURL)}
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("User-Agent", "nudge")
	s.attempts.Add(1)
	resp, err := s.client.Do(req)
	if err != nil {
		// *url.Error quotes the whole URL; keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return result{err: fmt.Errorf("POST %s: %w", s.endpoint, err), retryable: true}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return result{}
	}
	return result{
		err:        fmt.Errorf("POST %s: %s: %q", s.endpoint, resp.Status, strings.TrimSpace(string(head))),
		retryable:  resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500,
		retryAfter: parseRetryAfter(resp.Header.Get("Retry-After")),
	}
}

// parseRetryAfter reads a Retry-After header in seconds
// (https://www.rfc-editor.org/rfc/rfc9110#field.retry-after), at most
// maxBackoff; zero when absent or a date.
func parseRetryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return min(time.Duration(n)*time.Second, maxBackoff)
}
