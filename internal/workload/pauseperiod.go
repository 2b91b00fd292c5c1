package workload

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PausePeriod is Reloader's pause of a Deployment after its rollout, by
// its annotations' names as Reloader's flags set them: Period (a Go
// duration, deployment.reloader.stakater.com/pause-period) asks for it, and
// PausedAt (RFC 3339, deployment.reloader.stakater.com/paused-at) records
// when the rollout paused the Deployment. The pause lives in annotations,
// so a restarted nudge resumes on time. See
// https://github.com/stakater/Reloader#pause-deployments.
type PausePeriod struct{ Period, PausedAt string }

// Of returns the pause period obj asks for, 0 when none, and an error when
// its annotation is no positive Go duration (obj is then not paused).
func (p PausePeriod) Of(obj client.Object) (time.Duration, error) {
	v, ok := obj.GetAnnotations()[p.Period]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("annotation %s: want a positive Go duration such as \"5m\", got %q; not pausing", p.Period, v)
	}
	return d, nil
}

// Pause sets in c, the rollout at now of obj, its pause: for a Deployment
// that asks for one and is not paused already, by nudge (the period runs)
// or by someone else (whose pause nudge must not end).
func (p PausePeriod) Pause(c *Change, obj client.Object, now time.Time) {
	dep, ok := obj.(*appsv1.Deployment)
	if d, _ := p.Of(obj); !ok || d == 0 || dep.Spec.Paused {
		return
	}
	if c.Spec == nil {
		c.Spec = map[string]any{}
	}
	c.Spec["paused"] = true
	at := now.UTC().Format(time.RFC3339)
	c.Annotations[p.PausedAt] = &at
}

// Resume returns, at now, the write that ends the pause a rollout of obj
// started, once its period has passed (due); otherwise how long is left,
// 0 when obj was not paused by a rollout.
func (p PausePeriod) Resume(obj client.Object, now time.Time) (c Change, left time.Duration, due bool) {
	at, err := time.Parse(time.RFC3339, obj.GetAnnotations()[p.PausedAt])
	if err != nil {
		return Change{}, 0, false
	}
	d, _ := p.Of(obj)
	if left := at.Add(d).Sub(now); left > 0 {
		return Change{}, left, false
	}
	return Change{
		ResourceVersion: obj.GetResourceVersion(),
		Annotations:     map[string]*string{p.PausedAt: nil},
		Spec:            map[string]any{"paused": false},
	}, 0, true
}
