package workload

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPausePeriod(t *testing.T) {
	p := PausePeriod{Period: "pause-period", PausedAt: "paused-at"}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	dep := func(paused bool, annotations map[string]string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Annotations: annotations, ResourceVersion: "7"}, Spec: appsv1.DeploymentSpec{Paused: paused}}
	}
	for _, c := range []struct {
		name      string
		obj       *appsv1.Deployment
		malformed bool
		pauses    bool
		left      time.Duration
		resumes   bool
	}{
		{name: "no period: never paused", obj: dep(false, nil)},
		{name: "a period pauses the rollout", obj: dep(false, map[string]string{"pause-period": "5m"}), pauses: true},
		{name: "paused by someone else: nudge neither pauses nor resumes it", obj: dep(true, map[string]string{"pause-period": "5m"})},
		{name: "not a duration: malformed, not paused", obj: dep(false, map[string]string{"pause-period": "soon"}), malformed: true},
		{name: "zero: malformed, not paused", obj: dep(false, map[string]string{"pause-period": "0s"}), malformed: true},
		{name: "paused by a rollout, the period running", obj: dep(true, map[string]string{"pause-period": "5m", "paused-at": "2026-11-29T11:58:00Z"}), left: 3 * time.Minute},
		{name: "paused by a rollout, the period over: resumed", obj: dep(true, map[string]string{"pause-period": "5m", "paused-at": "2026-11-29T11:50:00Z"}), resumes: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := p.Of(c.obj)
			g.Expect(err != nil).To(Equal(c.malformed), "malformed")
			ch := Change{Annotations: map[string]*string{}}
			p.Pause(&ch, c.obj, now)
			if c.pauses {
				g.Expect(ch.Spec).To(HaveKeyWithValue("paused", true))
				g.Expect(ch.Annotations).To(HaveKeyWithValue("paused-at", HaveValue(Equal("2026-11-29T12:00:00Z"))))
			} else {
				g.Expect(ch.Spec).To(BeNil())
			}
			resume, left, due := p.Resume(c.obj, now)
			g.Expect(left).To(Equal(c.left))
			g.Expect(due).To(Equal(c.resumes))
			if c.resumes {
				g.Expect(resume.Spec).To(HaveKeyWithValue("paused", false))
				g.Expect(resume.Annotations).To(HaveKeyWithValue("paused-at", BeNil()))
				g.Expect(resume.ResourceVersion).To(Equal("7"))
			}
		})
	}
}
