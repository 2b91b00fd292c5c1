package producer_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"nudge.dev/nudge/internal/apidiscovery"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/testbed"
)

// suite is the kube-apiserver the tests talk to, and its client; the
// producer CRDs are installed on it by the tests that need them
// (TestInstalledAfterStart has a plane of its own, where they are not).
var suite nt.Suite

func TestMain(m *testing.M) {
	// What logs through controller-runtime's root logger rather than a
	// context's (apidiscovery.Kinds' runnable, client-go's reflectors) is
	// dropped, as nudgetest.Start drops it.
	ctrl.SetLogger(logr.Discard())
	os.Exit(suite.Main(m))
}

// env is one test's namespace and its gate, run by a manager of its own
// that caches that namespace alone, with the Secrets its hook was called
// with and what it logged.
type env struct {
	t    *testing.T
	g    *WithT
	ctx  context.Context
	k8s  client.WithWatch
	ns   string
	gate *producer.Gate

	mu     sync.Mutex
	hooked []refs.Source
	logs   []string
}

// setup creates a namespace on p (k its client) and starts a gate of it
// (setupIn).
func setup(t *testing.T, p *testbed.Plane, k client.WithWatch) *env {
	t.Helper()
	ns, err := p.GenerateNamespace(t.Context(), "producer-")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return setupIn(t, p.Config(), k, ns)
}

// setupIn starts a gate of namespace ns as cfg's user (k the test's
// client), with served kinds watched as nudge does (discovery polled every
// 0.5 s where it cannot watch CRDs).
func setupIn(t *testing.T, cfg *rest.Config, k client.WithWatch, ns string) *env {
	t.Helper()
	e := &env{t: t, g: NewWithT(t), k8s: k, ns: ns}
	log := funcr.New(func(prefix, args string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.logs = append(e.logs, prefix+" "+args)
	}, funcr.Options{Verbosity: 1})
	ctx, cancel := context.WithCancel(logr.NewContext(t.Context(), log))
	e.ctx = ctx
	e.gate = startGate(e, cfg, log, ctx)
	t.Cleanup(cancel) // runs before startGate's wait for the manager

	return e
}

// startGate makes a manager of cfg, a gate and its watch with it, and runs
// the manager until ctx ends (waiting for it to return when t ends).
func startGate(e *env, cfg *rest.Config, log logr.Logger, ctx context.Context) *producer.Gate {
	e.t.Helper()
	scheme := runtime.NewScheme()
	e.g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	mgr, err := ctrl.NewManager(rest.CopyConfig(cfg), ctrl.Options{Scheme: scheme, Logger: log,
		Metrics: metricsserver.Options{BindAddress: "0"}, Cache: cache.Options{DefaultNamespaces: map[string]cache.Config{e.ns: {}}}})
	e.g.Expect(err).NotTo(HaveOccurred())
	kinds, err := apidiscovery.New(mgr.GetConfig(), 500*time.Millisecond, false, mgr.Add)
	e.g.Expect(err).NotTo(HaveOccurred())
	gate, err := producer.New(mgr, cache.Options{DefaultNamespaces: map[string]cache.Config{e.ns: {}}}, func(s refs.Source) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.hooked = append(e.hooked, s)
	})
	e.g.Expect(err).NotTo(HaveOccurred())
	e.g.Expect(gate.Watch(ctx, kinds)).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	e.t.Cleanup(func() {
		select {
		case err := <-done:
			if err != nil {
				e.t.Errorf("the manager stopped with an error: %v", err)
			}
		case <-time.After(30 * time.Second):
			e.t.Error("the manager did not stop within 30 s")
		}
	})
	return gate
}

// secret returns the Secret name of the test's namespace with annotations
// and, when owner is set, owner as its controller.
func (e *env) secret(name string, annotations map[string]string, owner *unstructured.Unstructured) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name, Annotations: annotations},
		Data: map[string][]byte{"password": []byte("hunter2")}}
	if owner != nil {
		controller := true
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(),
			Name: owner.GetName(), UID: owner.GetUID(), Controller: &controller}}
	}
	return s
}

// create creates objs.
func (e *env) create(objs ...client.Object) {
	e.t.Helper()
	for _, o := range objs {
		e.g.Expect(e.k8s.Create(e.ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
}

// of returns a function reading the gate's answer for secret.
func (e *env) of(secret *corev1.Secret) func() producer.Status {
	return func() producer.Status {
		st, err := e.gate.Of(e.ctx, secret)
		e.g.Expect(err).NotTo(HaveOccurred())
		return st
	}
}

// becomes waits up to 20 s until the gate answers want for secret.
func (e *env) becomes(secret *corev1.Secret, want producer.Status, what string) {
	e.t.Helper()
	e.g.Eventually(e.of(secret)).WithTimeout(20*time.Second).Should(Equal(want), what)
}

// setStatus replaces the status of the producer u through its status
// subresource, as its controller does, and reads u back.
func (e *env) setStatus(u *unstructured.Unstructured, status map[string]any) {
	e.t.Helper()
	e.g.Eventually(func() error {
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		u.Object["status"] = status
		return e.k8s.Status().Update(e.ctx, u)
	}).WithTimeout(10*time.Second).Should(Succeed(), "updating the status of %s %s", u.GetKind(), u.GetName())
}

// setSpec sets field of the spec of the producer u (a new generation), and
// reads u back.
func (e *env) setSpec(u *unstructured.Unstructured, value any, field ...string) {
	e.t.Helper()
	e.g.Eventually(func() error {
		if err := e.k8s.Get(e.ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return err
		}
		if err := unstructured.SetNestedField(u.Object, value, append([]string{"spec"}, field...)...); err != nil {
			return err
		}
		return e.k8s.Update(e.ctx, u)
	}).WithTimeout(10*time.Second).Should(Succeed(), "updating the spec of %s %s", u.GetKind(), u.GetName())
}

// hookedWith returns a function telling whether the hook was called with
// the Secret name of the test's namespace since the last forget.
func (e *env) hookedWith(name string) func() bool {
	return func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return slices.Contains(e.hooked, refs.Source{Kind: refs.Secret, Namespace: e.ns, Name: name})
	}
}

// hooks returns the Secrets the hook was called with since the last forget.
func (e *env) hooks() []refs.Source {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.hooked)
}

// forget forgets the hook's calls so far.
func (e *env) forget() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hooked = nil
}

// log returns what the gate, its manager and apidiscovery.Kinds logged.
func (e *env) log() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.logs, "\n")
}

// externalSecret returns an ExternalSecret of the namespace in version
// (v1 or v1beta1) writing the Secret target ("" for its own name).
func (e *env) externalSecret(version, name, target string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(producer.ExternalSecret.WithVersion(version))
	u.SetNamespace(e.ns)
	u.SetName(name)
	spec := map[string]any{"refreshInterval": "1h", "secretStoreRef": map[string]any{"kind": "SecretStore", "name": "vault"},
		"data": []any{map[string]any{"secretKey": "password", "remoteRef": map[string]any{"key": "db/password"}}}}
	if target != "" {
		spec["target"] = map[string]any{"name": target}
	}
	u.Object["spec"] = spec
	return u
}

// certificate returns a Certificate of the namespace writing the Secret
// secretName.
func (e *env) certificate(name, secretName string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(producer.Certificate.WithVersion("v1"))
	u.SetNamespace(e.ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{"secretName": secretName, "dnsNames": []any{"shop.example.com"},
		"issuerRef": map[string]any{"name": "ca", "kind": "Issuer"}}
	return u
}

// readyCondition is a status with a Ready condition; observed 0 leaves the
// condition's observedGeneration out.
func readyCondition(status, reason, message string, observed int64) map[string]any {
	c := map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message,
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if observed != 0 {
		c["observedGeneration"] = observed
	}
	return map[string]any{"conditions": []any{c}}
}
