package nudgetest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	// ArgoRollouts is Argo Rollouts (Rollout: spec.template, or
	// spec.workloadRef to a Deployment). Its go.mod asks for a newer Go
	// than nudge's: see ModuleFile.
	ArgoRollouts = "github.com/argoproj/argo-rollouts@v1.10.2"
	// RolloutCRDPath is the Rollout CRD's file in the ArgoRollouts module.
	RolloutCRDPath = "manifests/crds/rollout-crd.yaml"
)

// RolloutCRD returns Argo Rollouts' Rollout CustomResourceDefinition, for
// tests of nudge's handling of Rollouts. No Argo Rollouts controller runs
// in the tests.
func RolloutCRD(t testing.TB) *apiextensionsv1.CustomResourceDefinition {
	return ModuleCRD(t, ArgoRollouts, RolloutCRDPath)
}

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
// module (as "path@version"; see ModuleFile), within 5 minutes, also in a
// cleanup. It fails t, never skips it, when the download or the decoding
// fails: the proxy is reachable wherever the tests run.
func ModuleCRD(t testing.TB, module, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	// Not t.Context() alone: a cleanup (removing a CRD) reads it too, after
	// that context is done.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 5*time.Minute)
	defer cancel()
	data, err := ModuleFile(ctx, module, path)
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

// ModuleFile returns the file at path (slash-separated) of module (as
// "path@version"), which `go mod download -json` fetches from the Go module
// proxy into the module cache (at once when it is there), run outside
// nudge's own module so that its go.mod and go.sum are not touched. It reads
// the module's directory, or, when the go command refuses to hand that out
// because the module's go.mod asks for a newer Go than the one running (a
// TooNewError, after the zip was downloaded and checked against the
// checksum database), the module's zip. It returns an error when the go
// command is missing or the download fails, naming GOPROXY.
func ModuleFile(ctx context.Context, module, path string) ([]byte, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("downloading %s: the go command is needed to fetch third-party files: %w", module, err)
	}
	tmp, err := os.MkdirTemp("", "nudge-module-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	cmd := exec.CommandContext(ctx, goBin, "mod", "download", "-json", module)
	cmd.Dir = tmp
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var info struct{ Path, Version, Dir, Zip, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("downloading %s from the Go module proxy failed (check GOPROXY and the network): %v %s", module, runErr, stderr.String())
	}
	switch {
	case info.Dir != "" && info.Error == "" && runErr == nil:
		return os.ReadFile(filepath.Join(info.Dir, filepath.FromSlash(path)))
	case info.Zip != "" && strings.Contains(info.Error, "requires go >="):
		return zipFile(info.Zip, info.Path+"@"+info.Version+"/"+path)
	}
	return nil, fmt.Errorf("downloading %s from the Go module proxy failed (check GOPROXY and the network): %v %s %s",
		module, runErr, info.Error, stderr.String())
}

// zipFile returns the file name of the module zip at zipPath. A module
// path with capital letters, escaped in the zip's names, is not looked for:
// no module pinned here has one.
func zipFile(zipPath, name string) ([]byte, error) {
	z, err := zip.OpenReader(zipPath)
	if err != nil {
		return nil, err
	}
	defer func() { _ = z.Close() }()
	f, err := z.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s of %s: %w", name, zipPath, err)
	}
	defer func() { _ = f.Close() }()
	return io.ReadAll(f)
}
