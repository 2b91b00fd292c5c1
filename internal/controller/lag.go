package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/resolve"
)

// A source created just before its workload may reach nudge's cache after
// the workload does: the cache then misses a source the API server has.
// Before it warns that such a source does not exist, the reconciler asks the
// API server, and while the cache is behind it waits instead of acting.
const (
	// behindWait is how long a reconcile waits for the cache to catch up.
	behindWait = 250 * time.Millisecond
	// behindRetries bounds the waits in a row per workload (about 5 s):
	// past it, the cache is taken as it is.
	behindRetries = 20
)

// errCacheBehind is returned by inputs when the cache misses a source the
// API server has.
var errCacheBehind = errors.New("the cache is behind the API server")

// lag counts, per workload, the reconciles in a row that found the cache
// behind the API server. The zero value is ready to use; it is safe for
// concurrent use.
type lag struct {
	mu    sync.Mutex
	waits map[types.NamespacedName]int
}

// wait records one more wait for key and reports whether it may.
func (l *lag) wait(key types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waits == nil {
		l.waits = map[types.NamespacedName]int{}
	}
	if l.waits[key] >= behindRetries {
		return false
	}
	l.waits[key]++
	return true
}

// forget drops the waits of key; it costs a map lookup when there are none,
// as on every reconcile that misses no source.
func (l *lag) forget(key types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.waits) > 0 {
		delete(l.waits, key)
	}
}

// cacheBehind reports whether a source the cache misses, for a SourceMissing
// cause not warned about yet, exists in the API server: the cache has not
// seen it yet, and the reconcile should wait (behindWait) rather than warn
// and record a state without it. It asks with one metadata-only LIST by name
// per such source (nudge may list, not get, Secrets), at most behindRetries
// reconciles in a row per workload. It returns the API server's error.
func (r *Reconciler) cacheBehind(ctx context.Context, key types.NamespacedName, resolved []resolve.Resolved, causes []record.Cause) (bool, error) {
	var missing []resolve.Resolved
	for _, c := range resolved {
		if (c.Outcome == resolve.Missing || c.Outcome == resolve.Kept) && (c.Kind == refs.ConfigMap || c.Kind == refs.Secret) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 || r.APIReader == nil {
		r.lag.forget(key)
		return false, nil
	}
	fresh := r.warnings.unseen(key, causes)
	for _, c := range missing {
		if !fresh[sourceMissingNote(c)] {
			continue
		}
		if version, err := r.serverVersion(ctx, c.Source); err != nil {
			return false, err
		} else if version != "" {
			return r.lag.wait(key), nil
		}
	}
	return false, nil
}

// sourceMissingNote is the note of the SourceMissing Warning about c, a
// reference whose source does not exist (outcome Missing or Kept).
func sourceMissingNote(c resolve.Resolved) string {
	if c.Outcome == resolve.Kept {
		return fmt.Sprintf("Named %s %s/%s does not exist; its absence rolls nothing", c.Kind, c.Namespace, c.Name)
	}
	return fmt.Sprintf("Required %s %s/%s does not exist; no rollout until it does", c.Kind, c.Namespace, c.Name)
}

// serverVersion returns the resourceVersion of the ConfigMap or Secret src
// as the API server holds it now, "" when it does not exist: one
// metadata-only LIST by name (nudge may list, not get, Secrets).
func (r *Reconciler) serverVersion(ctx context.Context, src refs.Source) (string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(src.Kind) + "List"))
	if err := r.APIReader.List(ctx, list, client.InNamespace(src.Namespace),
		client.MatchingFields{"metadata.name": src.Name}, client.Limit(1)); err != nil {
		return "", fmt.Errorf("looking for %s: %w", src, err)
	}
	if len(list.Items) == 0 {
		return "", nil
	}
	return list.Items[0].ResourceVersion, nil
}
