package lag

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/memo"
	"nudge.dev/nudge/internal/refs"
)

// Checker compares the cache with the API server for the reconciles of one
// workload kind. The zero value asks nothing (Server nil); it is safe for
// concurrent use.
type Checker struct {
	// Cache reads nudge's cache; Server the API server directly.
	Cache, Server client.Reader
	// missing and rollout count the waits in a row per workload of Missing
	// and Rollout.
	missing, rollout memo.Lag
	// caughtUp is when the cache last held the API server's version of
	// each source.
	caughtUp memo.CaughtUp
}

// Missing reports whether one of the ConfigMaps and Secrets asked, which
// the cache misses, exists in the API server: the reconcile of the workload
// key should wait rather than warn and record a state without it. It
// returns false once the workload has waited memo.Lag's limit of times in a
// row, and the API server's error.
func (c *Checker) Missing(ctx context.Context, key types.NamespacedName, asked []refs.Source) (bool, error) {
	if len(asked) == 0 || c.Server == nil {
		c.missing.Forget(key)
		return false, nil
	}
	for _, src := range asked {
		if version, err := c.ServerVersion(ctx, src); err != nil {
			return false, err
		} else if version != "" {
			return c.missing.Wait(key), nil
		}
	}
	return false, nil
}

// Rollout reports whether a rollout of the workload key for the sources
// changed must wait for the cache: it asks (recheck, or foreign: the
// workload's last rollout, at lastRollout, is another nudge's within a
// minute) and the API server holds another resourceVersion than the cache
// of a ConfigMap or Secret changed; a foreign rollout's source found caught
// up since lastRollout is not asked again. It returns false once the
// workload has waited memo.Lag's limit of times in a row, and the API
// server's error.
func (c *Checker) Rollout(ctx context.Context, key types.NamespacedName, changed []refs.Source, recheck, foreign bool, lastRollout, now time.Time) (bool, error) {
	if c.Server == nil || !(foreign || recheck) {
		c.rollout.Forget(key)
		return false, nil
	}
	for _, src := range changed {
		var cached client.Object
		switch src.Kind {
		case refs.ConfigMap:
			cached = &corev1.ConfigMap{}
		case refs.Secret:
			cached = &corev1.Secret{}
		default:
			continue
		}
		if !recheck && c.caughtUp.Covers(src, lastRollout, now) {
			continue
		}
		err := c.Cache.Get(ctx, types.NamespacedName{Namespace: src.Namespace, Name: src.Name}, cached)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("reading %s: %w", src, err)
		}
		server, err := c.ServerVersion(ctx, src)
		if err != nil {
			return false, err
		}
		if server != cached.GetResourceVersion() {
			ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the cache to see the API server's version of a source",
				"source", src.String(), "cached", cached.GetResourceVersion(), "server", server, "recheck", recheck, "lastRollout", lastRollout)
			return c.rollout.Wait(key), nil
		}
		c.caughtUp.Saw(src, now) // now, of the decision, is before the list: its answer is of now or later
	}
	c.rollout.Forget(key)
	return false, nil
}

// NoRollout ends the waits in a row of Rollout for the workload key, whose
// decision was not a rollout.
func (c *Checker) NoRollout(key types.NamespacedName) {
	c.rollout.Forget(key)
}

// Forget drops the waits of the workload key, deleted.
func (c *Checker) Forget(key types.NamespacedName) {
	c.missing.Forget(key)
	c.rollout.Forget(key)
}

// ServerVersion returns the resourceVersion of the ConfigMap or Secret src
// as the API server holds it now, "" when it does not exist: one
// metadata-only LIST by name.
func (c *Checker) ServerVersion(ctx context.Context, src refs.Source) (string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind(string(src.Kind) + "List"))
	if err := c.Server.List(ctx, list, client.InNamespace(src.Namespace),
		client.MatchingFields{"metadata.name": src.Name}, client.Limit(1)); err != nil {
		return "", fmt.Errorf("looking for %s: %w", src, err)
	}
	if len(list.Items) == 0 {
		return "", nil
	}
	return list.Items[0].ResourceVersion, nil
}
