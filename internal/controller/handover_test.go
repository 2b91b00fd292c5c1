package controller

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
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
			var r rollouts
			for k, at := range tt.made {
				r.made(k, at)
			}
			NewWithT(t).Expect(r.foreign(tt.key, tt.at, tt.now)).To(Equal(tt.want))
		})
	}
}
