// Package resolve holds nudge's reference resolution: for one workload, the
// references its dialects select (Selector) and what became of each once
// its source was read (Resolved), gathered into rollout.Decide's input
// (Resolver.Inputs): over the cache in the reconciler, over the API with
// the user's permissions in nudge explain.
package resolve
