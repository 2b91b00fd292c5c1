// Package controller holds the workload reconciler: for one workload kind,
// it reads from the caches what the workload references and what its
// sources hold now (Resolver), asks rollout.Decide, and writes the one
// change the decision calls for, with its Events, log lines and metrics.
package controller
