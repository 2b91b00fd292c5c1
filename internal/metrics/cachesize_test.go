package metrics_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/testbed"
)

// nudge_cache_objects{resource} counts the objects of each resource in
// nudge's caches as the API server holds them in the namespaces nudge
// watches, follows creates and deletes, and is gone once nudge stops. Not
// parallel: the gauge is the process's (nudge in this process).
func TestCacheObjects(t *testing.T) {
	g := NewWithT(t)
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	c, err := client.New(p.Config(), client.Options{Scheme: scheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := t.Context()
	ns, err := p.GenerateNamespace(ctx, "cache-")
	g.Expect(err).NotTo(HaveOccurred())
	other, err := p.GenerateNamespace(ctx, "unwatched-")
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range []client.Object{
		nt.ConfigMap(ns, "a", map[string]string{"k": "v"}), nt.ConfigMap(ns, "b", nil), nt.ConfigMap(ns, "c", nil),
		nt.Secret(ns, "s", map[string]string{"k": "v"}),
		nt.Deployment(ns, "web", 1, nil, nt.EnvFrom("ConfigMap", "a")),
		nt.ConfigMap(other, "elsewhere", nil), nt.Secret(other, "elsewhere", nil),
	} {
		g.Expect(c.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}
	// No settings ConfigMap: it would be created in ns while the test
	// counts ConfigMaps there.
	n := nt.Start(t, p.Config(), ns, func(o *options.Options) { o.SettingsConfigMap = "" })

	// served returns what the API server holds in ns, by resource, for the
	// resources the test checks.
	served := func() map[string]float64 {
		out := map[string]float64{}
		for resource, list := range map[string]client.ObjectList{
			"configmaps": &corev1.ConfigMapList{}, "secrets": &corev1.SecretList{},
			"deployments.apps": &appsv1.DeploymentList{}, "statefulsets.apps": &appsv1.StatefulSetList{},
		} {
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			out[resource] = float64(meta.LenList(list))
		}
		return out
	}
	checked := func() map[string]float64 {
		all := cacheObjects()
		out := map[string]float64{}
		for _, r := range []string{"configmaps", "secrets", "deployments.apps", "statefulsets.apps"} {
			if v, ok := all[r]; ok {
				out[r] = v
			}
		}
		return out
	}
	// Both read at each try: nudge creates its key Secret at start.
	matches := func(g Gomega) { g.Expect(checked()).To(Equal(served())) }
	g.Expect(served()).To(HaveKeyWithValue("configmaps", 3.0))
	g.Eventually(matches).WithTimeout(30*time.Second).Should(Succeed(),
		"nudge_cache_objects counts what the API server holds in the watched namespace (the key Secret included)")

	g.Expect(c.Delete(ctx, nt.ConfigMap(ns, "b", nil))).To(Succeed())
	g.Expect(c.Create(ctx, nt.Secret(ns, "t", nil))).To(Succeed())
	g.Expect(c.Create(ctx, nt.Secret(ns, "u", nil))).To(Succeed())
	g.Eventually(matches).WithTimeout(30*time.Second).Should(Succeed(), "a delete and two creates followed")
	g.Expect(served()).To(HaveKeyWithValue("configmaps", 2.0))

	n.Stop(t)
	g.Eventually(cacheObjects).WithTimeout(5*time.Second).Should(BeEmpty(), "a stopped nudge's caches count no more")
}

// cacheObjects returns nudge_cache_objects of this process's registry by
// resource.
func cacheObjects() map[string]float64 {
	families, err := metrics.Registry.Gather()
	if err != nil {
		return nil
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "nudge_cache_objects" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "resource" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}
