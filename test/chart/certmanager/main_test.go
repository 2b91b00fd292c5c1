// Package certmanager installs nudge's chart with its admission webhook on
// a real kube-apiserver beside the real cert-manager (its controller and
// cainjector, built from the module cert-manager is released from by
// hack/certmanager.sh), and runs nudge as a process serving the webhook with
// the certificate cert-manager issued: the API server calls it, verifying
// TLS against the caBundle cainjector injected, across a renewal; and, with
// certManager off, against the CA Helm generates and keeps across upgrades.
//
// The testbed cannot reach a Service, so each test points the rendered
// webhooks' clientConfig at https://127.0.0.1:PORT (the annotations kept),
// and asks for 127.0.0.1 in the certificate (the Certificate's ipAddresses,
// the Secret Helm generates: the testbed's stand-in for the Service's
// address). cert-manager's own webhook is not run: it validates and
// defaults cert-manager's objects, and the chart's objects are valid as
// rendered.
package certmanager

import (
	"os"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

var (
	// plane is etcd and kube-apiserver alone: no controller runs, so the
	// pod-template writes are nudge's rollouts and the tests' own.
	plane *testbed.Plane
	// k8s is the plane's admin.
	k8s client.WithWatch
	// nudgeBin is the nudge binary built from this tree.
	nudgeBin string
)

func TestMain(m *testing.M) {
	os.Exit(nt.MainWithBinary(m, testbed.Options{Mode: testbed.APIServer}, func(p *testbed.Plane, bin string) {
		plane, nudgeBin = p, bin
		scheme := runtime.NewScheme()
		_ = clientgoscheme.AddToScheme(scheme)
		_ = apiextensionsv1.AddToScheme(scheme)
		_ = admissionregistrationv1.AddToScheme(scheme)
		c, err := client.NewWithWatch(p.Config(), client.Options{Scheme: scheme})
		if err != nil {
			panic(err)
		}
		k8s = c
	}))
}
