package app

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/trim"
	"nudge.dev/nudge/internal/workload"
)

// startSourceInformers asks the manager's cache for the ConfigMap and
// Secret informers before it starts, so that they list at the same time as
// the workload kinds' (which the source indexes asked for). Left to the
// controllers, they would start only once the workload caches had synced,
// and a restart would wait for the two lists one after the other. It adds
// the fan-out's one handler to each (watch.FanOut) before they list, so that its
// buffer need not hold the whole list.
func startSourceInformers(ctx context.Context, mgr ctrl.Manager, ignore map[refs.Kind]bool) error {
	for kind, obj := range map[refs.Kind]client.Object{refs.ConfigMap: &corev1.ConfigMap{}, refs.Secret: &corev1.Secret{}} {
		if ignore[kind] {
			continue
		}
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("watching %ss: %w", kind, err)
		}
	}
	return nil
}

// cacheOptions keeps ConfigMaps and Secrets as per-key digests (never their
// values), their labels packed (as a map for --resource-label-selector; see
// trim.Sources), trims workloads
// (built-in, Argo Rollouts and the custom kinds) to what nudge reads, and
// limits the cache to opts.Namespaces when set.
func cacheOptions(opts options.Options, custom []workload.CustomKind) cache.Options {
	marks := dialect.NewParser(opts.Reloader.Annotations).SourceAnnotations()
	var owners func([]metav1.OwnerReference) []metav1.OwnerReference
	if opts.ProducerReadyTimeout > 0 {
		// What names a Secret's producer (see producer.RefOf).
		marks, owners = append(marks, producer.CertificateNameAnnotation), producer.Owners
	}
	digested := cache.ByObject{Transform: trim.Sources(opts.ResourceLabelSelector != "", marks, owners), UnsafeDisableDeepCopy: ptr.To(true)}
	unstructuredKinds := []workload.Kind{workload.Rollout}
	for _, c := range custom {
		unstructuredKinds = append(unstructuredKinds, c.Adapter(""))
	}
	transform := trim.Workloads(unstructuredKinds...)
	if wavesOf(opts) > 0 {
		transform = fleet.KeepProgress(transform)
	}
	co := cache.Options{
		DefaultTransform: transform,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.ConfigMap{}: digested,
			&corev1.Secret{}:    digested,
		},
	}
	if len(opts.Namespaces) > 0 {
		co.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range opts.Namespaces {
			if !slices.Contains(opts.NamespacesToIgnore, ns) {
				co.DefaultNamespaces[ns] = cache.Config{}
			}
		}
	} else if len(opts.NamespacesToIgnore) > 0 {
		var not []fields.Selector
		for _, ns := range opts.NamespacesToIgnore {
			not = append(not, fields.OneTermNotEqualSelector("metadata.namespace", ns))
		}
		co.DefaultFieldSelector = fields.AndSelectors(not...)
		// Namespaces (read for --namespace-selector) are cluster-scoped:
		// the API server refuses a metadata.namespace selector on them.
		namespaces := &metav1.PartialObjectMetadata{}
		namespaces.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		co.ByObject[namespaces] = cache.ByObject{Field: fields.Everything()}
	}
	return co
}

// wavesOf returns --max-concurrent-rollouts, 0 (off) with --webhook-url:
// nudge then rolls nothing.
func wavesOf(opts options.Options) int {
	if opts.WebhookURL != "" {
		return 0
	}
	return opts.MaxConcurrentRollouts
}
