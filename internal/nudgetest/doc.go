// Package nudgetest holds what tests need to run nudge: nudge in-process
// against the test control plane a package's tests share (Suite, Env), or
// as a process of its own (BuildBinary, StartProcess) where a test must kill
// it; several nudges on one plane (Cluster); the objects and CRDs tests use.
// In the manner of net/http/httptest.
package nudgetest
