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

	"nudge.dev/nudge/internal/refs"
)

// TestUpdatesRememberContentUpdatesForAMinute: Updates answers After for a
// change, newer than the version asked about and seen within a minute, of
// a key the reference reads; a creation, a metadata-only update, a
// deletion and age all leave nothing.
func TestUpdatesRememberContentUpdatesForAMinute(t *testing.T) {
	cm := func(rv, value string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: rv, Labels: labels},
			Data: map[string]string{"k": value, "other": "o"}}
	}
	without := func(c *corev1.ConfigMap, key string) *corev1.ConfigMap { delete(c.Data, key); return c }
	src := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		events  func(u *Updates, clk *clocktesting.FakePassiveClock)
		keys    []string // the keys the reference reads; nil: the whole source
		version string
		want    bool
	}{
		"a content update after the version counts": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
			},
			version: "11", want: true,
		},
		"a content update before the version does not": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
			},
			version: "12",
		},
		"versions compare as integers, not strings": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("99", "a", nil), ObjectNew: cm("100", "b", nil)})
			},
			version: "99", want: true,
		},
		"a change of a key the reference reads counts": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
			},
			keys: []string{"k"}, version: "11", want: true,
		},
		"a change of a key the reference does not read does not": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
			},
			keys: []string{"other"}, version: "11",
		},
		"a removed key is a changed key": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: without(cm("12", "a", nil), "other")})
			},
			keys: []string{"other"}, version: "11", want: true,
		},
		"each key keeps the version it last changed at": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("12", "b", nil), ObjectNew: without(cm("14", "b", nil), "other")})
			},
			keys: []string{"k"}, version: "13",
		},
		"a creation is not an update": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Create(event.CreateEvent{Object: cm("12", "b", nil)})
			},
			version: "11",
		},
		"a metadata-only update is not a content update": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "a", map[string]string{"l": "v"})})
			},
			version: "11",
		},
		"a deletion forgets the source": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
				u.Recorder().Delete(event.DeleteEvent{Object: cm("13", "b", nil)})
			},
			version: "11",
		},
		"an update older than a minute is forgotten": {
			events: func(u *Updates, clk *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
				clk.SetTime(t0.Add(Young + time.Second))
			},
			version: "11",
		},
		"a malformed version answers false": {
			events: func(u *Updates, _ *clocktesting.FakePassiveClock) {
				u.Recorder().Update(event.UpdateEvent{ObjectOld: cm("10", "a", nil), ObjectNew: cm("12", "b", nil)})
			},
			version: "x",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			clk := clocktesting.NewFakePassiveClock(t0)
			u := &Updates{Clock: clk}
			tc.events(u, clk)
			g.Expect(u.After(refs.Reference{Source: src, Keys: tc.keys}, tc.version)).To(Equal(tc.want))
		})
	}
}

// TestUpdatesSweepsOldEntries: the memory holds only the sources updated in
// the last minute.
func TestUpdatesSweepsOldEntries(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	u := &Updates{Clock: clk}
	for i := range 100 {
		u.saw(refs.Source{Kind: refs.Secret, Namespace: "shop", Name: fmt.Sprintf("s-%d", i)}, []string{"k"}, "5")
	}
	clk.SetTime(t0.Add(Young + time.Second))
	u.saw(refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "new"}, []string{"k"}, "6")
	g.Expect(u.last).To(HaveLen(1))
}
