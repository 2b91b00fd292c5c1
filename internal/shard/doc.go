// Package shard splits a cluster between nudges by namespace hash
// (--shard): each owns the namespaces whose FNV-1a 64 hash falls in its
// range (Shard, Parse, Balanced), lists and watches only their objects and
// asks the API server to send only those (ListerWatcher: Kubernetes'
// ShardedListAndWatch, KEP-5866, whose selector and matcher are
// apimachinery's sharding package), and reads the sources of other shards'
// namespaces that its workloads name through watches of those objects alone
// (NewCache).
package shard
