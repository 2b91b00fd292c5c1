package chart

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/labels"

	"nudge.dev/nudge/internal/shard"
	"nudge.dev/nudge/test/chart/charttest"
)

// TestShardReleasesDoNotCollide renders the shards of docs/scaling.md
// (testdata/shard-a.yaml, shard-b.yaml and the catch-all shard-rest.yaml) as
// three releases in one namespace, with value bindings on so that the
// admission policy renders too: no object of one has the kind, namespace and
// name of an object of another (cluster-scoped ClusterRoles,
// ClusterRoleBindings and the policy included), each elects a leader with a
// Lease of its own, all use one fingerprint key, and every namespace matches
// exactly one selector. The key Secret is the one object each renders: Helm
// installs it with the first release, and lookup makes the others leave it
// alone (TestHelmInstallsShareTheKeySecret in test/chart/e2e).
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
			if id == "Secret "+namespace+"/"+keySecret {
				g.Expect(o.Object).NotTo(HaveKey("data"), "the shared key Secret, rendered without data")
				continue
			}
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

// TestShardsRenderAStatefulSet: sharding.shards: 3 renders, instead of the
// Deployment, a StatefulSet of 3 pods, each running nudge with
// --shard=<its ordinal>/3 (the kubelet expands $(NUDGE_SHARD) from the pod's
// apps.kubernetes.io/pod-index label), leader election on a Lease per shard,
// and the RBAC of an unsharded release. The default renders no StatefulSet.
func TestShardsRenderAStatefulSet(t *testing.T) {
	g := NewWithT(t)
	g.Expect(charttest.Render(t, release, namespace, nil).OfKind("StatefulSet")).To(BeEmpty(), "no sharding by default")

	m := charttest.Render(t, release, namespace, charttest.Values{"sharding": map[string]any{"shards": 3}})
	g.Expect(m.OfKind("Deployment")).To(BeEmpty())
	sets := m.OfKind("StatefulSet")
	g.Expect(sets).To(HaveLen(1))
	var sts appsv1.StatefulSet
	charttest.Into(t, sets[0], &sts)
	g.Expect(sts.Spec.Replicas).To(HaveValue(Equal(int32(3))))
	g.Expect(sts.Spec.PodManagementPolicy).To(Equal(appsv1.OrderedReadyPodManagement), "one shard replaced at a time")
	c := sts.Spec.Template.Spec.Containers[0]
	g.Expect(c.Env).To(ContainElement(HaveField("ValueFrom.FieldRef.FieldPath", "metadata.labels['apps.kubernetes.io/pod-index']")))
	var leases []string
	for ordinal := range 3 {
		args := make([]string, len(c.Args))
		for i, a := range c.Args {
			args[i] = strings.ReplaceAll(a, "$(NUDGE_SHARD)", strconv.Itoa(ordinal))
		}
		opts := parseArgs(t, args, namespace)
		g.Expect(opts.Shard).To(Equal(fmt.Sprintf("%d/3", ordinal)))
		g.Expect(opts.LeaderElect).To(BeTrue())
		s, err := shard.Parse(opts.Shard)
		g.Expect(err).NotTo(HaveOccurred())
		leases = append(leases, s.LeaseName(opts.LeaderElectionID))
	}
	g.Expect(leases).To(HaveLen(3))
	g.Expect(leases[0]).NotTo(Equal(leases[1]), "a Lease per shard")

	r := rendered{m: m, grants: grants(t, m, namespace)}
	for _, lease := range leases {
		g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", namespace, lease)).To(BeTrue(), "shard Lease %s granted", lease)
	}
	notLeases := func(gs []grant) []grant {
		var out []grant
		for _, gr := range gs {
			if !slices.Contains(gr.rule.Resources, "leases") {
				out = append(out, gr)
			}
		}
		return out
	}
	elected := render(t, charttest.Values{"replicas": 2})
	g.Expect(notLeases(r.grants)).To(ConsistOf(notLeases(elected.grants)), "the RBAC of an unsharded release with leader election, but for the Leases")
}
