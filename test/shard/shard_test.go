package shard

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/shard"
)

// TestThreeShards: three nudges, --shard 0/3, 1/3 and 2/3, each with a key
// of its own, split the namespaces of one cluster by hash. Each baselines
// the workloads of its own namespaces alone (a shard that cached another's
// workload would baseline it with its own key) and rolls them exactly once
// per change. A workload naming a ConfigMap of another shard's namespace
// rolls once per change of it, by its own shard, which watches that one
// ConfigMap. With the gate on, every cluster-wide list and watch a shard
// sends carries its selector and it is sent only its namespaces' objects;
// with the gate off the server sends everything and the shard filters.
func TestThreeShards(t *testing.T) {
	eachPlane(t, func(t *testing.T, pl *plane) {
		c := newCluster(t, pl, false)
		var members []*member
		owners := map[*nt.Space]*member{}
		for _, name := range []string{"0/3", "1/3", "2/3"} {
			m := c.start(name)
			members = append(members, m)
			for range 2 {
				owners[c.space(m.s, nil)] = m
			}
		}
		// A workload of shard 0 naming a ConfigMap of a namespace of shard 1.
		home, away := c.space(members[0].s, nil), c.space(members[1].s, nil)
		owners[home], owners[away] = members[0], members[1]
		c.Create(nt.ConfigMap(away.Name, "shared", map[string]string{"v": "1"}),
			nt.Deployment(home.Name, "cross", 1, map[string]string{"nudge.dev/configmaps": away.Name + "/shared"}))
		c.baselinedBy(owners)
		c.G.Eventually(func() string { return c.Applied(home, "cross") }).WithTimeout(30*time.Second).
			Should(HavePrefix("v1."+members[0].KeyID), "the cross-shard workload baselined by its own shard")

		want := map[*nt.Space]int64{}
		for n := range owners {
			c.Change(n, "app", "2")
			want[n] = 1
		}
		c.RolledTo(want)
		for n, owner := range owners {
			for _, m := range members {
				expected := 0
				if m == owner {
					expected = 1
				}
				c.G.Expect(nt.RolledBy(m.Member, n)).To(Equal(expected), "rollouts of %s/web logged by shard %s", n.Name, m.s.Name)
			}
		}

		cross := func() int64 { return home.Templates.Count("cross") }
		c.G.Expect(cross()).To(BeZero())
		for i, v := range []string{"2", "3"} {
			c.Change(away, "shared", v)
			c.G.Eventually(cross).WithTimeout(30*time.Second).Should(Equal(int64(i+1)), "the cross-shard workload rolled once per change")
			c.G.Consistently(cross).WithTimeout(3 * time.Second).Should(Equal(int64(i + 1)))
		}
		c.G.Expect(members[0].sent.urls()).To(ContainElement(And(
			ContainSubstring("/namespaces/"+away.Name+"/configmaps?"),
			ContainSubstring("fieldSelector=metadata.name%3Dshared"))), "shard 0 watches the one ConfigMap of shard 1 it reads")

		for _, m := range members {
			c.G.Expect(m.Nudge.Logs()).To(ContainSubstring(`"serverSide":`+strconv.FormatBool(pl.gate)), "shard %s found whether the server filters", m.s.Name)
			sent := m.sent.sentFrom()
			if !pl.gate {
				c.G.Expect(sent).To(ContainElement(Not(BeZero())))
				c.G.Expect(foreign(m.s, sent)).NotTo(BeEmpty(), "without the gate the server sends shard %s every namespace's objects", m.s.Name)
				continue
			}
			c.G.Expect(foreign(m.s, sent)).To(BeEmpty(), "with the gate shard %s is sent only its namespaces' objects", m.s.Name)
			for _, u := range m.sent.urls() {
				if clusterWide(u) {
					c.G.Expect(u).To(ContainSubstring("shardSelector="), "every cluster-wide list and watch of shard %s carries its selector", m.s.Name)
				}
			}
		}

		// Every series of nudge's own names its shard; each shard counted
		// its own rollouts.
		rolled := map[string]bool{}
		for name, series := range nudgeSeries(t) {
			for _, labels := range series {
				c.G.Expect(labels).To(HaveKeyWithValue("shard", Not(BeEmpty())), "%s %v carries its shard", name, labels)
				if name == "nudge_rollouts_total" {
					rolled[labels["shard"]] = true
				}
			}
		}
		for _, m := range members {
			c.G.Expect(rolled).To(HaveKey(m.s.Name), "nudge_rollouts_total{shard=%q} served", m.s.Name)
		}
	})
}

// nudgeSeries returns the label sets of each nudge_* and reloader_* series
// the process serves (every nudge of a test serves the process's one
// registry), by metric name.
func nudgeSeries(t *testing.T) map[string][]map[string]string {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gathering the metrics: %v", err)
	}
	out := map[string][]map[string]string{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "nudge_") && !strings.HasPrefix(f.GetName(), "reloader_") {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out[f.GetName()] = append(out[f.GetName()], labels)
		}
	}
	return out
}

// foreign returns the namespaces of sent that s does not own.
func foreign(s shard.Shard, sent map[string]int) []string {
	var out []string
	for ns := range sent {
		if !s.Owns(ns) {
			out = append(out, ns)
		}
	}
	return out
}

func clusterWide(u string) bool {
	parsed, err := url.Parse(u)
	return err == nil && clusterWideCollection(parsed.Path)
}

// TestReshard: the shard set goes from two shards to three as a rolling
// update would (the third started, then each old shard replaced by its
// successor), every namespace's ConfigMap changed at each step while the
// shards come and go. The nudges share one key, so the state each writes on
// a workload (its applied-state annotation) is the hand-over: a namespace
// two shards own for a while is rolled once per change (the second writer's
// write conflicts and it then finds nothing to do), and a change made while
// no running shard owns it is rolled once by its next owner, as after a
// restart. A namespace created after the start lands in its shard.
func TestReshard(t *testing.T) {
	eachPlane(t, func(t *testing.T, pl *plane) {
		c := newCluster(t, pl, true)
		old := []*member{c.start("0/2"), c.start("1/2")}
		var spaces []*nt.Space
		for range 3 {
			for _, m := range old {
				spaces = append(spaces, c.space(m.s, nil))
			}
		}
		c.G.Eventually(func() []string {
			var missing []string
			for _, n := range spaces {
				if c.Applied(n, "web") == "" {
					missing = append(missing, n.Name)
				}
			}
			return missing
		}).WithTimeout(30*time.Second).Should(BeEmpty(), "every Deployment baselined by the two shards")

		changeAll := func(round int) {
			for _, n := range spaces {
				c.Change(n, "app", strconv.Itoa(round+1))
			}
		}
		rolled := func(round int) {
			want := map[*nt.Space]int64{}
			for _, n := range spaces {
				want[n] = int64(round)
			}
			c.RolledTo(want)
		}
		changeAll(1)
		third := c.start("2/3")
		rolled(1)
		changeAll(2)
		old[1].Nudge.Stop(t)
		second := c.start("1/3")
		rolled(2)
		changeAll(3)
		old[0].Nudge.Stop(t)
		first := c.start("0/3")
		rolled(3)

		late := c.space(second.s, nil)
		c.G.Eventually(func() string { return c.Applied(late, "web") }).WithTimeout(30*time.Second).
			ShouldNot(BeEmpty(), "a namespace created after the start baselined")
		c.Change(late, "app", "2")
		c.RolledTo(map[*nt.Space]int64{late: 1})
		for _, m := range []*member{first, third} {
			c.G.Expect(nt.RolledBy(m.Member, late)).To(BeZero(), "shard %s rolls nothing of a namespace of shard 1/3", m.s.Name)
		}
		c.G.Expect(nt.RolledBy(second.Member, late)).To(Equal(1), "shard 1/3 rolls its new namespace")
	})
}
