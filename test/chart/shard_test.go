package chart

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/test/chart/charttest"
)

// TestShardReleasesDoNotCollide renders the shards of docs/scaling.md
// (testdata/shard-a.yaml, shard-b.yaml and the catch-all shard-rest.yaml) as
// three releases in one namespace, with value bindings on so that the
// admission policy renders too: no object of one has the kind, namespace and
// name of an object of another (cluster-scoped ClusterRoles,
// ClusterRoleBindings and the policy included), each elects a leader with a
// Lease of its own, all use one fingerprint key, and every namespace matches
// exactly one selector.
func TestShardReleasesDoNotCollide(t *testing.T) {
	g := NewWithT(t)
	values := charttest.Values{"valueBindings": map[string]any{"enabled": true}}
	shards := map[string]rendered{
		"nudge-a":    renderFiles(t, "nudge-a", "shard-a.yaml", values),
		"nudge-b":    renderFiles(t, "nudge-b", "shard-b.yaml", values),
		"nudge-rest": renderFiles(t, "nudge-rest", "shard-rest.yaml", values),
	}

	owner := map[string]string{}
	leases := map[string]string{}
	for name, r := range shards {
		for _, o := range r.m {
			id := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
			g.Expect(owner).NotTo(HaveKey(id), "%s rendered by two releases", id)
			owner[id] = name
		}
		g.Expect(r.m.OfKind("ClusterRole")).NotTo(BeEmpty(), "the check covers cluster-scoped names")
		g.Expect(r.m.OfKind("ValidatingAdmissionPolicy")).NotTo(BeEmpty(), "the check covers the admission policy")
		g.Expect(r.opts.LeaderElect).To(BeTrue(), name)
		g.Expect(leases).NotTo(HaveKey(r.opts.LeaderElectionID), "a Lease of each release's own")
		leases[r.opts.LeaderElectionID] = name
		g.Expect(r.opts.SystemNamespace).To(Equal(namespace), "one key Secret: one namespace...")
		g.Expect(r.opts.KeySecret).To(Equal(keySecret), "...and one name")
		g.Expect(r.canNamed("get", "", "secrets", namespace, keySecret)).To(BeTrue(), name)
	}

	selectors := map[string]labels.Selector{}
	for name, r := range shards {
		sel, err := labels.Parse(r.opts.NamespaceSelector)
		g.Expect(err).NotTo(HaveOccurred())
		selectors[name] = sel
	}
	for ns, want := range map[string]string{
		"nudge.dev/shard=a":              "nudge-a",
		"nudge.dev/shard=b":              "nudge-b",
		"team=shop":                      "nudge-rest",
		"":                               "nudge-rest",
		"team=shop,nudge.dev/shard=b":    "nudge-b",
		"nudge.dev/shard=a,other=shop-b": "nudge-a",
		"nudge.dev/shard=c":              "", // a typo: no shard
	} {
		set, err := labels.ConvertSelectorToLabelsMap(ns)
		g.Expect(err).NotTo(HaveOccurred())
		var matched []string
		for name, sel := range selectors {
			if sel.Matches(set) {
				matched = append(matched, name)
			}
		}
		if want == "" {
			g.Expect(matched).To(BeEmpty(), "a namespace labelled %q", ns)
		} else {
			g.Expect(matched).To(ConsistOf(want), "a namespace labelled %q", ns)
		}
	}
}

// renderFiles renders release in namespace with testdata/file, then values.
func renderFiles(t *testing.T, release, file string, values charttest.Values) rendered {
	t.Helper()
	m, out, err := charttest.TryRenderFiles(t, release, namespace, []string{charttest.Testdata(t, file)}, values)
	if err != nil {
		t.Fatalf("helm template %s -f %s: %v\n%s", release, file, err, out)
	}
	return renderedOf(t, m)
}
