package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/internal/workload"
)

// rollouts counts the rollouts of the Deployments of one namespace as users
// see them: each change of the pod template's trigger annotation
// (nudge.dev/restarted-at) is one. It reads every revision of every
// Deployment from a watch of etcd's keys /registry/deployments/<ns>/, begun
// before the test creates them: a watch through kube-apiserver would end with
// its process, and could resume only from its watch cache, which a restart
// empties. A broken etcd watch resumes from the next revision; one that
// cannot (compacted) fails the test.
type rollouts struct {
	t      testing.TB
	prefix string

	mu      sync.Mutex
	trigger map[string]string // name → the trigger's last value
	applied map[string]bool   // name → nudge's applied state is on it
	counts  map[string]int    // name → changes of the trigger
	total   int
	next    int64 // the revision the watch resumes from
	err     error // why counting stopped
}

// watchRollouts starts counting the rollouts of namespace ns's Deployments
// from etcd's current revision; it stops when t ends.
func watchRollouts(t testing.TB, p *testbed.Plane, ns string) *rollouts {
	t.Helper()
	rev, err := p.EtcdRevision(t.Context())
	if err != nil {
		t.Fatalf("reading etcd's revision: %v", err)
	}
	r := &rollouts{
		t:       t,
		prefix:  "/registry/deployments/" + ns + "/",
		trigger: map[string]string{},
		applied: map[string]bool{},
		counts:  map[string]int{},
		next:    rev + 1,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	created := make(chan struct{})
	go func() {
		defer close(done)
		r.run(ctx, p.EtcdURL(), created)
	}()
	select {
	case <-created:
	case <-time.After(30 * time.Second):
		t.Fatalf("the etcd watch of %s was not created within 30 s: %v", r.prefix, r.failure())
	}
	return r
}

// run watches until ctx ends or the watch cannot resume; created is closed
// once the first watch is in place.
func (r *rollouts) run(ctx context.Context, etcdURL string, created chan struct{}) {
	var once sync.Once
	decoder := serializer.NewCodecFactory(scheme()).UniversalDeserializer()
	for ctx.Err() == nil {
		err := r.watch(ctx, etcdURL, decoder, func() { once.Do(func() { close(created) }) })
		if ctx.Err() != nil {
			return
		}
		var compacted errCompacted
		if errors.As(err, &compacted) {
			r.fail(err)
			return
		}
		// The connection broke: resume from the next revision.
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// errCompacted: etcd no longer has the revision the watch must resume from.
type errCompacted struct{ next, compacted int64 }

func (e errCompacted) Error() string {
	return fmt.Sprintf("the counting watch lost events: it must resume from revision %d, and etcd compacted up to %d", e.next, e.compacted)
}

// watchResponse is one message of etcd's JSON gateway watch stream
// (etcdserverpb.WatchResponse, int64s as strings, bytes in base64).
type watchResponse struct {
	Result struct {
		Created         bool   `json:"created"`
		Canceled        bool   `json:"canceled"`
		CancelReason    string `json:"cancel_reason"`
		CompactRevision string `json:"compact_revision"`
		Events          []struct {
			Type string `json:"type"` // "" for PUT
			Kv   struct {
				Key            []byte `json:"key"`
				CreateRevision string `json:"create_revision"`
				ModRevision    string `json:"mod_revision"`
				Value          []byte `json:"value"`
			} `json:"kv"`
		} `json:"events"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// watch runs one etcd watch from r.next, counting as events come, until the
// stream ends.
func (r *rollouts) watch(ctx context.Context, etcdURL string, decoder runtime.Decoder, created func()) error {
	r.mu.Lock()
	next := r.next
	r.mu.Unlock()
	body, err := json.Marshal(map[string]any{"create_request": map[string]any{
		"key":            []byte(r.prefix),
		"range_end":      prefixEnd(r.prefix),
		"start_revision": strconv.FormatInt(next, 10),
	}})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, etcdURL+"/v3/watch", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("etcd watch: %s: %s", resp.Status, b)
	}
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	for {
		var msg watchResponse
		if err := dec.Decode(&msg); err != nil {
			return err
		}
		if msg.Error != nil {
			return fmt.Errorf("etcd watch: %s", msg.Error.Message)
		}
		res := msg.Result
		if res.Canceled {
			if c, _ := strconv.ParseInt(res.CompactRevision, 10, 64); c > 0 {
				return errCompacted{next: next, compacted: c}
			}
			return fmt.Errorf("etcd watch canceled: %s", res.CancelReason)
		}
		if res.Created {
			created()
		}
		for _, ev := range res.Events {
			rev, _ := strconv.ParseInt(ev.Kv.ModRevision, 10, 64)
			name := strings.TrimPrefix(string(ev.Kv.Key), r.prefix)
			if ev.Type == "DELETE" {
				_ = r.record(name, rev, false, nil)
				continue
			}
			obj, _, err := decoder.Decode(ev.Kv.Value, nil, nil)
			if err != nil {
				r.fail(fmt.Errorf("decoding Deployment %s at revision %d: %w", name, rev, err))
				return nil
			}
			d, ok := obj.(*appsv1.Deployment)
			if !ok {
				r.fail(fmt.Errorf("decoding Deployment %s at revision %d gave a %T", name, rev, obj))
				return nil
			}
			if err := r.record(name, rev, ev.Kv.CreateRevision == ev.Kv.ModRevision, d); err != nil {
				r.fail(err)
				return nil
			}
		}
	}
}

// record counts one revision of Deployment name (nil: deleted), created
// when the revision is its creation. It returns an error when the first
// revision seen of a Deployment is not its creation: its earlier rollouts
// would go uncounted.
func (r *rollouts) record(name string, rev int64, created bool, d *appsv1.Deployment) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev >= r.next {
		r.next = rev + 1
	}
	if d == nil {
		delete(r.trigger, name)
		delete(r.applied, name)
		return nil
	}
	value := d.Spec.Template.Annotations[workload.RestartedAtAnnotation]
	last, seen := r.trigger[name]
	switch {
	case !seen && !created:
		return fmt.Errorf("counting began after Deployment %s was created (first seen at revision %d)", name, rev)
	case seen && last != value:
		r.counts[name]++
		r.total++
	}
	r.trigger[name] = value
	_, r.applied[name] = d.Annotations[workload.AppliedAnnotation]
	return nil
}

func (r *rollouts) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// failure returns why counting stopped, nil while it runs.
func (r *rollouts) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Total returns the rollouts counted so far, or, once counting has stopped,
// an error that ends a Gomega poll.
func (r *rollouts) Total() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total, stop(r.err)
}

// Counts returns each Deployment's rollouts so far, keyed by name (a
// Deployment never rolled has no entry), or an error as Total does.
func (r *rollouts) Counts() (map[string]int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.counts))
	for name, n := range r.counts {
		if n > 0 {
			out[name] = n
		}
	}
	return out, stop(r.err)
}

// Baselined returns how many Deployments carry nudge's applied state, or an
// error as Total does.
func (r *rollouts) Baselined() (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ok := range r.applied {
		if ok {
			n++
		}
	}
	return n, stop(r.err)
}

// stop turns the error that stopped the counting into one that ends a
// Gomega poll at once.
func stop(err error) error {
	if err == nil {
		return nil
	}
	return StopTrying("counting rollouts stopped").Wrap(err)
}

// prefixEnd returns the range end that makes an etcd request cover every key
// with prefix.
func prefixEnd(prefix string) []byte {
	end := []byte(prefix)
	end[len(end)-1]++
	return end
}

// scheme returns a scheme that decodes apps/v1 objects.
func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = appsv1.AddToScheme(s)
	return s
}
