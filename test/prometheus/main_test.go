// Package prometheus runs the Prometheus server (built by hack/prometheus.sh
// from the module and version promtool is pinned to) on 127.0.0.1, scraping
// the nudge binary of this tree and evaluating the chart's alerts as the
// chart renders them: a halted wave and a missing Secret fire their alerts,
// a healthy nudge fires none, and every panel of the chart's dashboard
// queries a series once nudge has rolled something.
package prometheus

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/test/chart/charttest"
)

var (
	plane *testbed.Plane
	k8s   client.Client
	// nudgeBin is the nudge binary built from this tree.
	nudgeBin string
)

func TestMain(m *testing.M) {
	// The tests' client logs nothing worth reading; unset, controller-runtime
	// prints a stack saying so.
	ctrllog.SetLogger(logr.Discard())
	os.Exit(nudgetest.MainWithBinary(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane, bin string) {
		plane, nudgeBin = p, bin
		c, err := nudgetest.Client(p.Config())
		if err != nil {
			panic(err)
		}
		k8s = c
	}))
}

// startNudge installs the ValueBinding CRD (the chart's) and runs the nudge
// binary watching ns alone, keeping its key and its leader-election Lease
// there, with its metrics on a free port of 127.0.0.1, leader election,
// value bindings (ConfigMap targets), waves of one rollout and no rollout
// window, plus args. It returns the metrics address; nudge is stopped when
// t ends.
func startNudge(t *testing.T, ns string, args ...string) (metrics string) {
	t.Helper()
	installValueBindingCRD(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := nudgetest.WriteKubeconfig(kubeconfig, plane.Config(), ns); err != nil {
		t.Fatal(err)
	}
	metrics = nudgetest.FreeAddr(t)
	nudgetest.StartProcess(t, nudgeBin, nil, append([]string{
		"--kubeconfig=" + kubeconfig,
		"--namespaces=" + ns,
		"--system-namespace=" + ns,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=0",
		"--leader-elect",
		"--value-bindings",
		"--value-binding-targets=ConfigMap",
		"--max-concurrent-rollouts=1",
		"--rollout-window=0",
	}, args...)...)
	return metrics
}

// installValueBindingCRD installs the chart's ValueBinding CRD (once: a
// second install finds it).
func installValueBindingCRD(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(charttest.Chart(t), "crds", "nudge.dev_valuebindings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(b, crd); err != nil {
		t.Fatalf("decoding the ValueBinding CRD: %v", err)
	}
	nudgetest.InstallCRD(t, k8s, crd)
}

// namespace creates a namespace of its own for t.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := plane.GenerateNamespace(t.Context(), prefix)
	if err != nil {
		t.Fatal(fmt.Errorf("creating a namespace: %w", err))
	}
	return ns
}
