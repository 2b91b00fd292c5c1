package nudgetest

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The third-party projects whose CRDs the tests of custom kinds install,
// pinned here and nowhere else. Their CRDs are taken from their Go modules
// at test time, never copied into this repository.
const (
	// KnativeServing is Knative Serving (Service: spec.template).
	KnativeServing = "knative.dev/serving@v0.51.0"
	// KEDA is KEDA (ScaledJob: spec.jobTargetRef.template).
	KEDA = "github.com/kedacore/keda/v2@v2.21.0"
	// PrometheusOperator is the Prometheus Operator (Prometheus: no pod
	// template; spec.podMetadata.annotations reach its pods).
	PrometheusOperator = "github.com/prometheus-operator/prometheus-operator@v0.85.0"
	// ExternalSecrets is the External Secrets Operator (ExternalSecret, a
	// producer of Secrets: its CRD serves v1 and v1beta1).
	ExternalSecrets = "github.com/external-secrets/external-secrets@v0.16.2"
	// CertManager is cert-manager (Certificate, a producer of Secrets).
	CertManager = "github.com/cert-manager/cert-manager@v1.21.2"
)

// KnativeServiceCRD returns Knative Serving's Service CRD.
func KnativeServiceCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return ModuleCRD(t, KnativeServing, "config/core/300-resources/service.yaml")
}

// KEDAScaledJobCRD returns KEDA's ScaledJob CRD.
func KEDAScaledJobCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return ModuleCRD(t, KEDA, "config/crd/bases/keda.sh_scaledjobs.yaml")
}

// PrometheusCRD returns the Prometheus Operator's Prometheus CRD.
func PrometheusCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return ModuleCRD(t, PrometheusOperator, "example/prometheus-operator-crd/monitoring.coreos.com_prometheuses.yaml")
}

// ExternalSecretCRD returns the External Secrets Operator's ExternalSecret
// CRD, as controller-gen writes it (the module's deploy/crds/bundle.yaml
// holds every CRD of the project in one file).
func ExternalSecretCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return ModuleCRD(t, ExternalSecrets, "config/crds/bases/external-secrets.io_externalsecrets.yaml")
}

// CertificateCRD returns cert-manager's Certificate CRD, as controller-gen
// writes it (plain YAML; the Helm chart templates its own copy).
func CertificateCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return ModuleCRD(t, CertManager, "deploy/crds/cert-manager.io_certificates.yaml")
}

// ModuleCRD returns the CustomResourceDefinition in the file at path of
// module (as "path@version"), which `go mod download` fetches from the Go
// module proxy into the module cache (at once when it is there). It fails
// t, never skips it, when the download or the decoding fails: the proxy is
// reachable wherever the tests run.
func ModuleCRD(t testing.TB, module, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	dir := moduleDir(t, module)
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("reading the CRD of %s: %v", module, err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		t.Fatalf("decoding %s of %s: %v", path, module, err)
	}
	if crd.Kind != "CustomResourceDefinition" || len(crd.Spec.Versions) == 0 {
		t.Fatalf("%s of %s is not a CustomResourceDefinition", path, module)
	}
	return crd
}

// moduleDir downloads module with `go mod download -json` (run outside
// nudge's own module, so its go.mod and go.sum are not touched) and returns
// its directory in the module cache.
func moduleDir(t testing.TB, module string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("downloading %s: the go command is needed to fetch third-party CRDs: %v", module, err)
	}
	cmd := exec.CommandContext(t.Context(), goBin, "mod", "download", "-json", module)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Error != "" || info.Dir == "" || runErr != nil {
		t.Fatalf("downloading %s from the Go module proxy failed (check GOPROXY and the network): %v %s %s",
			module, runErr, info.Error, stderr.String())
	}
	return info.Dir
}
