package binary

import (
	"crypto/rand"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

const (
	// bigSecrets Secrets of secretBytes each (key and value: the API
	// server's limit on a Secret's data) are read by one Deployment.
	bigSecrets  = 32
	secretBytes = 1 << 20
	// heapGrowthLimit bounds how much nudge's heap in use after a GC may grow
	// under the bad inputs: 12 MiB, three eighths of the 32 MiB the Secrets
	// hold at any time and under a fifth of the 64 MiB nudge receives
	// (created, then changed). What nudge may keep of a source is its
	// metadata and one digest per key; the bad inputs' legitimate cost,
	// measured at about 6 MiB, is the buffers of the watch decoders, each
	// grown to twice the largest object its watch delivered (2 MiB for the
	// Secrets), the 10,000 keys' digests (about 1.5 MiB), the 250 KiB
	// annotation and the 500-entry pod spec in the workload cache, and 500
	// small ConfigMaps. A nudge that kept the content of the current Secrets
	// would grow by at least 32 MiB (48 MiB measured with the digest transform
	// removed), well over twice the bound; the bound is twice the legitimate
	// cost.
	heapGrowthLimit = 12 << 20
	// rssGrowthLimit bounds the growth of nudge's anonymous resident set
	// (RssAnon: heap, stacks, the runtime's own) under the same inputs:
	// 32 MiB. The rest of the RSS is the mapped binary, which nudge unmaps
	// once started and maps back as it runs code again: it moves with
	// nudge's own timing, not with the inputs. RssAnon also holds freed heap
	// the runtime has not yet returned to the system (the GC lets the heap
	// grow past the live heap, by a fifth at nudge's GOGC=20, before it
	// collects), so it grows more than the heap in use and moves with the
	// GC's timing: measured at 6.7 MiB (the whole RSS: about 9 MiB before
	// nudge unmapped its binary), and at 56 MiB when the cache kept the
	// Secrets' content.
	rssGrowthLimit = 32 << 20
)

// auto opts a workload in to every source its pod spec reads.
var auto = map[string]string{"nudge.dev/auto": "true"}

// heapInuse matches runtime.MemStats' HeapInuse in the text of
// /debug/pprof/heap?debug=1.
var heapInuse = regexp.MustCompile(`(?m)^# HeapInuse = (\d+)$`)

// memory is what nudge's process uses: Go's heap in use after a forced GC
// and the anonymous resident set, in bytes.
type memory struct{ heap, rss float64 }

func (m memory) String() string {
	return fmt.Sprintf("heap in use after GC %.1f MiB, anonymous RSS %.1f MiB", m.heap/(1<<20), m.rss/(1<<20))
}

// rssAnon matches RssAnon, in KiB, in /proc/PID/status (proc_pid_status(5)).
var rssAnon = regexp.MustCompile(`(?m)^RssAnon:\s+(\d+) kB$`)

// measure reads the memory of nudge's process pid from its pprof endpoint
// and /proc. The heap is read after a second forced GC: objects in a
// sync.Pool survive the first one (in its victim cache).
func measure(t *testing.T, g Gomega, pprof string, pid int) memory {
	t.Helper()
	var m memory
	for range 2 {
		body := nt.Get("http://" + pprof + "/debug/pprof/heap?gc=1&debug=1")
		found := heapInuse.FindStringSubmatch(body)
		g.Expect(found).To(HaveLen(2), "HeapInuse in the heap profile")
		n, err := strconv.ParseUint(found[1], 10, 64)
		g.Expect(err).NotTo(HaveOccurred())
		m.heap = float64(n)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	g.Expect(err).NotTo(HaveOccurred(), "reading nudge's /proc status")
	found := rssAnon.FindSubmatch(status)
	g.Expect(found).To(HaveLen(2), "RssAnon in nudge's /proc status")
	kib, err := strconv.ParseUint(string(found[1]), 10, 64)
	g.Expect(err).NotTo(HaveOccurred())
	m.rss = float64(kib << 10)
	return m
}

// randomSecret returns a Secret whose one key holds secretBytes of random
// bytes (incompressible, every byte value).
func randomSecret(ns, name string) *corev1.Secret {
	s := nt.Secret(ns, name, nil)
	s.Data["k"] = randomBytes(secretBytes - len("k"))
	return s
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// TestBadInputMemory runs the nudge binary and gives it the bad inputs of
// the in-process TestBadInput at once: 32 Secrets of 1 MiB read by one
// Deployment, a ConfigMap of 10,000 keys, a 250 KiB annotation of bad names,
// an invalid regular expression, a Deployment reading 500 ConfigMaps, binary
// data with non-UTF-8 bytes, names at the length limit. Once nudge has
// baselined them all and rolled the big Secrets' Deployment after their
// change, its Go heap in use after GC has grown by far less than the
// content: the cache keeps digests, never values. The heap and RSS before
// and after are logged.
func TestBadInputMemory(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := plane.GenerateNamespace(ctx, "bin-mem-")
	g.Expect(err).NotTo(HaveOccurred())
	addrs := nt.FreeAddrs(t, 2)
	metrics, pprof := addrs[0], addrs[1]
	// No rollout window and no storm brake: each of the 32 changes of the
	// big Secrets below may be a rollout of its own, more than the default
	// budget of an hour, whose brake would hold the last ones.
	p := start(t, nil, "--kubeconfig="+kubeconfig(t, ns), "--namespaces="+ns, "--metrics-bind-address="+metrics,
		"--pprof-bind-address="+pprof, "--health-probe-bind-address=0", "--rollout-window=0", "--max-rollouts-per-hour=0")
	create := func(objs ...client.Object) {
		t.Helper()
		for _, o := range objs {
			g.Expect(k8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
		}
	}
	applied := func(name string) func() string {
		return func() string {
			var d appsv1.Deployment
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
			return d.Annotations[workload.AppliedAnnotation]
		}
	}
	baselined := func(names ...string) {
		t.Helper()
		for _, name := range names {
			g.Eventually(applied(name)).WithTimeout(60*time.Second).ShouldNot(BeEmpty(), "nudge to baseline Deployment %s", name)
		}
	}

	// A few ordinary workloads, so the baseline is a nudge at work.
	for i := range 3 {
		name := fmt.Sprintf("plain-%d", i)
		create(nt.ConfigMap(ns, name, map[string]string{"a": "1"}), nt.Secret(ns, name, map[string]string{"b": "2"}),
			nt.Deployment(ns, name, 1, auto, nt.EnvFrom("ConfigMap", name), nt.Volume("Secret", name)))
	}
	baselined("plain-0", "plain-1", "plain-2")
	g.Eventually(func() string { return nt.Get("http://" + metrics + "/metrics") }).WithTimeout(30*time.Second).
		Should(ContainSubstring("process_resident_memory_bytes"), "nudge's metrics")
	before := measure(t, g, pprof, p.PID())

	// The bad inputs.
	var bigOpts []nt.PodOption
	for i := range bigSecrets {
		name := fmt.Sprintf("big-%02d", i)
		create(randomSecret(ns, name))
		bigOpts = append(bigOpts, nt.Volume("Secret", name))
	}
	create(nt.Deployment(ns, "big", 1, auto, bigOpts...))
	many := make(map[string]string, 10_000)
	for i := range 10_000 {
		many[fmt.Sprintf("k-%05d", i)] = "v"
	}
	create(nt.ConfigMap(ns, "many", many), nt.Deployment(ns, "many", 1, auto, nt.Volume("ConfigMap", "many")))
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw"},
		BinaryData: map[string][]byte{"raw": {0xff, 0xfe, 0xc3, 0x28, 0x00}}},
		nt.Deployment(ns, "raw", 1, auto, nt.Volume("ConfigMap", "raw")))
	longName, longKey, longWorkload := strings.Repeat("c", 253), strings.Repeat("k", 253), strings.Repeat("w", 63)
	create(nt.ConfigMap(ns, longName, map[string]string{longKey: "1"}),
		nt.Deployment(ns, longWorkload, 1, map[string]string{"nudge.dev/configmaps": longName},
			nt.EnvKey("ConfigMap", longName, longKey, false)))
	var wideOpts []nt.PodOption
	for i := range 500 {
		name := fmt.Sprintf("cfg-%03d", i)
		create(nt.ConfigMap(ns, name, map[string]string{"a": "1"}))
		wideOpts = append(wideOpts, nt.EnvFrom("ConfigMap", name))
	}
	create(nt.Deployment(ns, "wide", 1, auto, wideOpts...))
	// The API server refuses more than 256 KiB of annotations in all.
	create(nt.Deployment(ns, "long-annotation", 1,
		map[string]string{"nudge.dev/configmaps": "plain-0," + strings.Repeat("Bad_Name,", 250<<10/len("Bad_Name,"))},
		nt.EnvFrom("ConfigMap", "plain-0")))
	create(nt.Deployment(ns, "bad-regex", 1, map[string]string{"configmap.reloader.stakater.com/reload": "plain-1,[,a)|(b"},
		nt.EnvFrom("ConfigMap", "plain-1")))

	// Handled: every workload baselined, the malformed ones warned about.
	bad := []string{"big", "many", "raw", longWorkload, "wide", "long-annotation", "bad-regex"}
	baselined(bad...)
	for _, name := range []string{"long-annotation", "bad-regex"} {
		g.Eventually(func() []string {
			var list eventsv1.EventList
			g.Expect(k8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, ev := range list.Items {
				if ev.Regarding.Name == name && ev.Type == corev1.EventTypeWarning {
					reasons = append(reasons, ev.Reason)
				}
			}
			return reasons
		}).WithTimeout(30*time.Second).Should(ContainElement(record.ReasonMalformedAnnotation),
			"a %s Warning on Deployment %s", record.ReasonMalformedAnnotation, name)
	}
	templates := map[string]corev1.PodTemplateSpec{}
	for _, name := range append(bad, "plain-0", "plain-1", "plain-2") {
		var d appsv1.Deployment
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
		templates[name] = d.Spec.Template
	}

	// The big Secrets change once more: nudge rolls their Deployment.
	was, err := fingerprint.Parse(applied("big")(), ns)
	g.Expect(err).NotTo(HaveOccurred(), "Deployment big's applied fingerprint")
	for i := range bigSecrets {
		s := randomSecret(ns, fmt.Sprintf("big-%02d", i))
		g.Expect(k8s.Update(ctx, s)).To(Succeed(), "changing Secret %s", s.Name)
	}
	g.Eventually(func() []string {
		now, err := fingerprint.Parse(applied("big")(), ns)
		g.Expect(err).NotTo(HaveOccurred())
		var stale []string
		for src, e := range was.Entries {
			if src.Kind == refs.Secret && now.Entries[src].Digest == e.Digest {
				stale = append(stale, src.Name)
			}
		}
		return stale
	}).WithTimeout(60*time.Second).Should(BeEmpty(), "Deployment big rolled to every big Secret's new content")
	var big appsv1.Deployment
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big"}, &big)).To(Succeed())
	g.Expect(equality.Semantic.DeepEqual(big.Spec.Template, templates["big"])).To(BeFalse(), "Deployment big's pod template rolled")
	delete(templates, "big")
	for name, was := range templates {
		var d appsv1.Deployment
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)).To(Succeed())
		g.Expect(equality.Semantic.DeepEqual(d.Spec.Template, was)).To(BeTrue(), "no rollout of Deployment %s", name)
	}

	after := measure(t, g, pprof, p.PID())
	t.Logf("before the bad inputs: %s", before)
	t.Logf("after %d MiB of Secrets created, then changed: %s; heap +%.1f MiB, anonymous RSS +%.1f MiB",
		bigSecrets*secretBytes>>20, after, (after.heap-before.heap)/(1<<20), (after.rss-before.rss)/(1<<20))
	g.Expect(after.heap-before.heap).To(BeNumerically("<=", heapGrowthLimit),
		"nudge's heap after GC grew by at most %d MiB, not by the Secrets' content", heapGrowthLimit>>20)
	g.Expect(after.rss-before.rss).To(BeNumerically("<=", rssGrowthLimit),
		"nudge's anonymous RSS grew by at most %d MiB", rssGrowthLimit>>20)
	g.Expect(p.Exited()).To(BeFalse(), "nudge still runs")
	g.Expect(p.Output()).NotTo(ContainSubstring("panic"), "no panic in nudge's output")
}
