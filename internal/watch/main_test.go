package watch_test

import (
	"os"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

// plane is the kube-apiserver the sources' tests read from.
var (
	plane *testbed.Plane
	k8s   client.WithWatch
)

func TestMain(m *testing.M) { os.Exit(nt.Main(m, &plane, &k8s)) }
