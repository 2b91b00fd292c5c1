package app

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	nudgemetrics "nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/shard"
	"nudge.dev/nudge/internal/watch"
)

// shardOf returns opts' --shard (checked by Validate).
func shardOf(opts options.Options) shard.Shard {
	s, _ := shard.Parse(opts.Shard)
	return s
}

// sharded returns newInformer with every informer but the Namespaces'
// limited to s (shard.ListerWatcher): ConfigMaps, Secrets, every workload
// kind, SecretProviderClassPodStatuses, ValueBindings and their targets are
// namespaced; Namespaces stay whole, as --namespace-selector reads every
// namespace's labels.
func sharded(s shard.Shard, scheme *runtime.Scheme, newInformer watch.NewInformerFunc) watch.NewInformerFunc {
	if s.Whole() {
		return newInformer
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if gvk, err := apiutil.GVKForObject(obj, scheme); err != nil || gvk.GroupKind() != corev1.SchemeGroupVersion.WithKind("Namespace").GroupKind() {
			lw = s.ListerWatcher(lw)
		}
		return newInformer(lw, obj, resync, indexers)
	}
}

// announceShard logs s and serves it in nudge_shard_info (registered with
// reg) until ctx is done, after asking the API server whether it honours
// shard selectors: a list of ConfigMaps in namespace with s's selector,
// which the server answers with the selector echoed back
// (ListMeta.ShardInfo) when its ShardedListAndWatch feature gate is on.
// Either way nudge filters on the client too. It does nothing for the
// whole cluster, and returns a registration error only.
func announceShard(ctx context.Context, reg prometheus.Registerer, c client.Reader, namespace string, s shard.Shard) error {
	if s.Whole() {
		return nil
	}
	// A typed list: kube-apiserver 1.36 leaves ShardInfo out of a
	// metadata-only list (PartialObjectMetadataList). The field selector
	// names no object, so none is read.
	list := &corev1.ConfigMapList{}
	raw := &metav1.ListOptions{}
	s.Apply(raw)
	err := c.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{"metadata.name": "nudge-shard-probe"}, &client.ListOptions{Raw: raw})
	serverSide := err == nil && list.ShardInfo != nil
	log := ctrl.LoggerFrom(ctx)
	log.Info("Owning a shard of the namespaces", "shard", s.Name, "start", s.Start, "end", s.End, "serverSide", serverSide)
	if err != nil {
		log.Error(err, "Could not ask the API server whether it honours shard selectors; filtering on the client")
	}
	return nudgemetrics.RegisterShardInfo(ctx, reg, s, serverSide)
}
