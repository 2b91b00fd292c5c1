package app

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nudgemetrics "nudge.dev/nudge/internal/metrics"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/shard"
)

// newInformerFunc is cache.Options.NewInformer's type.
type newInformerFunc func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer

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
func sharded(s shard.Shard, scheme *runtime.Scheme, newInformer newInformerFunc) newInformerFunc {
	if s.Whole() {
		return newInformer
	}
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		if resourceOf(obj, scheme) != "namespaces" {
			lw = s.ListerWatcher(lw)
		}
		return newInformer(lw, obj, resync, indexers)
	}
}

// shardRegisterer returns reg for the whole cluster, and for a shard reg
// with every series registered through it labelled shard="<s.Name>" (as
// given: "1/3", or "0xSTART-0xEND"), so that a shard's series stay apart
// without a join on nudge_shard_info. nudge_shard_info, which names its
// shard itself, is registered with reg directly.
//
// A series registered with and without the label cannot be served by one
// registry: the nudges of one process (tests run several) must all be
// sharded or all not. Those of different shards are registered apart, one
// collector for each shard, reused by a nudge of the same shard started
// again.
func shardRegisterer(reg prometheus.Registerer, s shard.Shard) prometheus.Registerer {
	if s.Whole() {
		return reg
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{"shard": s.Name}, reg)
}

// shardInfo serves nudge_shard_info{shard, start, end, server_side}: 1 for
// each nudge of the process started with --shard (one, but for tests), with
// its range and whether the API server honours the shard selector (its
// ShardedListAndWatch feature gate).
type shardInfo struct {
	desc   *prometheus.Desc
	shards running[*shardEntry]
}

type shardEntry struct {
	shard      shard.Shard
	serverSide bool
}

func (c *shardInfo) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect serves one series per shard and server_side: two nudges of one
// shard in a process (tests run them at once) would otherwise serve the
// same series twice, which the registry refuses.
func (c *shardInfo) Collect(ch chan<- prometheus.Metric) {
	seen := map[shardEntry]bool{}
	c.shards.each(func(e *shardEntry) {
		if seen[*e] {
			return
		}
		seen[*e] = true
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, 1, e.shard.Name, e.shard.Start, e.shard.End, strconv.FormatBool(e.serverSide))
	})
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
	e := &shardEntry{shard: s, serverSide: err == nil && list.ShardInfo != nil}
	log := ctrl.LoggerFrom(ctx)
	log.Info("Owning a shard of the namespaces", "shard", s.Name, "start", s.Start, "end", s.End, "serverSide", e.serverSide)
	if err != nil {
		log.Error(err, "Could not ask the API server whether it honours shard selectors; filtering on the client")
	}
	info, err := nudgemetrics.Register(reg, &shardInfo{
		desc: prometheus.NewDesc("nudge_shard_info",
			"1 for a nudge started with --shard: its range of namespace hashes [start, end) and whether the API server filters by it (server_side).",
			[]string{"shard", "start", "end", "server_side"}, nil),
	})
	if err != nil {
		return err
	}
	info.shards.add(ctx, e)
	return nil
}
