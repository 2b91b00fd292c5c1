package e2e

import (
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/test/chart/charttest"
)

// The chart creates the key Secret without data and grants nudge get and
// update of it by name, and no create of Secrets: with the chart's
// ServiceAccount, creating a Secret is refused; four replicas starting at
// once write one key into the chart's Secret and agree on it; nudge then
// starts with that key and is refused nothing.
func TestKeySecretWrittenWithoutCreate(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "chart-key-")
	rel := install(t, "nudge-key", ns, charttest.Values{"reloader": map[string]any{"watchGlobally": false}, "recreateJobs": true})
	const key = "nudge-fingerprint-key"
	var s corev1.Secret
	g.Expect(k8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: key}, &s)).To(Succeed(), "the chart's key Secret")
	g.Expect(s.Data).To(BeEmpty(), "created without data")

	sa := saClient(t, rel)
	for _, c := range []struct {
		verb, name string
		allowed    bool
	}{{"create", "", false}, {"update", "other", false}, {"get", "other", false}, {"update", key, true}, {"get", key, true}} {
		g.Expect(may(t, rel.user(), c.verb, ns, c.name)).To(Equal(c.allowed), "%s Secret %q", c.verb, c.name)
	}

	keys := make([]fingerprint.Key, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = fingerprint.LoadKey(t.Context(), sa, ns, key) })
	}
	wg.Wait()
	for i := range keys {
		g.Expect(errs[i]).NotTo(HaveOccurred(), "replica %d", i)
		g.Expect(keys[i].ID()).To(Equal(keys[0].ID()), "replica %d agrees on the key", i)
	}
	stored, err := fingerprint.ReadKey(t.Context(), k8s, ns, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stored.ID()).To(Equal(keys[0].ID()), "the key written is the one they use")

	n := start(t, rel)
	g.Expect(n.logs()).To(MatchRegexp(`Starting nudge.*keyID="?`+stored.ID()), "nudge starts with the stored key")
	n.stop(t)
	n.expectNoForbidden(t)
	for _, e := range requestsOf(t, rel.user()) {
		g.Expect(e.Resource == "secrets" && e.Verb == "create").To(BeFalse(), "no Secret created: %+v", e)
	}
}

// Releases installed with helm in one namespace share the key Secret: the
// first creates it, the second finds it (lookup) and leaves it to the
// first, and it survives the first's uninstall with its key; a key Secret
// nudge created before the chart did (an upgrade from an older chart) is
// left as it is, key and all.
func TestHelmInstallsShareTheKeySecret(t *testing.T) {
	g := NewWithT(t)
	const key = "nudge-fingerprint-key"
	helmInstall := func(release, ns string) {
		t.Helper()
		out, err := helm(t, "install", release, charttest.Chart(t), "--namespace", ns, "--skip-crds",
			"--set", "reloader.watchGlobally=false")
		g.Expect(err).NotTo(HaveOccurred(), "helm install %s in %s: %s", release, ns, out)
	}

	ns := namespace(t, "chart-keys-")
	helmInstall("nudge-a", ns)
	helmInstall("nudge-b", ns)
	g.Expect(releaseManifest(t, "nudge-a", ns).Get("Secret", key)).NotTo(BeNil(), "the first release owns the key Secret")
	g.Expect(releaseManifest(t, "nudge-b", ns).Get("Secret", key)).To(BeNil(), "the second leaves it alone")
	k, err := fingerprint.LoadKey(t.Context(), k8s, ns, key)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := helm(t, "uninstall", "nudge-a", "--namespace", ns)
	g.Expect(err).NotTo(HaveOccurred(), "helm uninstall: %s", out)
	kept, err := fingerprint.ReadKey(t.Context(), k8s, ns, key)
	g.Expect(err).NotTo(HaveOccurred(), "the key Secret kept on uninstall")
	g.Expect(kept.ID()).To(Equal(k.ID()))
	out, err = helm(t, "upgrade", "nudge-b", charttest.Chart(t), "--namespace", ns, "--reuse-values")
	g.Expect(err).NotTo(HaveOccurred(), "helm upgrade: %s", out)
	helmInstall("nudge-a", ns)
	kept, err = fingerprint.ReadKey(t.Context(), k8s, ns, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept.ID()).To(Equal(k.ID()), "the key, through reinstall and upgrade")

	old := namespace(t, "chart-key-old-")
	k, err = fingerprint.LoadKey(t.Context(), k8s, old, key) // as nudge created it before the chart did
	g.Expect(err).NotTo(HaveOccurred())
	helmInstall("nudge", old)
	g.Expect(releaseManifest(t, "nudge", old).Get("Secret", key)).To(BeNil(), "nudge's own key Secret left alone")
	kept, err = fingerprint.ReadKey(t.Context(), k8s, old, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kept.ID()).To(Equal(k.ID()), "the key nudge created, kept")
}

// may asks the API server's authorizer whether user may verb the Secret
// name ("" for any) in ns.
func may(t *testing.T, user, verb, ns, name string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: verb, Resource: "secrets", Name: name}}}
	if err := k8s.Create(t.Context(), sar); err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// saClient returns a client of the plane with the token of the release's
// ServiceAccount as its only credential.
func saClient(t *testing.T, r *release) client.Client {
	t.Helper()
	token, err := kubectl(t, "create", "token", r.deploy.Spec.Template.Spec.ServiceAccountName, "-n", r.namespace, "--duration", "1h")
	if err != nil {
		t.Fatalf("kubectl create token: %v: %s", err, token)
	}
	admin := plane.Config()
	cfg := &rest.Config{Host: admin.Host, BearerToken: strings.TrimSpace(token),
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData}}
	c, err := nt.Client(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
