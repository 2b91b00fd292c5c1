package certmanager

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/admission"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

const (
	// release is the Helm release of every test, each in its own namespace.
	release = "nudge"
	// webhookName is the chart's name of the webhook's Service, Issuer,
	// Certificate and Secret (nudge.webhookName) for release.
	webhookName = release + "-webhook"
	// certSecret is the Secret of the webhook's certificate.
	certSecret = release + "-webhook-tls"
	// certDir is where the chart mounts certSecret in nudge's container.
	certDir = "/etc/nudge/webhook-certs"
	// caKey is the Secret's key of the CA certificate: cert-manager's and
	// the chart's.
	caKey = "ca.crt"
)

// auto opts a workload in with nudge's own annotation.
var auto = map[string]string{"nudge.dev/auto": "true"}

// namespace creates a namespace for t.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := plane.GenerateNamespace(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// helm runs the helm CLI (built by hack/chart/helm.sh) as the plane's
// admin, with Helm's own configuration, cache and data in a directory of
// t's, and returns its combined output.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	bin := charttest.Built(t, "helm", "hack/chart/helm.sh")
	cmd := exec.CommandContext(t.Context(), bin, append(args, "--kubeconfig", plane.Kubeconfig())...)
	cmd.Env = append(os.Environ(), "HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// helmChart runs `helm <verb> nudge <chart> -n ns --set <sets>` (install or
// upgrade), failing t when helm fails, and returns the release's manifest
// (`helm get manifest`). watchGlobally=false always: the webhook's
// namespaceSelector then holds ns alone, and no other test's writes are
// sent to this test's webhook.
func helmChart(t *testing.T, verb, ns string, sets ...string) charttest.Manifest {
	t.Helper()
	args := []string{verb, release, charttest.Chart(t), "--namespace", ns, "--set", strings.Join(append(sets, "reloader.watchGlobally=false"), ",")}
	if out, err := helm(t, args...); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	out, err := helm(t, "get", "manifest", release, "--namespace", ns)
	if err != nil {
		t.Fatalf("helm get manifest %s -n %s: %v\n%s", release, ns, err, out)
	}
	m, err := charttest.Parse([]byte(out))
	if err != nil {
		t.Fatalf("Parsing the manifest of %s: %v\n%s", release, err, out)
	}
	return m
}

// webhookConfig reads the chart's MutatingWebhookConfiguration of ns.
func webhookConfig(t *testing.T, ns string) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	NewWithT(t).Expect(k8s.Get(t.Context(), client.ObjectKey{Name: webhookName + "-" + ns}, cfg)).To(Succeed())
	return cfg
}

// caBundles returns, for each webhook of ns's configuration, the serial
// numbers of the certificates in its caBundle.
func caBundles(t *testing.T, ns string) func() [][]string {
	return func() [][]string {
		var out [][]string
		for _, h := range webhookConfig(t, ns).Webhooks {
			var serials []string
			for rest := h.ClientConfig.CABundle; ; {
				var block *pem.Block
				if block, rest = pem.Decode(rest); block == nil {
					break
				}
				c, err := x509.ParseCertificate(block.Bytes)
				if err != nil {
					t.Fatalf("A caBundle of %s holds %v", ns, err)
				}
				serials = append(serials, c.SerialNumber.String())
			}
			out = append(out, serials)
		}
		return out
	}
}

// pointAt rewrites the clientConfig of every webhook of ns's configuration
// from the chart's Service to https://addr/keep-trigger, keeping the rest
// (the caBundle, the annotations) as they are: a strategic merge patch by
// webhook name, which deletes the service.
func pointAt(t *testing.T, ns, addr string) {
	t.Helper()
	cfg := webhookConfig(t, ns)
	var hooks []string
	for _, h := range cfg.Webhooks {
		hooks = append(hooks, fmt.Sprintf(`{"name":%q,"clientConfig":{"service":null,"url":%q}}`, h.Name, "https://"+addr+admission.Path))
	}
	patch := client.RawPatch(types.StrategicMergePatchType, []byte(`{"webhooks":[`+strings.Join(hooks, ",")+`]}`))
	NewWithT(t).Expect(k8s.Patch(t.Context(), cfg, patch)).To(Succeed(), "pointing the webhooks at %s", addr)
}

// startCertManager runs cert-manager's controller and cainjector (built by
// hack/certmanager.sh) as the plane's admin, each acting in ns alone, as a
// namespaced cert-manager install does; leader election is not built in.
func startCertManager(t *testing.T, ns string) {
	t.Helper()
	for _, name := range []string{"cert-manager-controller", "cert-manager-cainjector"} {
		bin := charttest.Built(t, name, "hack/certmanager.sh")
		nt.StartProcess(t, bin, nil, "--kubeconfig="+plane.Kubeconfig(), "--namespace="+ns, "-v=2")
	}
}

// mount writes the Secret's keys into dir as the kubelet mounts a Secret
// volume (its atomic writer): the files in a directory of their own,
// ..data a symlink to it, each key a symlink through ..data; a second
// mount swaps ..data in one rename and removes the old directory.
func mount(t *testing.T, dir string, s *corev1.Secret) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	version, err := os.MkdirTemp(dir, "..version-")
	g.Expect(err).NotTo(HaveOccurred())
	for key, value := range s.Data {
		g.Expect(os.WriteFile(filepath.Join(version, key), value, 0o600)).To(Succeed())
		link := filepath.Join(dir, key)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			g.Expect(os.Symlink(filepath.Join("..data", key), link)).To(Succeed())
		}
	}
	tmp := filepath.Join(dir, "..data_tmp")
	g.Expect(os.Symlink(filepath.Base(version), tmp)).To(Succeed())
	g.Expect(os.Rename(tmp, filepath.Join(dir, "..data"))).To(Succeed())
	if old != "" {
		g.Expect(os.RemoveAll(filepath.Join(dir, old))).To(Succeed())
	}
}

// startNudge runs the nudge binary as the chart's Deployment in m runs it
// in ns: its args ($(POD_NAMESPACE) expanded), POD_NAMESPACE, and its
// ServiceAccount's token as its only credential; the webhook's certificate
// directory is certs (the Secret mounted there with mount), and it serves
// the webhook on addr. The metrics and probe servers are off.
func startNudge(t *testing.T, m charttest.Manifest, ns, certs, addr string) *nt.Process {
	t.Helper()
	g := NewWithT(t)
	deploy := &appsv1.Deployment{}
	charttest.Into(t, m.OfKind("Deployment")[0], deploy)
	pod := deploy.Spec.Template.Spec
	g.Expect(pod.Volumes).To(ContainElement(HaveField("Secret.SecretName", certSecret)), "the chart mounts the certificate's Secret")
	g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", certDir)))

	cs, err := kubernetes.NewForConfig(plane.Config())
	g.Expect(err).NotTo(HaveOccurred())
	token, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), pod.ServiceAccountName,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](7200)}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "a token of ServiceAccount %s", pod.ServiceAccountName)
	admin := plane.Config()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testbed"] = &clientcmdapi.Cluster{Server: admin.Host, CertificateAuthorityData: admin.CAData}
	kc.AuthInfos["nudge"] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	kc.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: "nudge"}
	kc.CurrentContext = "testbed"
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, kubeconfig)).To(Succeed())

	var args []string
	for _, a := range pod.Containers[0].Args {
		a = strings.ReplaceAll(a, "$(POD_NAMESPACE)", ns)
		args = append(args, strings.ReplaceAll(a, certDir, certs))
	}
	g.Expect(args).To(ContainElements("--admission-webhook", "--admission-webhook-cert-dir="+certs))
	args = append(args, "--admission-webhook-bind-address="+addr, "--kubeconfig="+kubeconfig,
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	p := nt.StartProcess(t, nudgeBin, []string{"POD_NAMESPACE=" + ns}, args...)
	g.Eventually(p.Output).WithTimeout(30*time.Second).Should(ContainSubstring("Starting nudge"), "nudge started")
	return p
}

// servedSerial returns the serial number of the certificate served at addr,
// "" when the handshake fails.
func servedSerial(addr string) string {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the certificate, not trusting it
	if err != nil {
		return ""
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// certificate parses the first certificate of the PEM data.
func certificate(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("No PEM block in %q", data)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// serial returns the serial number of the Secret's tls.crt.
func serial(t *testing.T, s *corev1.Secret) *big.Int {
	t.Helper()
	return certificate(t, s.Data[corev1.TLSCertKey]).SerialNumber
}

// caSerial returns the serial number of the Secret's ca.crt.
func caSerial(t *testing.T, s *corev1.Secret) string {
	t.Helper()
	return certificate(t, s.Data[caKey]).SerialNumber.String()
}

// secret reads the webhook's certificate Secret of ns.
func secret(t *testing.T, ns string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	NewWithT(t).Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: certSecret}, s)).To(Succeed())
	return s
}

// owner is a Deployment opted in to nudge, reading a ConfigMap, and the
// writes of its owner (kubectl replace, an operator, a GitOps sync).
type owner struct {
	t         *testing.T
	ns        string
	templates *nt.TemplateWrites
}

// manifest is the Deployment as its owner writes it: without nudge's keys.
func (o *owner) manifest() *appsv1.Deployment {
	return nt.Deployment(o.ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
}

// newOwner creates the ConfigMap and the Deployment in ns, and counts the
// Deployment's pod-template changes.
func newOwner(t *testing.T, ns string) *owner {
	t.Helper()
	o := &owner{t: t, ns: ns, templates: nt.WatchTemplates(t, k8s, ns)}
	g := NewWithT(t)
	g.Expect(k8s.Create(t.Context(), nt.ConfigMap(ns, "app", map[string]string{"a": "0"}))).To(Succeed())
	g.Expect(k8s.Create(t.Context(), o.manifest())).To(Succeed())
	return o
}

// live reads the Deployment.
func (o *owner) live() *appsv1.Deployment {
	d := &appsv1.Deployment{}
	NewWithT(o.t).Expect(k8s.Get(o.t.Context(), client.ObjectKey{Namespace: o.ns, Name: "web"}, d)).To(Succeed())
	return d
}

// rollouts returns how many times the Deployment's pod template changed.
func (o *owner) rollouts() int64 { return o.templates.Count("web") }

// baselined waits until nudge has recorded the Deployment's applied state.
func (o *owner) baselined() {
	o.t.Helper()
	NewWithT(o.t).Eventually(func() string { return o.live().Annotations[workload.AppliedAnnotation] }).
		WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge's baseline of Deployment %s/web", o.ns)
}

// change sets the ConfigMap's one key to value, and waits until nudge has
// rolled the Deployment rollouts times in all.
func (o *owner) change(value string, rollouts int64) {
	o.t.Helper()
	g := NewWithT(o.t)
	cm := &corev1.ConfigMap{}
	g.Expect(k8s.Get(o.t.Context(), client.ObjectKey{Namespace: o.ns, Name: "app"}, cm)).To(Succeed())
	cm.Data["a"] = value
	g.Expect(k8s.Update(o.t.Context(), cm)).To(Succeed())
	g.Eventually(o.rollouts).WithTimeout(30*time.Second).Should(BeEquivalentTo(rollouts), "nudge's rollout %d of Deployment %s/web", rollouts, o.ns)
}

// replace writes the manifest over the live Deployment, as kubectl replace
// and an owner's update do: the whole object, at the live
// resourceVersion, without nudge's keys. It returns the Deployment as
// stored (or as it would be, with dryRun).
func (o *owner) replace(opts ...client.UpdateOption) (*appsv1.Deployment, error) {
	d := o.manifest()
	d.ResourceVersion = o.live().ResourceVersion
	err := k8s.Update(o.t.Context(), d, opts...)
	return d, err
}

// webhookServes waits until the API server calls the webhook: a dry-run
// replace comes back with nudge's trigger kept. With failurePolicy Ignore
// a call that fails (TLS not verified, nothing listening) admits the
// write as it is, without the trigger.
func (o *owner) webhookServes(why string) {
	o.t.Helper()
	NewWithT(o.t).Eventually(func() map[string]string {
		d, err := o.replace(client.DryRunAll)
		if err != nil {
			return nil
		}
		return d.Spec.Template.Annotations
	}).WithTimeout(60*time.Second).Should(HaveKey(workload.RestartedAtAnnotation), "the API server to call the webhook (%s)", why)
}

// replaceRollsNothing replaces the Deployment with its manifest and checks
// that its pod template and nudge's state stay as they were: no rollout.
func (o *owner) replaceRollsNothing() {
	o.t.Helper()
	g := NewWithT(o.t)
	before, rolled := o.rollouts(), o.live()
	_, err := o.replace()
	g.Expect(err).NotTo(HaveOccurred(), "the owner replacing the Deployment with its manifest")
	g.Consistently(o.rollouts).WithTimeout(3*time.Second).Should(Equal(before), "no rollout from the owner's replace")
	live := o.live()
	g.Expect(live.Spec.Template).To(Equal(rolled.Spec.Template), "the pod template as nudge rolled it")
	g.Expect(live.Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, rolled.Annotations[workload.AppliedAnnotation]), "nudge's state kept")
	g.Expect(live.Labels).To(HaveKeyWithValue(workload.SealLabel, rolled.Labels[workload.SealLabel]), "nudge's seal kept")
}
