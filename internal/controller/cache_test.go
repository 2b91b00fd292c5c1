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
// cluster, and the source index is that informer's own (the other tests all
// run with --namespaces, whose per-namespace informers use a field index).
// Both kinds of index key are looked up: a source's name and a name pattern.
func TestWholeClusterCacheIndex(t *testing.T) {
	e := setup(t, false, nil)
	var ns corev1.Namespace
	e.g.Expect(k8s.Get(e.ctx, client.ObjectKey{Name: e.ns}, &ns)).To(Succeed())
	ns.Labels = map[string]string{"nudge.dev/test": e.ns}
	e.g.Expect(k8s.Update(e.ctx, &ns)).To(Succeed())

	e.create(nt.ConfigMap(e.ns, "app", map[string]string{"a": "1"}),
		nt.ConfigMap(e.ns, "ext-1", map[string]string{"a": "1"}),
		nt.Deployment(e.ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(e.ns, "named", 1, map[string]string{"configmap.reloader.stakater.com/reload": "ext-.*"}))
	e.nudge = nt.Start(t, plane.Config(), e.ns, func(o *options.Options) {
		// Every namespace is cached; only this test's is reconciled.
		o.Namespaces = nil
		o.NamespaceSelector = "nudge.dev/test=" + e.ns
	})
	e.baselined("web")
	e.baselined("named")

	e.updateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.rolledTo("web", 1)
	e.updateConfigMap("ext-1", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.rolledTo("named", 1)
	e.g.Expect(e.rollouts("web")()).To(BeEquivalentTo(1), "Deployment web rolled for a source it does not use")
}
