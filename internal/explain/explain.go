package explain

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/resolve"
	"nudge.dev/nudge/internal/trim"
)

// Options are what nudge explain must know of the nudge it explains: where
// its key is and the flags that change its decisions. The zero value of each
// field but the key's location is nudge's default.
type Options struct {
	// SystemNamespace and KeySecret locate nudge's fingerprint key, as the
	// controller's --system-namespace and --key-secret.
	SystemNamespace, KeySecret string
	// AutoReloadAll is the controller's --auto-reload-all.
	AutoReloadAll bool
	// RolloutWindow is the controller's --rollout-window.
	RolloutWindow time.Duration
	// MaxConcurrentRollouts and RolloutTimeout are the controller's
	// --max-concurrent-rollouts and --rollout-timeout: with waves on, a
	// workload that would roll is shown pending, waiting for a slot.
	MaxConcurrentRollouts int
	RolloutTimeout        time.Duration
	// Dialect reads the annotations by the install's names (Reloader's
	// renaming flags); the zero Parser reads the default names.
	Dialect dialect.Parser
	// Counting is the install's, as the Resolver reads it (see
	// app.Behaviour); the zero value is nudge's default.
	Counting resolve.Counting
	// Pace is the install's storm brake and maintenance window (see
	// app.Behaviour); the zero value has neither.
	Pace resolve.Pace
	// ProducerReadyTimeout is the controller's --producer-ready-timeout: a
	// workload whose changed Secret's producer is not ready is shown gated
	// (explain reads the producers from the API); 0 shows none.
	ProducerReadyTimeout time.Duration
	// Install says whose settings these are, for the report.
	Install Install
	// Now tells the time; time.Now when nil.
	Now func() time.Time
}

// Explainer explains workloads and sources through Client, which reads with
// the user's permissions: workloads, ConfigMaps, Secrets and Events of the
// namespace, and, to compare content, nudge's key Secret.
type Explainer struct {
	Client client.Client
	Options
}

func (e Explainer) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// key reads nudge's fingerprint key. It returns the Comparison to report and
// the key when it could be read.
func (e Explainer) key(ctx context.Context) (fingerprint.Key, Comparison) {
	c := Comparison{KeySecret: e.SystemNamespace + "/" + e.KeySecret}
	k, err := fingerprint.ReadKey(ctx, e.Client, e.SystemNamespace, e.KeySecret)
	switch {
	case err == nil:
		c.Compared, c.KeyID = true, k.ID()
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		c.Reason = fmt.Sprintf("cannot compare content: no access to Secret %s (nudge's key; get it with --system-namespace and --key-secret)", c.KeySecret)
	case apierrors.IsNotFound(err):
		c.Reason = fmt.Sprintf("cannot compare content: Secret %s (nudge's key) does not exist: is nudge installed there? (see --system-namespace and --key-secret)", c.KeySecret)
	default:
		c.Reason = fmt.Sprintf("cannot compare content: %v", err)
	}
	return k, c
}

// resolver returns nudge's Resolver over the API: sources are digested as
// they are read, as the controller's cache does.
func (e Explainer) resolver(key fingerprint.Key) resolve.Resolver {
	return resolve.Resolver{
		Selector: resolve.Selector{Reader: digested{e.Client, e.Dialect}, AutoReloadAll: e.AutoReloadAll},
		Key:      key,
		Window:   e.RolloutWindow,
		Counting: e.Counting,
		Pace:     e.Pace,
		Dialect:  e.Dialect,
	}
}

// digested reads ConfigMaps and Secrets as nudge's cache holds them: per-key
// digests instead of values (trim.Sources), so nothing here keeps
// a value longer than the read; their labels are kept for a
// --resource-label-selector, and the marks dialect reads.
type digested struct {
	client.Reader
	dialect dialect.Parser
}

func (d digested) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := d.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	_, err := trim.Sources(true, append(d.dialect.SourceAnnotations(), producer.CertificateNameAnnotation), producer.Owners)(obj)
	return err
}

// List lists as Get reads: every ConfigMap and Secret of list digested.
func (d digested) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := d.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	transform := trim.Sources(true, append(d.dialect.SourceAnnotations(), producer.CertificateNameAnnotation), producer.Owners)
	return apimeta.EachListItem(list, func(o runtime.Object) error {
		_, err := transform(o)
		return err
	})
}

// events returns nudge's Events on the object of kind in namespace, oldest
// first, at most limit of the latest.
func (e Explainer) events(ctx context.Context, kind, namespace, name string, limit int) ([]Event, error) {
	var list corev1.EventList
	err := e.Client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{
		"involvedObject.kind": kind, "involvedObject.name": name,
	})
	if apierrors.IsForbidden(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing Events of %s %s/%s: %w", kind, namespace, name, err)
	}
	var out []Event
	for _, ev := range list.Items {
		if ev.ReportingController != "nudge" && ev.Source.Component != "nudge" {
			continue
		}
		out = append(out, Event{Time: eventTime(ev), Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: eventCount(ev)})
	}
	sortEvents(out)
	if len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// eventTime is when an Event was last seen, whichever API wrote it.
func eventTime(ev corev1.Event) time.Time {
	t := ev.EventTime.Time
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	if ev.LastTimestamp.After(t) {
		t = ev.LastTimestamp.Time
	}
	return t.UTC()
}

func eventCount(ev corev1.Event) int32 {
	switch {
	case ev.Series != nil:
		return ev.Series.Count
	case ev.Count > 0:
		return ev.Count
	}
	return 1
}

// ErrUsage is wrapped by errors in what the user asked (an unknown kind, a
// malformed argument), as opposed to errors talking to the API.
var ErrUsage = errors.New("usage")
