package controller

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
)

// The reconciler's one seam with the fleet's waves (--max-concurrent-
// rollouts, see fleet.Waves): every call of r.Waves is in this file. A nil
// Waves is off, and each of these does nothing.

// waveKey is the fleet's key of the workload n of r's kind.
func (r *Reconciler) waveKey(n types.NamespacedName) fleet.Key {
	return fleet.Key{Kind: r.Kind.Name(), NamespacedName: n}
}

// waveSaw tells the waves, while observing, of the workload key as the
// cache holds it (obj; nil when it is gone): where its rollout stands.
func (r *Reconciler) waveSaw(ctx context.Context, key types.NamespacedName, obj client.Object) {
	if obj == nil {
		r.Waves.Gone(r.waveKey(key))
		return
	}
	r.Waves.Observe(ctx, r.waveKey(key), obj, r.now())
}

// waveInputs gathers into o's inputs what the waves tell the decision (see
// fleet.Waves.Inputs), with the Warnings found.
func (r *Reconciler) waveInputs(ctx context.Context, o *observed) error {
	causes, err := r.Waves.Inputs(ctx, r.waveKey(o.key), o.obj, &o.in, r.resolver().ContentDigest)
	o.causes = append(o.causes, causes...)
	return err
}

// waveSlot, act's guard of a rollout with waves on, takes the slot the
// decision counted on; false when another workload took it meanwhile.
func (r *Reconciler) waveSlot(ctx context.Context, o *observed) bool {
	return r.Waves.Take(ctx, r.waveKey(o.key), o.obj, r.now())
}

// waveMarks returns the waves' annotations of act's write for d (see
// fleet.Marks), none with waves off: a map act adds its own to.
func (r *Reconciler) waveMarks(obj client.Object, d rollout.Decision) map[string]*string {
	marks := map[string]*string{}
	if r.Waves != nil {
		maps.Copy(marks, fleet.Marks(obj, d))
	}
	return marks
}

// waveAnnotate adds to the annotations of a rollout's write the content it
// rolls to (see fleet.Waves.Annotate).
func (r *Reconciler) waveAnnotate(ctx context.Context, obj client.Object, annotations map[string]*string, d rollout.Decision) error {
	return r.Waves.Annotate(ctx, r.waveKey(client.ObjectKeyFromObject(obj)), annotations, d, r.resolver().ContentDigest)
}

// waveRecorded records in the waves what became of decision d on o's
// workload (see fleet.Waves.Recorded), logs and notifies a hold it wrote,
// and returns result asking to be called back when the waves say so.
func (r *Reconciler) waveRecorded(ctx context.Context, o *observed, d rollout.Decision, over string, written bool, result ctrl.Result) ctrl.Result {
	if o.guarded {
		return result // the slot held, the place in line kept
	}
	after := r.Waves.Recorded(r.waveKey(o.key), o.obj, d, over, written, r.now())
	if d.Action == rollout.Halted && written {
		ctrl.LoggerFrom(ctx).Info("Halted rollout of "+r.Kind.Name(), "kind", r.Kind.Name(), "sources", refs.Names(d.Changed), "after", d.Halt.After)
		if r.Notify != nil {
			r.Notify(alert.Alert{Kind: r.Kind.Name(), Namespace: o.key.Namespace, Name: o.key.Name, Sources: alert.Sources(d.Changed), Time: r.now(),
				Halted: "the rollout of " + d.Halt.After + " for the same change failed"})
		}
	}
	return sooner(result, after)
}

// waveLeave drops the workload key from those waiting for a slot, unless
// it is pending.
func (r *Reconciler) waveLeave(key types.NamespacedName, pending bool) {
	if !pending {
		r.Waves.Leave(r.waveKey(key))
	}
}

// expectWave ranks the workloads a source change is about to reconcile (see
// fleet.Waves.ExpectEach).
func (r *Reconciler) expectWave(ctx context.Context, reqs []reconcile.Request) {
	r.Waves.ExpectEach(ctx, r.Client, r.Kind, reqs)
}

// waveWatches returns, with waves on, changed and the predicate that lets
// a rollout's progress through, and the waves' source (the rollouts in
// flight seeded from the cache, see fleet.Waves.Register).
func (r *Reconciler) waveWatches(changed []predicate.Predicate) ([]predicate.Predicate, []source.Source) {
	if r.Waves == nil {
		return changed, nil
	}
	return append(changed, fleet.ProgressChanged()), []source.Source{source.Func(r.Waves.Register(r.Kind, r.Client))}
}
