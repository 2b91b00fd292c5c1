package memo

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/refs"
)

func TestRolloutsForeign(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 123456789, time.UTC)
	tests := map[string]struct {
		made    map[types.NamespacedName]time.Time // this nudge's rollouts
		key     types.NamespacedName
		at, now time.Time // the workload's last rollout, and when it is read
		want    bool
	}{
		"never rolled":                            {key: web, now: t0, want: false},
		"another's, just now":                     {key: web, at: t0, now: t0.Add(time.Second), want: true},
		"another's, within the window":            {key: web, at: t0, now: t0.Add(foreignWindow), want: true},
		"another's, older than the window":        {key: web, at: t0, now: t0.Add(foreignWindow + time.Nanosecond), want: false},
		"ours":                                    {made: map[types.NamespacedName]time.Time{web: t0}, key: web, at: t0, now: t0.Add(time.Second), want: false},
		"ours, read back from its RFC 3339 stamp": {made: map[types.NamespacedName]time.Time{web: t0.Local()}, key: web, at: t0, now: t0.Add(time.Second), want: false},
		"another's after ours":                    {made: map[types.NamespacedName]time.Time{web: t0}, key: web, at: t0.Add(time.Second), now: t0.Add(2 * time.Second), want: true},
		"ours of another workload":                {made: map[types.NamespacedName]time.Time{api: t0}, key: web, at: t0, now: t0.Add(time.Second), want: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var r Rollouts
			for k, at := range tt.made {
				r.Made(k, at, "")
			}
			NewWithT(t).Expect(r.Foreign(tt.key, tt.at, tt.now)).To(Equal(tt.want))
		})
	}
}

// The sources written before this nudge's last rollout of a workload are
// no change to roll it again for: its pods started after them.
func TestRolloutsBefore(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	cm := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"}
	sec := refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		version string // the rollout's; none when ""
		now     time.Time
		read    map[refs.Source]string
		want    []refs.Source
	}{
		"a source written just before the rollout": {version: "517", now: t0, read: map[refs.Source]string{cm: "516", sec: "600"}, want: []refs.Source{cm}},
		"a source written after it":                {version: "517", now: t0, read: map[refs.Source]string{cm: "518"}},
		"the rollout's own version is not before":  {version: "517", now: t0, read: map[refs.Source]string{cm: "517"}},
		"no rollout remembered":                    {now: t0, read: map[refs.Source]string{cm: "1"}},
		"a rollout older than the window":          {version: "517", now: t0.Add(foreignWindow + time.Second), read: map[refs.Source]string{cm: "516"}},
		"a malformed version is not before":        {version: "517", now: t0, read: map[refs.Source]string{cm: "x"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var r Rollouts
			if tt.version != "" {
				r.Made(web, t0, tt.version)
			}
			NewWithT(t).Expect(r.Before(web, tt.read, tt.now)).To(Equal(tt.want))
		})
	}
}

// A check that found the cache holding the API server's version of a
// source covers the other nudges' rollouts stamped ClockSkew or more
// before it, and no later one: those may have been decided on a newer
// version.
func TestCaughtUpCovers(t *testing.T) {
	cm := refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "web"}
	other := refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "web"}
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		checked     *time.Time // when the cache of cm was found caught up
		rolled, now time.Time
		src         refs.Source
		want        bool
	}{
		"never checked":                        {rolled: t0, now: t0.Add(time.Minute), src: cm, want: false},
		"a rollout long before the check":      {checked: ptr.To(t0.Add(50 * time.Second)), rolled: t0, now: t0.Add(51 * time.Second), src: cm, want: true},
		"a rollout ClockSkew before the check": {checked: ptr.To(t0.Add(ClockSkew)), rolled: t0, now: t0.Add(ClockSkew), src: cm, want: true},
		"a rollout within ClockSkew of it":     {checked: ptr.To(t0.Add(ClockSkew - time.Millisecond)), rolled: t0, now: t0.Add(ClockSkew), src: cm, want: false},
		"a rollout after the check":            {checked: ptr.To(t0), rolled: t0.Add(time.Second), now: t0.Add(2 * time.Second), src: cm, want: false},
		"another source checked":               {checked: ptr.To(t0.Add(50 * time.Second)), rolled: t0, now: t0.Add(51 * time.Second), src: other, want: false},
		"a check older than foreignWindow":     {checked: ptr.To(t0.Add(50 * time.Second)), rolled: t0, now: t0.Add(50*time.Second + foreignWindow + time.Nanosecond), src: cm, want: false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			var c CaughtUp
			if tt.checked != nil {
				c.Saw(cm, *tt.checked)
			}
			NewWithT(t).Expect(c.Covers(tt.src, tt.rolled, tt.now)).To(Equal(tt.want))
		})
	}
}
