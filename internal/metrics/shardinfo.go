package metrics

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"nudge.dev/nudge/internal/shard"
)

// ShardRegisterer returns reg for the whole cluster, and for a shard reg
// with every series registered through it labelled shard="<s.Name>" (as
// given: "1/3", or "0xSTART-0xEND"), so that a shard's series stay apart
// without a join on nudge_shard_info. nudge_shard_info, which names its
// shard itself, is registered with reg directly (RegisterShardInfo).
//
// A series registered with and without the label cannot be served by one
// registry: the nudges of one process (tests run several) must all be
// sharded or all not. Those of different shards are registered apart, one
// collector for each shard, reused by a nudge of the same shard started
// again.
func ShardRegisterer(reg prometheus.Registerer, s shard.Shard) prometheus.Registerer {
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

// RegisterShardInfo registers nudge_shard_info with reg (or reuses the
// collector registered there before) and serves s in it, with serverSide
// (whether the API server filters by s's selector), until ctx, the life of
// its nudge, is done. It returns any registration error.
func RegisterShardInfo(ctx context.Context, reg prometheus.Registerer, s shard.Shard, serverSide bool) error {
	info, err := Register(reg, &shardInfo{
		desc: prometheus.NewDesc("nudge_shard_info",
			"1 for a nudge started with --shard: its range of namespace hashes [start, end) and whether the API server filters by it (server_side).",
			[]string{"shard", "start", "end", "server_side"}, nil),
	})
	if err != nil {
		return err
	}
	info.shards.add(ctx, &shardEntry{shard: s, serverSide: serverSide})
	return nil
}
