package alert

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
)

// TestDelivery checks retries, their bounds and what is logged, against a
// local webhook answering as each case says.
func TestDelivery(t *testing.T) {
	tests := map[string]struct {
		respond func(n uint64, w http.ResponseWriter, r *http.Request)
		retries int
		timeout time.Duration
		closed  bool // the webhook's server is down: connections are refused
		want    Stats
		wantLog string
	}{
		"a 2xx is sent at the first attempt": {
			respond: status(http.StatusNoContent),
			retries: 3,
			want:    Stats{Sent: 1, Attempts: 1},
			wantLog: `"msg"="Sent alert"`,
		},
		"a 500 is retried until the webhook accepts": {
			respond: func(n uint64, w http.ResponseWriter, _ *http.Request) {
				if n <= 2 {
					w.WriteHeader(http.StatusInternalServerError)
				}
			},
			retries: 3,
			want:    Stats{Sent: 1, Attempts: 3},
			wantLog: "500 Internal Server Error",
		},
		"a 429 is retried": {
			respond: func(n uint64, w http.ResponseWriter, _ *http.Request) {
				if n == 1 {
					w.WriteHeader(http.StatusTooManyRequests)
				}
			},
			retries: 3,
			want:    Stats{Sent: 1, Attempts: 2},
			wantLog: "429 Too Many Requests",
		},
		"retries are bounded": {
			respond: status(http.StatusServiceUnavailable),
			retries: 2,
			want:    Stats{Failed: 1, Attempts: 3},
			wantLog: `"msg"="Failed to send alert"`,
		},
		"zero retries means one attempt": {
			respond: status(http.StatusBadGateway),
			want:    Stats{Failed: 1, Attempts: 1},
		},
		"a 400 is not retried and its body is logged": {
			respond: func(_ uint64, w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte("invalid_payload"))
			},
			retries: 3,
			want:    Stats{Failed: 1, Attempts: 1},
			wantLog: "invalid_payload",
		},
		"a 404 is not retried": {
			respond: status(http.StatusNotFound),
			retries: 3,
			want:    Stats{Failed: 1, Attempts: 1},
		},
		"a redirect is not followed, as in Reloader": {
			respond: func(_ uint64, w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "/elsewhere", http.StatusFound)
			},
			retries: 3,
			want:    Stats{Failed: 1, Attempts: 1},
			wantLog: "302 Found",
		},
		"a response slower than the timeout fails the attempt and is retried": {
			respond: hang(nil),
			retries: 2,
			timeout: 50 * time.Millisecond,
			want:    Stats{Failed: 1, Attempts: 3},
			wantLog: "context deadline exceeded",
		},
		"a refused connection is retried": {
			closed:  true,
			retries: 2,
			want:    Stats{Failed: 1, Attempts: 3},
			wantLog: "connection refused",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			respond := tc.respond
			if respond == nil {
				respond = status(http.StatusOK)
			}
			hook := newWebhook(t, respond)
			if tc.closed {
				hook.srv.Close()
			}
			var logs logBuffer
			s := newTestSender(Config{
				Enabled: true, Sink: SinkSlack, WebhookURL: hook.url(), Timeout: tc.timeout, Retries: tc.retries,
			}, hook.srv.Client(), logs.logger())
			run(t, s)

			s.Send(webAlert())

			g.Eventually(func() uint64 { st := s.Stats(); return st.Sent + st.Failed }).WithTimeout(wait).
				Should(BeEquivalentTo(1), "waited for the alert to be sent or given up on")
			g.Expect(s.Stats()).To(Equal(tc.want))
			if !tc.closed {
				g.Expect(hook.hits.Load()).To(Equal(tc.want.Attempts), "requests the webhook received")
			}
			g.Expect(logs.String()).To(ContainSubstring(tc.wantLog))
			g.Expect(logs.String()).To(ContainSubstring(hook.srv.URL), "logs name the webhook's scheme and host")
			g.Expect(logs.String()).NotTo(ContainSubstring("s3cr3t"), "logs never show the webhook's path or query")
		})
	}
}

func TestSendNeverBlocksWhenTheQueueIsFull(t *testing.T) {
	g := NewWithT(t)
	release := make(chan struct{})
	defer close(release)
	hook := newWebhook(t, hang(release))
	var logs logBuffer
	s := newTestSender(Config{Enabled: true, Sink: SinkJSON, WebhookURL: hook.url(), Timeout: time.Hour}, hook.srv.Client(), logs.logger())
	stop := run(t, s)

	s.Send(webAlert())
	g.Eventually(hook.hits.Load).WithTimeout(wait).Should(BeEquivalentTo(1), "waited for the worker to be stuck on the first alert")

	const extra = 5
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for range QueueLength + extra {
			s.Send(webAlert())
		}
	}()
	g.Eventually(sent).WithTimeout(wait).Should(BeClosed(), "waited for Send to return with the worker stuck")
	g.Expect(s.Stats()).To(Equal(Stats{Dropped: extra, Attempts: 1}))
	g.Expect(logs.String()).To(ContainSubstring("Dropped alert: queue full"))

	returned, err := stop()
	g.Expect(returned).To(BeTrue(), "Start returned while a request hung")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Stats()).To(Equal(Stats{Dropped: extra + QueueLength + 1, Attempts: 1}),
		"the queued alerts and the one in flight are abandoned at shutdown")
	g.Expect(hook.hits.Load()).To(BeEquivalentTo(1))
}

func TestStartStopsDuringABackoff(t *testing.T) {
	g := NewWithT(t)
	hook := newWebhook(t, status(http.StatusServiceUnavailable))
	s := newTestSender(Config{Enabled: true, Sink: SinkTeams, WebhookURL: hook.url(), Retries: 5}, hook.srv.Client(), logr.Discard())
	s.backoff = time.Hour
	stop := run(t, s)

	s.Send(webAlert())
	g.Eventually(hook.hits.Load).WithTimeout(wait).Should(BeEquivalentTo(1), "waited for the first attempt")

	returned, err := stop()
	g.Expect(returned).To(BeTrue(), "Start returned while waiting to retry")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Stats()).To(Equal(Stats{Dropped: 1, Attempts: 1}))
}

func TestDisabledSender(t *testing.T) {
	g := NewWithT(t)
	s := NewSender(Config{Sink: "nonsense"}, nil, logr.Discard())
	s.Send(webAlert())
	g.Expect(s.Stats()).To(Equal(Stats{}))
	returned, err := run(t, s)()
	g.Expect(returned).To(BeTrue())
	g.Expect(err).NotTo(HaveOccurred())

	var nilSender *Sender
	nilSender.Send(webAlert())
	g.Expect(nilSender.Stats()).To(Equal(Stats{}))
}

func TestStartErrors(t *testing.T) {
	tests := map[string]struct {
		sender  func(t *testing.T) *Sender
		wantErr error
	}{
		"an invalid config fails Start": {
			sender: func(*testing.T) *Sender {
				return NewSender(Config{Enabled: true, Sink: "discord", WebhookURL: "https://example.com/x"}, nil, logr.Discard())
			},
			wantErr: ErrInvalidSink,
		},
		"a second Start fails": {
			sender: func(t *testing.T) *Sender {
				s := NewSender(Config{Enabled: true, Sink: SinkRaw, WebhookURL: "https://example.com/x"}, nil, logr.Discard())
				run(t, s)
				NewWithT(t).Eventually(s.started.Load).WithTimeout(wait).Should(BeTrue(), "waited for the first Start")
				return s
			},
			wantErr: ErrStarted,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			s := tc.sender(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			g.Expect(s.Start(ctx)).To(MatchError(tc.wantErr))
		})
	}
}

func TestNeedLeaderElection(t *testing.T) {
	g := NewWithT(t)
	g.Expect(NewSender(Config{}, nil, logr.Discard()).NeedLeaderElection()).To(BeTrue())
}

func TestProxy(t *testing.T) {
	g := NewWithT(t)
	// The proxy is the only server; the webhook's host does not exist.
	// Proxies receive the absolute URL: a request here proves the proxy was used.
	proxy := newWebhook(t, status(http.StatusOK))
	s := newTestSender(Config{
		Enabled: true, Sink: SinkGChat, WebhookURL: "http://chat.invalid" + secretPath,
		Proxy: mustParse(t, proxy.srv.URL),
	}, nil, logr.Discard())
	run(t, s)

	s.Send(webAlert())

	var got request
	g.Eventually(proxy.requests).WithTimeout(wait).Should(Receive(&got), "waited for the proxy to receive the alert")
	g.Expect(got.path).To(Equal(secretPath))
	g.Eventually(s.Stats).WithTimeout(wait).Should(Equal(Stats{Sent: 1, Attempts: 1}))
}
