package watch_test

import (
	"os"
	"testing"

	nt "nudge.dev/nudge/internal/nudgetest"
)

// suite is the kube-apiserver the sources' tests read from, and its client.
var suite nt.Suite

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }
