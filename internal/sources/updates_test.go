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
// content update newer than the version asked about, seen within a minute;
// a creation, a metadata-only update, a deletion and age all leave nothing.
func TestUpdatesRememberContentUpdatesForAMinute(t *testing.T) {
	cm := func(rv, value string, labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app", ResourceVersion: rv, Labels: labels},
			Data: map[string]string{"k": value}}
	}
	src := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		events  func(u *Updates, clk *clocktesting.FakePassiveClock)
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
			g.Expect(u.After(src, tc.version)).To(Equal(tc.want))
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
		u.saw(refs.Source{Kind: refs.Secret, Namespace: "shop", Name: fmt.Sprintf("s-%d", i)}, "5")
	}
	clk.SetTime(t0.Add(Young + time.Second))
	u.saw(refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "new"}, "6")
	g.Expect(u.last).To(HaveLen(1))
}
