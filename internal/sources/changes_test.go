package sources

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"nudge.dev/nudge/internal/refs"
)

// TestChanges: what the recorder remembers of a source, for rule 1.
func TestChanges(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	cm := func(rv, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: rv,
			Labels: map[string]string{"rv": rv}}, Data: map[string]string{"a": value}}
	}
	app := refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "app"}
	update := func(old, new *corev1.ConfigMap) func(p predicate.Funcs) {
		return func(p predicate.Funcs) { p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new}) }
	}
	tests := map[string]struct {
		events  []func(predicate.Funcs)
		version string        // the cache's resourceVersion of the source; "" for the last update's
		at      time.Duration // when Times is asked, after t0; Young/2 when 0
		want    []time.Time
	}{
		"a content change is remembered": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y"))},
			want:   []time.Time{t0.Add(time.Second)},
		},
		"the last two changes are remembered, latest first": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), update(cm("2", "y"), cm("3", "z")), update(cm("3", "z"), cm("4", "w"))},
			want:   []time.Time{t0.Add(3 * time.Second), t0.Add(2 * time.Second)},
		},
		"the same event offered by every kind's controller is one change": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), update(cm("1", "x"), cm("2", "y")), update(cm("1", "x"), cm("2", "y"))},
			version: "2",
			want:    []time.Time{t0.Add(time.Second)},
		},
		"a metadata change is no change": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "x"))},
		},
		"an older version offered by a slower kind's controller is no change": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), update(cm("2", "y"), cm("3", "z")), update(cm("1", "x"), cm("2", "y"))},
			version: "3",
			want:    []time.Time{t0.Add(2 * time.Second), t0.Add(time.Second)},
		},
		"a version the recorder has not seen counts as a change now": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y"))},
			version: "3",
			want:    []time.Time{t0.Add(Young / 2), t0.Add(time.Second)},
		},
		"a change older than Young is forgotten": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y"))},
			at:     Young + 2*time.Second,
		},
		"a metadata change's version is noted": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), update(cm("2", "y"), cm("3", "y"))},
			version: "3",
			want:    []time.Time{t0.Add(time.Second)},
		},
		"a source with no event since the start has no times": {
			version: "7",
		},
		"a creation after the initial list is a change": {
			events:  []func(predicate.Funcs){func(p predicate.Funcs) { p.Create(event.CreateEvent{Object: cm("1", "x")}) }},
			version: "1",
			want:    []time.Time{t0.Add(time.Second)},
		},
		"the initial list brings no change": {
			events:  []func(predicate.Funcs){func(p predicate.Funcs) { p.Create(event.CreateEvent{Object: cm("1", "x"), IsInInitialList: true}) }},
			version: "1",
		},
		"a deleted source's times are forgotten": {
			events:  []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), func(p predicate.Funcs) { p.Delete(event.DeleteEvent{Object: cm("3", "y")}) }},
			version: "3",
		},
		"a source created again starts with a lone change": {
			events: []func(predicate.Funcs){update(cm("1", "x"), cm("2", "y")), func(p predicate.Funcs) { p.Delete(event.DeleteEvent{Object: cm("3", "y")}) },
				func(p predicate.Funcs) { p.Create(event.CreateEvent{Object: cm("4", "x")}) }},
			version: "4",
			want:    []time.Time{t0.Add(3 * time.Second)},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := &Changes{Clock: &ticking{now: t0}}
			version := tt.version
			for _, ev := range tt.events {
				ev(c.Recorder())
			}
			if version == "" {
				version = fmt.Sprint(len(tt.events) + 1)
			}
			at := tt.at
			if at == 0 {
				at = Young / 2
			}
			g.Expect(c.Times(app, version, t0.Add(at))).To(Equal(tt.want))
		})
	}
}

// ticking is a clock that moves a second on at every reading.
type ticking struct{ now time.Time }

func (t *ticking) Now() time.Time                  { t.now = t.now.Add(time.Second); return t.now }
func (t *ticking) Since(u time.Time) time.Duration { return t.now.Sub(u) }

// TestNilChanges: a nil Changes passes every event and remembers nothing.
func TestNilChanges(t *testing.T) {
	g := NewWithT(t)
	var c *Changes
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: "1"}}
	new := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app", ResourceVersion: "2"}, Data: map[string]string{"a": "1"}}
	g.Expect(c.Recorder().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new})).To(BeTrue())
	g.Expect(c.Times(refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "app"}, "2", time.Now())).To(BeNil())
	g.Expect(c.After(refs.Reference{Source: refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "app"}}, "1", true, time.Now())).To(BeFalse())
}

// TestChangesRememberKeyVersionsForAMinute: Changes answers After for a
// change, newer than the version asked about and seen within a minute, of
// a key the reference reads, for a deletion of a source that existed at
// the version, for a re-creation with other content, and for a creation
// when the source's absence counts; a metadata-only update, a re-creation
// with the same content, and age leave nothing.
func TestChangesRememberKeyVersionsForAMinute(t *testing.T) {
	cm := func(rv, value string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: rv, Labels: labels},
			Data: map[string]string{"k": value, "other": "o"}}
	}
	without := func(c *corev1.ConfigMap, key string) *corev1.ConfigMap { delete(c.Data, key); return c }
	// updated is a row's events: one update of the ConfigMap, from one version to the next.
	updated := func(from, to *corev1.ConfigMap) func(*Changes, *clocktesting.FakePassiveClock) {
		return func(c *Changes, _ *clocktesting.FakePassiveClock) {
			c.Recorder().Update(event.UpdateEvent{ObjectOld: from, ObjectNew: to})
		}
	}
	src := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		events  func(c *Changes, clk *clocktesting.FakePassiveClock)
		keys    []string // the keys the reference reads; nil: the whole source
		version string
		// absence: the applied state records the source's absence.
		absence bool
		want    bool
	}{
		"a content update after the version counts": {
			events:  updated(cm("10", "a", nil), cm("12", "b", nil)),
			version: "11", want: true,
		},
		"a content update before the version does not": {
			events:  updated(cm("10", "a", nil), cm("12", "b", nil)),
			version: "12",
		},
		"versions compare as integers, not strings": {
			events:  updated(cm("99", "a", nil), cm("100", "b", nil)),
			version: "99", want: true,
		},
		"a change of a key the reference reads counts": {
			events: updated(cm("10", "a", nil), cm("12", "b", nil)),
			keys:   []string{"k"}, version: "11", want: true,
		},
		"a change of a key the reference does not read does not": {
			events: updated(cm("10", "a", nil), cm("12", "b", nil)),
			keys:   []string{"other"}, version: "11",
		},
		"a removed key is a changed key": {
			events: updated(cm("10", "a", nil), without(cm("12", "a", nil), "other")),
			keys:   []string{"other"}, version: "11", want: true,
		},
		"each key keeps the version it last changed at": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("12", "b", nil), ObjectNew: without(cm("14", "b", nil), "other")})
			},
			keys: []string{"k"}, version: "13",
		},
		"a creation of a source whose absence does not count is no change": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("12", "b", nil)})
			},
			version: "11",
		},
		"a creation of a source whose absence counts is a change": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("12", "b", nil)})
			},
			version: "11", absence: true, want: true,
		},
		"a creation before the version is none": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("12", "b", nil)})
			},
			version: "12", absence: true,
		},
		"a creation in the initial list is none": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("12", "b", nil), IsInInitialList: true})
			},
			version: "11", absence: true,
		},
		"a metadata-only update is not a content update": {
			events:  updated(cm("10", "a", nil), cm("12", "a", map[string]string{"l": "v"})),
			version: "11",
		},
		"a deletion after the version is a change": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("13", "b", nil)})
			},
			keys: []string{"k"}, version: "11", want: true,
		},
		"a deletion before the version is none": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("13", "b", nil)})
			},
			version: "13", absence: true,
		},
		"a source created and deleted after the version did not change": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Create(event.CreateEvent{Object: cm("12", "b", nil)})
				c.Recorder().Delete(event.DeleteEvent{Object: cm("13", "b", nil)})
			},
			version: "11", absence: true,
		},
		"a source deleted and created again with other content changed": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a", nil)})
				c.Recorder().Create(event.CreateEvent{Object: cm("13", "b", nil)})
			},
			keys: []string{"k"}, version: "11", want: true,
		},
		"a source deleted and created again with the same content did not": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a", nil)})
				c.Recorder().Create(event.CreateEvent{Object: cm("13", "a", nil)})
			},
			version: "11", absence: true,
		},
		"a re-creation changes only the keys whose content differs": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a", nil)})
				c.Recorder().Create(event.CreateEvent{Object: cm("13", "b", nil)})
			},
			keys: []string{"other"}, version: "11",
		},
		"the same deletion offered by every kind's recorder is recorded once": {
			events: func(c *Changes, _ *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a", nil)})
				c.Recorder().Create(event.CreateEvent{Object: cm("13", "a", nil)})
				c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a", nil)})
			},
			version: "11", absence: true,
		},
		"a deletion older than a minute is forgotten": {
			events: func(c *Changes, clk *clocktesting.FakePassiveClock) {
				c.Recorder().Delete(event.DeleteEvent{Object: cm("13", "b", nil)})
				clk.SetTime(t0.Add(Young + time.Second))
			},
			version: "11",
		},
		"an update older than a minute is forgotten": {
			events: func(c *Changes, clk *clocktesting.FakePassiveClock) {
				c.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
				clk.SetTime(t0.Add(Young + time.Second))
			},
			version: "11",
		},
		"a malformed version answers false": {
			events:  updated(cm("10", "a", nil), cm("12", "b", nil)),
			version: "x",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			clk := clocktesting.NewFakePassiveClock(t0)
			c := &Changes{Clock: clk}
			tc.events(c, clk)
			g.Expect(c.After(refs.Reference{Source: src, Keys: tc.keys}, tc.version, tc.absence, clk.Now())).To(Equal(tc.want))
		})
	}
}

// TestChangesHoldOnlyRecentChanges: the memory holds only the sources whose
// content changed in the last minute; a metadata-only update of another
// adds nothing.
func TestChangesHoldOnlyRecentChanges(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	c := &Changes{Clock: clk}
	secret := func(name, rv, value string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: rv},
			Data: map[string][]byte{"k": []byte(value)}}
	}
	for i := range 100 {
		name := fmt.Sprintf("s-%d", i)
		c.Recorder().Update(event.UpdateEvent{ObjectOld: secret(name, "4", "a"), ObjectNew: secret(name, "5", "b")})
	}
	g.Expect(c.of.Len()).To(Equal(100))
	clk.SetTime(t0.Add(Young + time.Second))
	c.Recorder().Update(event.UpdateEvent{ObjectOld: secret("metadata", "6", "a"), ObjectNew: secret("metadata", "7", "a")})
	g.Expect(c.of.Len()).To(Equal(100), "a metadata-only update of a source not remembered")
	c.Recorder().Update(event.UpdateEvent{ObjectOld: secret("new", "6", "a"), ObjectNew: secret("new", "7", "b")})
	g.Expect(c.of.Len()).To(Equal(1))
}

// TestChangesKeepWhatADeletedSourceHeld: Gone returns the content a source
// had when deleted after the version asked about, until it exists again.
func TestChangesKeepWhatADeletedSourceHeld(t *testing.T) {
	cm := func(rv, value string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: rv},
			Data: map[string]string{"k": value}}
	}
	src := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	tests := map[string]struct {
		events  []func(*Changes)
		version string
		want    bool
	}{
		"deleted after the version": {
			events:  []func(*Changes){func(c *Changes) { c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a")}) }},
			version: "11", want: true,
		},
		"deleted before the version": {
			events:  []func(*Changes){func(c *Changes) { c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a")}) }},
			version: "12",
		},
		"deleted, then created again": {
			events: []func(*Changes){
				func(c *Changes) { c.Recorder().Delete(event.DeleteEvent{Object: cm("12", "a")}) },
				func(c *Changes) { c.Recorder().Create(event.CreateEvent{Object: cm("13", "a")}) },
			},
			version: "11",
		},
		"created after the version, then deleted: it did not exist then": {
			events: []func(*Changes){
				func(c *Changes) { c.Recorder().Create(event.CreateEvent{Object: cm("12", "a")}) },
				func(c *Changes) { c.Recorder().Delete(event.DeleteEvent{Object: cm("13", "a")}) },
			},
			version: "11",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := &Changes{}
			for _, e := range tc.events {
				e(c)
			}
			d, ok := c.Gone(src, tc.version, time.Now())
			g.Expect(ok).To(Equal(tc.want))
			if tc.want {
				g.Expect(d).To(Equal(Digests(cm("12", "a"))))
			}
		})
	}
}

// TestChangesDeleted: Deleted returns the resourceVersion of a source's
// last deletion while it does not exist again, nothing otherwise.
func TestChangesDeleted(t *testing.T) {
	cm := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: rv}}
	}
	src := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	tests := map[string]struct {
		events []func(*Changes)
		want   string
	}{
		"deleted": {events: []func(*Changes){func(c *Changes) { c.Recorder().Delete(event.DeleteEvent{Object: cm("12")}) }}, want: "12"},
		"deleted, then created again": {events: []func(*Changes){
			func(c *Changes) { c.Recorder().Delete(event.DeleteEvent{Object: cm("12")}) },
			func(c *Changes) { c.Recorder().Create(event.CreateEvent{Object: cm("13")}) },
		}},
		"never deleted": {events: []func(*Changes){func(c *Changes) { c.Recorder().Create(event.CreateEvent{Object: cm("12")}) }}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &Changes{}
			for _, e := range tc.events {
				e(c)
			}
			v, ok := c.Deleted(src, time.Now())
			NewWithT(t).Expect(v).To(Equal(tc.want))
			NewWithT(t).Expect(ok).To(Equal(tc.want != ""))
		})
	}
}
