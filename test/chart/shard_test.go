package chart

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/test/chart/charttest"
)

// TestShardReleasesDoNotCollide renders the two shards of docs/scaling.md
// (testdata/shard-a.yaml and shard-b.yaml) as two releases in one
// namespace, with value bindings on so that the admission policy renders
// too: no object of one has the kind, namespace and name of an object of the
// other (cluster-scoped ClusterRoles, ClusterRoleBindings and the policy
// included), each elects a leader with a Lease of its own, both use one
// fingerprint key, and no namespace can match both selectors.
func TestShardReleasesDoNotCollide(t *testing.T) {
	g := NewWithT(t)
	values := charttest.Values{"valueBindings": map[string]any{"enabled": true}}
	a := renderFiles(t, "nudge-a", "shard-a.yaml", values)
	b := renderFiles(t, "nudge-b", "shard-b.yaml", values)

	owner := map[string]string{}
	for name, r := range map[string]rendered{"nudge-a": a, "nudge-b": b} {
		for _, o := range r.m {
			id := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
			g.Expect(owner).NotTo(HaveKey(id), "%s rendered by both releases", id)
			owner[id] = name
		}
	}
	g.Expect(a.m.OfKind("ClusterRole")).NotTo(BeEmpty(), "the check covers cluster-scoped names")
	g.Expect(a.m.OfKind("ValidatingAdmissionPolicy")).NotTo(BeEmpty(), "the check covers the admission policy")

	g.Expect(a.opts.LeaderElect).To(BeTrue())
	g.Expect(a.opts.LeaderElectionID).NotTo(Equal(b.opts.LeaderElectionID), "a Lease of each release's own")
	g.Expect(a.opts.SystemNamespace).To(Equal(b.opts.SystemNamespace), "one key Secret: one namespace...")
	g.Expect(a.opts.KeySecret).To(Equal(b.opts.KeySecret), "...and one name")
	g.Expect(a.canNamed("get", "", "secrets", namespace, keySecret)).To(BeTrue())
	g.Expect(b.canNamed("get", "", "secrets", namespace, keySecret)).To(BeTrue())

	selA, err := labels.Parse(a.opts.NamespaceSelector)
	g.Expect(err).NotTo(HaveOccurred())
	selB, err := labels.Parse(b.opts.NamespaceSelector)
	g.Expect(err).NotTo(HaveOccurred())
	for ns, want := range map[string][2]bool{
		"nudge.dev/shard=a":              {true, false},
		"nudge.dev/shard=b":              {false, true},
		"nudge.dev/shard=c":              {false, false},
		"team=shop":                      {false, false},
		"team=shop,nudge.dev/shard=b":    {false, true},
		"nudge.dev/shard=a,other=shop-b": {true, false},
	} {
		set, err := labels.ConvertSelectorToLabelsMap(ns)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect([2]bool{selA.Matches(set), selB.Matches(set)}).To(Equal(want), "a namespace labelled %s: matched by shard a, shard b", ns)
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
