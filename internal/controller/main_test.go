package controller_test

import (
	"os"
	"testing"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// suite is the kube-apiserver every test here talks to, and its client.
var suite nt.Suite

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }

// env is one test's namespace and its nudge, with this package's helpers.
type env struct{ *nt.Env }

// setup creates a namespace for t and starts a nudge watching it, unless
// start is false.
func setup(t *testing.T, start bool, mutate func(*options.Options)) *env {
	t.Helper()
	return &env{suite.Setup(t, start, mutate)}
}
