package memo

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"nudge.dev/nudge/internal/refs"
)

func TestProducersWait(t *testing.T) {
	g := NewWithT(t)
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	db := refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"}
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	var p Producers

	wait, until, out := p.Wait(web, []refs.Source{db}, t0, 2*time.Minute)
	g.Expect(wait).To(ConsistOf(db), "a producer not ready is waited for")
	g.Expect(until).To(Equal(t0.Add(2*time.Minute)), "for the timeout from the wait's start")
	g.Expect(out).To(BeEmpty())

	wait, until, _ = p.Wait(web, []refs.Source{db}, t0.Add(time.Minute), 2*time.Minute)
	g.Expect(wait).To(ConsistOf(db))
	g.Expect(until).To(Equal(t0.Add(2*time.Minute)), "the wait's start is kept")

	wait, _, out = p.Wait(web, []refs.Source{db}, t0.Add(2*time.Minute), 2*time.Minute)
	g.Expect(wait).To(BeEmpty(), "not past the timeout")
	g.Expect(out).To(ConsistOf(db), "timed out")

	wait, _, out = p.Wait(web, nil, t0.Add(3*time.Minute), 2*time.Minute)
	g.Expect(wait).To(BeEmpty())
	g.Expect(out).To(BeEmpty())
	wait, until, _ = p.Wait(web, []refs.Source{db}, t0.Add(4*time.Minute), 2*time.Minute)
	g.Expect(wait).To(ConsistOf(db), "a ready producer ends the wait: the next one starts anew")
	g.Expect(until).To(Equal(t0.Add(6 * time.Minute)))
}
