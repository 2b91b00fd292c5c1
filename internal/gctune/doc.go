// Package gctune holds how nudge sizes and returns the Go runtime's heap
// around its bursts of work: a wider garbage collector headroom while it
// starts and while it writes workloads (fewer collections, less CPU), and
// the return to the operating system of the memory its start freed, once
// that start is done.
//
// At 100,000 sources and 25,000 workloads the return lowers the idle
// working set, as the kubelet computes it, from 194 to 152 MiB
// (docs/performance.md); the headroom is what keeps the start's CPU in
// bounds at GOGC=20 (cmd/nudge).
package gctune
