package memo

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// TestBirths: a workload seen created counts the sources whose read content
// changed after its creation, until it is rolled, a minute has passed, or
// it is forgotten; a rollout that waits keeps them past the minute.
func TestBirths(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	app := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	deployment := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "100"}}
	cm := func(rv, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: rv}, Data: map[string]string{"k": v}}
	}
	tests := map[string]struct {
		listed bool // the creation came in the informer's initial list
		// absence: the workload's applied state records the source's absence.
		absence bool
		steps   func(b *Births, c *sources.Changes, clk *clocktesting.FakePassiveClock)
		want    []refs.Source // young
	}{
		"a deletion after the creation counts": {
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("105", "a")})
			},
			want: []refs.Source{app},
		},
		"a deletion before the creation does not": {
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("95", "a")})
			},
		},
		"a creation after the creation counts where the absence does": {
			absence: true,
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("105", "a")})
			},
			want: []refs.Source{app},
		},
		"a creation after the creation of a required source does not: the pods start with it": {
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("105", "a")})
			},
		},
		"a creation before the creation does not": {
			absence: true,
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("95", "a")})
			},
		},
		"a change after the creation counts": {
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
			},
			want: []refs.Source{app},
		},
		"a change before the creation does not": {
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("95", "b")})
			},
		},
		"a workload listed at start has no birth": {
			listed: true,
			steps: func(_ *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
			},
		},
		"a rollout written ends the youth": {
			steps: func(b *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				b.Decided(web, []refs.Source{app}, rollout.Decision{Action: rollout.Roll}, true, t0)
			},
		},
		"a rollout not written does not": {
			steps: func(b *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				b.Decided(web, []refs.Source{app}, rollout.Decision{Action: rollout.Roll}, false, t0)
			},
			want: []refs.Source{app},
		},
		"a young source a baseline recorded as it entered the references is young no more": {
			steps: func(b *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				b.Decided(web, []refs.Source{app}, rollout.Decision{Action: rollout.Baseline, Entered: []refs.Source{app}}, true, t0)
			},
		},
		"nor is it once the baseline is not written": {
			steps: func(b *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				b.Decided(web, []refs.Source{app}, rollout.Decision{Action: rollout.Baseline, Entered: []refs.Source{app}}, false, t0)
			},
			want: []refs.Source{app},
		},
		"a minute after the creation the workload is old": {
			steps: func(_ *Births, c *sources.Changes, clk *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				clk.SetTime(t0.Add(sources.Young + time.Second))
			},
		},
		"a rollout that waits keeps its young sources past the minute": {
			steps: func(b *Births, c *sources.Changes, clk *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				b.Decided(web, []refs.Source{app}, rollout.Decision{Action: rollout.Pending}, false, t0)
				clk.SetTime(t0.Add(2 * sources.Young))
			},
			want: []refs.Source{app},
		},
		"a rollout deferred, braked or gated keeps its young sources past the minute": {
			steps: func(b *Births, c *sources.Changes, clk *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				for _, a := range []rollout.Action{rollout.Deferred, rollout.Braked, rollout.Gated} {
					b.Decided(web, []refs.Source{app}, rollout.Decision{Action: a}, false, t0)
				}
				clk.SetTime(t0.Add(5 * time.Hour))
			},
			want: []refs.Source{app},
		},
		"a rollout another replica wrote ends the youth": {
			steps: func(b *Births, c *sources.Changes, clk *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				rolled := deployment.DeepCopy()
				rolled.Annotations = map[string]string{workload.LastRolloutAnnotation: "2026-11-25T10:00:01Z"}
				b.Recorder(clk.Now).Update(event.UpdateEvent{ObjectOld: deployment, ObjectNew: rolled})
			},
		},
		"a workload forgotten (not opted in) has no birth": {
			steps: func(b *Births, c *sources.Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("90", "a"), ObjectNew: cm("105", "b")})
				b.Forget(web)
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			clk := clocktesting.NewFakePassiveClock(t0)
			b, c := &Births{}, &sources.Changes{Clock: clk}
			b.Recorder(clk.Now).Create(event.CreateEvent{Object: deployment, IsInInitialList: tc.listed})
			tc.steps(b, c, clk)
			g.Expect(b.Young(web, []Read{{Reference: refs.Reference{Source: app}, AbsenceCounts: tc.absence}}, c, clk.Now())).To(Equal(tc.want), "young")
		})
	}
}

// TestBirthsSettled: a workload seen created, whose applied state is the
// baseline this nudge wrote, counts as settled the sources whose cached
// version is at or before its creation's, while it is young.
func TestBirthsSettled(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	app := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	db := refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	deployment := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "100"}}
	baseline := fingerprint.State{KeyID: "k", Entries: map[refs.Source]fingerprint.Entry{app: {Digest: "aaaa"}}}
	ours := baseline.Format("shop")
	tests := map[string]struct {
		listed   bool
		at       time.Time
		none     bool // the first reconcile wrote no baseline
		applied  string
		versions map[refs.Source]string
		want     []refs.Source
	}{
		"written before the creation": {versions: map[refs.Source]string{app: "95", db: "99"}, want: []refs.Source{app, db}},
		"written at the creation":     {versions: map[refs.Source]string{app: "100"}, want: []refs.Source{app}},
		"written after the creation":  {versions: map[refs.Source]string{app: "95", db: "101"}, want: []refs.Source{app}},
		"an unreadable version":       {versions: map[refs.Source]string{app: "x"}},
		"a workload listed at start":  {listed: true, versions: map[refs.Source]string{app: "95"}},
		"a minute after the creation": {at: t0.Add(sources.Young + time.Second), versions: map[refs.Source]string{app: "95"}},
		"an applied state another wrote": {
			applied:  fingerprint.State{KeyID: "k", Entries: map[refs.Source]fingerprint.Entry{app: {Digest: "bbbb"}}}.Format("shop"),
			versions: map[refs.Source]string{app: "95"},
		},
		"no baseline written": {none: true, versions: map[refs.Source]string{app: "95"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			b := &Births{}
			b.Recorder(func() time.Time { return t0 }).Create(event.CreateEvent{Object: deployment, IsInInitialList: tc.listed})
			d := rollout.Decision{Action: rollout.Baseline, Write: baseline, FirstSight: true}
			if tc.none {
				d = rollout.Decision{Action: rollout.None}
			}
			b.Decided(web, nil, d, true, t0)
			now, applied := tc.at, tc.applied
			if now.IsZero() {
				now = t0
			}
			if applied == "" {
				applied = ours
			}
			NewWithT(t).Expect(b.Settled(web, applied, tc.versions, now)).To(Equal(tc.want))
		})
	}
}

// TestBirthsGone: the content of a source deleted after a workload's
// creation is what its pods started with, until nudge wrote a baseline of
// the workload.
func TestBirthsGone(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	app := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	deployment := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "100"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: "105"}, Data: map[string]string{"k": "a"}}
	for name, tc := range map[string]struct {
		baselined bool
		seen      bool // another replica's baseline seen written
		want      bool
	}{
		"a first sight after the deletion records it":             {want: true},
		"a first sight after a baseline does not":                 {baselined: true},
		"a first sight after another replica's baseline does not": {seen: true},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			now := time.Now()
			b, c := &Births{}, &sources.Changes{}
			b.Recorder(func() time.Time { return now }).Create(event.CreateEvent{Object: deployment})
			if tc.baselined {
				b.Decided(web, nil, rollout.Decision{Action: rollout.Baseline, Write: fingerprint.State{KeyID: "k"}}, true, now)
			}
			if tc.seen {
				stated := deployment.DeepCopy()
				stated.Annotations = map[string]string{workload.AppliedAnnotation: "v1.k"}
				b.Recorder(func() time.Time { return now }).Update(event.UpdateEvent{ObjectOld: deployment, ObjectNew: stated})
			}
			c.Recorder().Delete(event.DeleteEvent{Object: cm})
			_, ok := b.Gone(web, fingerprint.Key{}, []refs.Reference{{Source: app}}, c, now)[app]
			g.Expect(ok).To(Equal(tc.want))
		})
	}
}
