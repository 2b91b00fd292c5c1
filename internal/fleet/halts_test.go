package fleet

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// testKey returns the fingerprint key of byte b.
func testKey(t *testing.T, b byte) fingerprint.Key {
	t.Helper()
	k, err := fingerprint.NewKey(bytes.Repeat([]byte{b}, fingerprint.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func deploymentKey(namespace, name string) Key {
	return Key{Kind: "Deployment", NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}
}

// failedDeployment returns the Deployment key whose rollout at t0 missed its
// progress deadline, with the given nudge.dev/rolled-for (none when "").
func failedDeployment(key Key, rolledFor string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Generation: 2, ResourceVersion: "1",
			Annotations: map[string]string{workload.LastRolloutAnnotation: t0.Format(time.RFC3339Nano)}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: deadlineExceeded}}},
	}
	if rolledFor != "" {
		d.Annotations[RolledForAnnotation] = rolledFor
	}
	return d
}

// marked returns RolledForAnnotation's value as nudge writes it for a
// rollout of key at t0 with key k.
func marked(k fingerprint.Key, key Key, entries string) string {
	return formatRolledFor(k, key, t0.Format(time.RFC3339Nano), entries)
}

func TestRolledFor(t *testing.T) {
	k := testKey(t, 1)
	web := deploymentKey("shop", "web")
	entries := "ConfigMap/shop/app=0a1b2c3d.abcdefghijklmnop Secret/shop/db=absent"
	want := []sourceDigest{
		{refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}, "0a1b2c3d.abcdefghijklmnop"},
		{refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}, "absent"},
	}
	tests := map[string]struct {
		key       Key // the workload the value is read on
		value     string
		rolledAt  string // its nudge.dev/last-rollout, t0 when ""
		want      []sourceDigest
		wantValid bool
	}{
		"a value nudge marked for this workload and rollout is read": {
			key: web, value: marked(k, web, entries), want: want, wantValid: true,
		},
		"a rollout of no source nudge digests is read, with no entry": {
			key: web, value: marked(k, web, ""), wantValid: true,
		},
		"a value copied from another workload of the namespace is not": {
			key: deploymentKey("shop", "api"), value: marked(k, web, entries),
		},
		"a value copied from a workload of another namespace is not": {
			key: deploymentKey("tenant", "web"), value: marked(k, web, entries),
		},
		"a value copied from a workload of another kind is not": {
			key: Key{Kind: "StatefulSet", NamespacedName: web.NamespacedName}, value: marked(k, web, entries),
		},
		"a value kept with another nudge.dev/last-rollout is not": {
			key: web, value: marked(k, web, entries), rolledAt: t0.Add(time.Hour).Format(time.RFC3339Nano),
		},
		"an entry edited after nudge wrote it is not read": {
			key: web, value: strings.Replace(marked(k, web, entries), "ConfigMap/shop/app", "ConfigMap/bank/app", 1),
		},
		"an entry added after nudge wrote it is not read": {
			key: web, value: marked(k, web, entries) + " ConfigMap/bank/app=0a1b2c3d.abcdefghijklmnop",
		},
		"a value marked with another key is not": {
			key: web, value: marked(testKey(t, 2), web, entries),
		},
		"an unmarked value, as earlier builds of nudge wrote it, is not": {
			key: web, value: entries,
		},
		"a mark alone with the entries of another is not": {
			key: web, value: marked(k, web, "") + " " + entries,
		},
		"a value longer than any nudge writes is not": {
			key: web, value: marked(k, web, strings.Repeat("ConfigMap/shop/app=x ", maxRolledFor/20)),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := failedDeployment(tc.key, tc.value)
			if tc.rolledAt != "" {
				d.Annotations[workload.LastRolloutAnnotation] = tc.rolledAt
			}
			got, ok := rolledFor(k, tc.key, d)
			g.Expect(ok).To(Equal(tc.wantValid))
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// newWaves returns waves of one slot, with key k.
func newWaves(t *testing.T, k fingerprint.Key) *Waves {
	t.Helper()
	w, err := NewWaves(prometheus.NewRegistry(), 1, 0, k)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// haltedBy returns the failed workload haltsOf names for workload key
// reading src, whose content is digest now, "" for none.
func (w *Waves) haltedBy(key Key, src refs.Source, digest string) string {
	content := func(context.Context, refs.Source) (string, error) { return digest, nil }
	hs, err := w.haltsOf(context.Background(), key, "", map[refs.Source]fingerprint.Entry{src: {}}, content)
	if err != nil || len(hs) == 0 {
		return ""
	}
	return hs[0].After
}

// A failure halts the workloads of its own namespace only, also for a
// source of another namespace it read (a cross-namespace reference).
func TestHaltIsWithinItsNamespace(t *testing.T) {
	g := NewWithT(t)
	k := testKey(t, 1)
	w := newWaves(t, k)
	canary := deploymentKey("shop", "canary")
	shared := refs.Source{Kind: refs.ConfigMap, Namespace: "shared", Name: "ca"}
	app := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	w.Observe(t.Context(), canary, failedDeployment(canary, marked(k, canary, "ConfigMap/shared/ca=k.d1 ConfigMap/shop/app=k.d2")), t0)

	g.Expect(w.haltedBy(deploymentKey("shop", "web"), app, "k.d2")).To(Equal("Deployment shop/canary"), "a workload of the namespace waiting on the content")
	g.Expect(w.haltedBy(deploymentKey("shop", "web"), shared, "k.d1")).To(Equal("Deployment shop/canary"), "the shared source's content, in the namespace")
	g.Expect(w.haltedBy(deploymentKey("shop", "web"), app, "k.d3")).To(BeEmpty(), "other content")
	g.Expect(w.haltedBy(deploymentKey("shared", "web"), shared, "k.d1")).To(BeEmpty(), "a workload of the source's namespace")
	g.Expect(w.haltedBy(deploymentKey("bank", "web"), shared, "k.d1")).To(BeEmpty(), "a workload of a third namespace")
}

// retained returns how many failures and halts w remembers, and the bytes
// of the strings they hold.
func (w *Waves) retained() (failures, halts, size int) {
	for key, f := range w.failures {
		size += len(key.Kind) + len(key.Namespace) + len(key.Name)
		for _, sd := range f {
			size += len(sd.source.Kind) + len(sd.source.Namespace) + len(sd.source.Name) + len(sd.digest)
		}
	}
	for _, by := range w.halts {
		halts += len(by)
	}
	return len(w.failures), halts, size
}

// aliases reports whether s's bytes lie within v's.
func aliases(s, v string) bool {
	p, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(v)))
	return len(s) > 0 && p >= b && p < b+uintptr(len(v))
}

// What the halts remember stays bounded: a failing workload's annotation
// rewritten again and again replaces what it halted, a recovery or a
// deletion forgets it, no more than maxFailures are remembered, and none
// keeps an annotation's string alive. A forged annotation is never
// remembered at all.
func TestHaltsStayBounded(t *testing.T) {
	k := testKey(t, 1)
	ctx := t.Context()
	entries := func(i int) string {
		return fmt.Sprintf("ConfigMap/tenant/cm-%d=k.d%d Secret/tenant/s-%d=k.d%d", i, i, i, i)
	}

	t.Run("a forged rolled-for rewritten 10,000 times halts nothing", func(t *testing.T) {
		g := NewWithT(t)
		w := newWaves(t, k)
		evil := deploymentKey("tenant", "evil")
		for i := range 10_000 {
			w.Observe(ctx, evil, failedDeployment(evil, entries(i)), t0)
			w.Observe(ctx, evil, failedDeployment(evil, "seal=0123456789abcdef0123456789abcdef "+entries(i)), t0)
		}
		g.Expect(w.failures).To(BeEmpty())
		g.Expect(w.halts).To(BeEmpty())
	})

	t.Run("a failing workload's rolled-for rewritten 10,000 times keeps its last", func(t *testing.T) {
		g := NewWithT(t)
		w := newWaves(t, k)
		web := deploymentKey("tenant", "web")
		var last string
		for i := range 10_000 {
			last = marked(k, web, entries(i))
			w.Observe(ctx, web, failedDeployment(web, last), t0)
		}
		failures, halts, size := w.retained()
		g.Expect(failures).To(Equal(1))
		g.Expect(halts).To(Equal(2))
		g.Expect(size).To(BeNumerically("<", 100))
		g.Expect(w.haltedBy(deploymentKey("tenant", "api"), refs.Source{Kind: refs.Secret, Namespace: "tenant", Name: "s-9999"}, "k.d9999")).To(
			Equal("Deployment tenant/web"))
		for _, sd := range w.failures[web] {
			for _, s := range []string{sd.source.Namespace, sd.source.Name, sd.digest} {
				g.Expect(aliases(s, last)).To(BeFalse(), "%q is a copy, not a part of the annotation", s)
			}
		}
	})

	t.Run("a recovery and a deletion forget the failure", func(t *testing.T) {
		g := NewWithT(t)
		w := newWaves(t, k)
		a, b := deploymentKey("tenant", "a"), deploymentKey("tenant", "b")
		w.Observe(ctx, a, failedDeployment(a, marked(k, a, entries(1))), t0)
		w.Observe(ctx, b, failedDeployment(b, marked(k, b, entries(1))), t0)
		failures, _, _ := w.retained()
		g.Expect(failures).To(Equal(2), "two failures")

		recovered := failedDeployment(a, marked(k, a, entries(1)))
		recovered.Status = appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
		w.Observe(ctx, a, recovered, t0)
		g.Expect(w.haltedBy(deploymentKey("tenant", "c"), refs.Source{Kind: refs.ConfigMap, Namespace: "tenant", Name: "cm-1"}, "k.d1")).To(
			Equal("Deployment tenant/b"), "b's failure halts still")
		w.Gone(b)
		g.Expect(w.failures).To(BeEmpty())
		g.Expect(w.halts).To(BeEmpty())
		g.Expect(w.sourcesHalted).To(BeEmpty(), "the sources whose content is read")
	})

	t.Run("past maxFailures a failure is not remembered, until one is forgotten", func(t *testing.T) {
		g := NewWithT(t)
		w := newWaves(t, k)
		for i := range maxFailures + 10 {
			key := deploymentKey("tenant", fmt.Sprintf("w-%d", i))
			w.Observe(ctx, key, failedDeployment(key, marked(k, key, entries(i))), t0)
		}
		failures, halts, _ := w.retained()
		g.Expect(failures).To(Equal(maxFailures))
		g.Expect(halts).To(Equal(2 * maxFailures))
		g.Expect(w.full).To(BeTrue())

		w.Gone(deploymentKey("tenant", "w-0"))
		late := deploymentKey("tenant", fmt.Sprintf("w-%d", maxFailures))
		w.Observe(ctx, late, failedDeployment(late, marked(k, late, entries(maxFailures))), t0)
		g.Expect(w.failures).To(HaveKey(late), "remembered once a place is free")
		g.Expect(w.failures).To(HaveLen(maxFailures))
	})

	t.Run("of one rollout, the first maxFailureEntries sources halt", func(t *testing.T) {
		g := NewWithT(t)
		w := newWaves(t, k)
		web := deploymentKey("tenant", "web")
		var many []string
		for i := range maxFailureEntries + 5 {
			many = append(many, fmt.Sprintf("ConfigMap/tenant/cm-%d=k.d", i))
		}
		w.Observe(ctx, web, failedDeployment(web, marked(k, web, strings.Join(many, " "))), t0)
		g.Expect(w.failures[web]).To(HaveLen(maxFailureEntries))
	})
}

func TestPriorityOf(t *testing.T) {
	tests := map[string]struct {
		value     *string
		want      int
		wantError string
	}{
		"unset is 0":                           {want: 0},
		"an integer in range is itself":        {value: ptr.To("10"), want: 10},
		"spaces around it are ignored":         {value: ptr.To(" -5 "), want: -5},
		"the bounds are in range":              {value: ptr.To("-1000"), want: -1000},
		"above the range counts as its top":    {value: ptr.To("1001"), want: MaxPriority, wantError: "got 1001; counting it as 1000"},
		"below the range counts as its bottom": {value: ptr.To("-99999999999"), want: MinPriority, wantError: "counting it as -1000"},
		"past int64 is malformed, 0":           {value: ptr.To("99999999999999999999"), want: 0, wantError: "counting it as 0"},
		"a word is malformed, 0":               {value: ptr.To("high"), want: 0, wantError: `got "high"`},
		"a long value is quoted short":         {value: ptr.To(strings.Repeat("x", 5000)), want: 0, wantError: strings.Repeat("x", 32) + `..."`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			d := &appsv1.Deployment{}
			if tc.value != nil {
				d.Annotations = map[string]string{PriorityAnnotation: *tc.value}
			}
			got, err := PriorityOf(d)
			g.Expect(got).To(Equal(tc.want))
			if tc.wantError == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantError)))
			g.Expect(len(err.Error())).To(BeNumerically("<", 200))
		})
	}
}
