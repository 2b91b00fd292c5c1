package controller_test

import (
	"testing"

	. "github.com/onsi/gomega"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// Without --namespaces the cache has one informer per kind for the whole
// cluster (the other tests all run with --namespaces, one informer per
// namespace), and the source index is fed by its events. Both kinds of index
// key are looked up: a source's name and a name pattern.
func TestWholeClusterCacheIndex(t *testing.T) {
	e := setup(t, false, nil)
	var ns corev1.Namespace
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKey{Name: e.NS}, &ns)).To(Succeed())
	ns.Labels = map[string]string{"nudge.dev/test": e.NS}
	e.G.Expect(suite.K8s.Update(e.Ctx, &ns)).To(Succeed())

	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.ConfigMap(e.NS, "ext-1", map[string]string{"a": "1"}),
		nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(e.NS, "named", 1, map[string]string{"configmap.reloader.stakater.com/reload": "ext-.*"}))
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) {
		// Every namespace is cached; only this test's is reconciled.
		o.Namespaces = nil
		o.NamespaceSelector = "nudge.dev/test=" + e.NS
	})
	e.Baselined("web")
	e.Baselined("named")

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.UpdateConfigMap("ext-1", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("named", 1)
	e.G.Expect(e.Rollouts("web")()).To(BeEquivalentTo(1), "Deployment web rolled for a source it does not use")
}
