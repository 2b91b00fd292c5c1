// Package testbed runs a local Kubernetes control plane of real processes
// for nudge's integration tests, end-to-end tests, demo and benchmarks.
//
// Two modes:
//
//   - APIServer: etcd and kube-apiserver. Objects are stored, validated,
//     admitted and authorized (RBAC), but no controller acts on them.
//   - Cluster: also kube-controller-manager, kube-scheduler and kwok with
//     fake nodes, so that workloads really roll: a Deployment's new
//     ReplicaSet creates pods, the scheduler places them, kwok marks them
//     Running and Ready and deletes the old ones at once. No container runs.
//
// Use ForTest in a test, Main in a TestMain, or Start and Plane.Stop
// elsewhere. Config returns an admin client configuration (group
// system:masters); UserConfig returns a client-certificate identity that RBAC
// governs, for running a controller as it would run in a cluster.
// Options.AuditLog records every API request, for benchmarks that count them.
//
// # Binaries
//
// The plane runs the binaries `make kube-bins` builds (Kubernetes v1.36.3,
// etcd 3.6.16, kwok 0.8.0), found in Options.BinDir, else in the directory
// named by the environment variable NUDGE_KUBE_BINS (which the Makefile
// exports), else in os.UserCacheDir()/nudge/kube-bins/v1.36.3. This package
// is the only one in nudge that reads that variable. Start fails with
// ErrMissingBinary when a binary is missing.
//
// # Isolation
//
// Every component listens on 127.0.0.1 only, on ports that were free when the
// plane started (kwok listens on none), and keeps its state and its log
// (etcd.log, kube-apiserver.log, …) in a temporary directory of its own. Stop
// stops exactly the processes the plane started, and removes the directory
// unless asked to keep the logs (ForTest and Main keep them when a test
// failed, and say where). A component started by the plane is killed by the
// kernel if the test binary dies (Linux parent-death signal), and SIGINT or
// SIGTERM sent to the test binary stops the plane before the binary exits.
//
// No test may connect to a pod IP, a Service IP or a node address: they are
// fake (10.244.0.0/16, 10.0.0.0/24, 192.0.2.0/24) and nothing serves them.
//
// # Chaos
//
// Plane.RestartAPIServer kills kube-apiserver and starts it again on the same
// port and etcd; Plane.CompactEtcd compacts etcd's history, and
// Options.DisableWatchCache makes kube-apiserver serve watches from etcd, so
// that a watch resumed from before a compaction fails with 410 Gone.
// Plane.EtcdURL is where etcd serves its JSON gateway, through which a test
// can watch what kube-apiserver stores, whatever happens to kube-apiserver.
//
// # Things to know
//
//   - Pods are refused in a namespace until its default ServiceAccount exists:
//     create namespaces with Plane.CreateNamespace or GenerateNamespace, which
//     wait for it (cluster mode) or create it (apiserver mode).
//   - Deleting a namespace takes about 10 seconds: give each test a namespace
//     of its own and never wait for one to go.
//   - In apiserver mode no controller runs: the aggregated ClusterRoles
//     (view, edit, admin) are empty, no garbage collection happens, and
//     workloads never get pods or status.
//
// # Measured
//
// On the 2-core development machine (shared with other test runs), with
// `go test -count=1 -v ./internal/testbed/...`, over three runs:
//
//   - apiserver mode up: 2.9 to 4.5 s (etcd 0.2 to 1.1 s, kube-apiserver 2.5
//     to 3.5 s, of which about 1.3 s waiting for the RBAC bootstrap roles);
//   - cluster mode up: 4.2 to 5.2 s (TestClusterRollover);
//   - 3-replica Deployment rollover, from the pod-template patch until the
//     new ReplicaSet is fully available and every old pod is gone from the
//     API: 0.28 to 0.38 s (TestClusterRollover);
//   - Stop: 1.15 s, nearly all of it kube-apiserver's graceful shutdown.
package testbed
