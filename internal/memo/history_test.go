package memo

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestHistory(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	api := types.NamespacedName{Namespace: "shop", Name: "api"}
	type write struct {
		over, made string
		firstSight bool
	}
	tests := map[string]struct {
		writes      []write
		version     string
		wantStale   bool
		wantAwaited bool
	}{
		"nothing written: nothing is stale": {
			version: "1",
		},
		"the version nudge patched is stale, and the write's event awaited": {
			writes:      []write{{over: "1", made: "2"}},
			version:     "1",
			wantStale:   true,
			wantAwaited: true,
		},
		"a write whose made version is not known leaves no event to await": {
			writes:    []write{{over: "1"}},
			version:   "1",
			wantStale: true,
		},
		"a later version is not": {
			writes:  []write{{over: "1", made: "2"}},
			version: "2",
		},
		"a first sight of an unknown workload is not remembered": {
			writes:  []write{{over: "1", made: "2", firstSight: true}},
			version: "1",
		},
		"a first sight after a known write moves the version": {
			writes:      []write{{over: "1", made: "2"}, {over: "2", made: "3", firstSight: true}},
			version:     "2",
			wantStale:   true,
			wantAwaited: true,
		},
		"only the last write counts": {
			writes:  []write{{over: "1", made: "2"}, {over: "2", made: "3"}},
			version: "1",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var h History
			for _, w := range tc.writes {
				h.Wrote(web, w.over, w.made, w.firstSight)
			}
			stale, awaited := h.Stale(web, tc.version)
			g.Expect(stale).To(Equal(tc.wantStale), "stale")
			g.Expect(awaited).To(Equal(tc.wantAwaited), "awaited")
			g.Expect(h.Stale(api, tc.version)).To(BeFalse(), "another workload")
			h.Forget(web)
			g.Expect(h.Stale(web, tc.version)).To(BeFalse(), "forgotten")
		})
	}
}

// deployment returns a Deployment shop/name at version.
func deployment(name, version string) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: version}}
}

func TestOwnWrites(t *testing.T) {
	web := types.NamespacedName{Namespace: "shop", Name: "web"}
	update := func(name, from, to string) event.UpdateEvent {
		return event.UpdateEvent{ObjectOld: deployment(name, from), ObjectNew: deployment(name, to)}
	}
	type step struct {
		wrote   *[3]string // over, made, firstSight ("true")
		read    string     // a reconcile reads this version and asks stale
		update  [2]string  // from, to: the watch delivers an update of web
		of      string     // the update's workload when not web
		deleted bool       // the watch delivers web's deletion
		want    bool       // the update passes the predicate

		writing   bool // a write of web starts (writing)
		unwritten bool // the write failed (unwritten)
		again     bool // Wrote or unwritten asks for another reconcile
	}
	tests := map[string]struct {
		steps     []step
		wantStale [2]bool // the last read's stale, awaited
	}{
		"the event of nudge's own write is dropped": {
			steps: []step{{wrote: &[3]string{"1", "2"}}, {update: [2]string{"1", "2"}}},
		},
		"the event of a first sight's write is reconciled, as first sights are not remembered": {
			steps: []step{{wrote: &[3]string{"1", "2", "true"}}, {update: [2]string{"1", "2"}, want: true}},
		},
		"the event of a first sight's write of a known workload is dropped": {
			steps: []step{{wrote: &[3]string{"0", "1"}}, {update: [2]string{"0", "1"}}, {wrote: &[3]string{"1", "2", "true"}}, {update: [2]string{"1", "2"}}},
		},
		"the write is remembered until its event: a second one passes": {
			steps: []step{{wrote: &[3]string{"1", "2"}}, {update: [2]string{"1", "2"}}, {update: [2]string{"1", "2"}, want: true}},
		},
		"an event of another version passes and ends the memory of the write": {
			steps: []step{{wrote: &[3]string{"1", "2"}}, {update: [2]string{"2", "3"}, want: true}, {update: [2]string{"1", "2"}, want: true}},
		},
		"an event of another workload passes": {
			steps: []step{{wrote: &[3]string{"1", "2"}}, {update: [2]string{"1", "2"}, of: "api", want: true}},
		},
		"a workload never written passes": {
			steps: []step{{update: [2]string{"1", "2"}, want: true}},
		},
		"a reconcile that read the version written over awaits the event, which then passes": {
			steps:     []step{{wrote: &[3]string{"1", "2"}}, {read: "1"}, {update: [2]string{"1", "2"}, want: true}},
			wantStale: [2]bool{true, true},
		},
		"a reconcile that read the version written over after the event was dropped must requeue": {
			steps:     []step{{wrote: &[3]string{"1", "2"}}, {update: [2]string{"1", "2"}}, {read: "1"}},
			wantStale: [2]bool{true, false},
		},
		"a deletion ends the memory of the write": {
			steps: []step{{wrote: &[3]string{"1", "2"}}, {deleted: true}, {update: [2]string{"1", "2"}, want: true}},
		},
		"a write that made no new version is not awaited": {
			steps: []step{{wrote: &[3]string{"1", "1"}}, {update: [2]string{"0", "1"}, want: true}},
		},
		"the write's own event, come before its answer, is held back and reconciles nothing": {
			steps: []step{{writing: true}, {update: [2]string{"1", "2"}}, {wrote: &[3]string{"1", "2"}}, {update: [2]string{"2", "3"}, want: true}},
		},
		"another's event held back during a write asks for another reconcile": {
			steps: []step{{writing: true}, {update: [2]string{"2", "3"}}, {wrote: &[3]string{"1", "2"}, again: true}},
		},
		"the write's own event and a later one held back ask for another reconcile": {
			steps: []step{{writing: true}, {update: [2]string{"1", "2"}}, {update: [2]string{"2", "3"}}, {wrote: &[3]string{"1", "2"}, again: true}},
		},
		"a write whose made version is not known takes every event held back for another's": {
			steps: []step{{writing: true}, {update: [2]string{"1", "2"}}, {wrote: &[3]string{"1", ""}, again: true}},
		},
		"a write answered before its event holds nothing back, and its event is dropped": {
			steps: []step{{writing: true}, {wrote: &[3]string{"1", "2"}}, {update: [2]string{"1", "2"}}, {update: [2]string{"2", "3"}, want: true}},
		},
		"a failed write asks for another reconcile when an event was held back": {
			steps: []step{{writing: true}, {update: [2]string{"1", "2"}}, {unwritten: true, again: true}, {update: [2]string{"2", "3"}, want: true}},
		},
		"a failed write with nothing held back asks for nothing": {
			steps: []step{{writing: true}, {unwritten: true}, {update: [2]string{"1", "2"}, want: true}},
		},
		"unwritten after Wrote does nothing": {
			steps: []step{{writing: true}, {update: [2]string{"2", "3"}}, {wrote: &[3]string{"1", "2"}, again: true}, {unwritten: true}},
		},
		"a first sight's write tells of another's event held back too": {
			steps: []step{{writing: true}, {update: [2]string{"2", "3"}}, {wrote: &[3]string{"1", "2", "true"}, again: true}, {update: [2]string{"3", "4"}, want: true}},
		},
		"another workload's events are not held back during web's write": {
			steps: []step{{writing: true}, {update: [2]string{"1", "2"}, of: "api", want: true}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var h History
			p := h.OwnWrites()
			var stale [2]bool
			for i, s := range tc.steps {
				switch {
				case s.writing:
					h.writing(web)
				case s.wrote != nil:
					g.Expect(h.Wrote(web, s.wrote[0], s.wrote[1], s.wrote[2] == "true")).To(Equal(s.again), "step %d: wrote asks for another reconcile", i)
				case s.unwritten:
					g.Expect(h.unwritten(web)).To(Equal(s.again), "step %d: unwritten asks for another reconcile", i)
				case s.read != "":
					stale[0], stale[1] = h.Stale(web, s.read)
				case s.deleted:
					g.Expect(p.Delete(event.DeleteEvent{Object: deployment("web", "2")})).To(BeTrue(), "step %d: a deletion", i)
				default:
					name := "web"
					if s.of != "" {
						name = s.of
					}
					g.Expect(p.Update(update(name, s.update[0], s.update[1]))).To(Equal(s.want), "step %d: update %v", i, s.update)
				}
			}
			g.Expect(stale).To(Equal(tc.wantStale), "stale, awaited")
		})
	}
}
