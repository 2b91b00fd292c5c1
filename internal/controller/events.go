package controller

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
)

// warn records a Warning Event and a log line for every new cause of obj.
// Notes are cut to what an Event holds (see record.Note) before they are
// remembered.
func (r *Reconciler) warn(ctx context.Context, obj client.Object, causes []record.Cause) {
	for i := range causes {
		causes[i].Note = record.Note(causes[i].Note)
	}
	for _, c := range r.memory.Warnings.Fresh(client.ObjectKeyFromObject(obj), causes) {
		r.record(ctx, obj, c)
	}
}

// record records a Warning Event of c about obj, and a log line.
func (r *Reconciler) record(ctx context.Context, obj client.Object, c record.Cause) {
	r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, c.Reason, "Check", "%s", c.Note)
	ctrl.LoggerFrom(ctx).Info("Warned about "+r.Kind.Name(), "reason", c.Reason, "message", c.Note)
	r.Metrics.Warned(c.Reason)
}

// rolled records a rollout: a Normal Event (Rolled, or with ReloaderEvents
// Reloader's Reloaded), a log line in Reloader's words, and the rollout
// counter.
func (r *Reconciler) rolled(ctx context.Context, obj client.Object, changed []refs.Source) {
	kind := r.Kind.Name()
	detected := detectedIn(changed)
	if r.ReloaderEvents {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, record.ReasonReloaded, "Reload", "%s", record.Note(fmt.Sprintf(
			"Changes detected in %s, Updated '%s' of type '%s' in namespace '%s'", detected, obj.GetName(), kind, obj.GetNamespace())))
	} else {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, record.ReasonRolled, "Roll",
			"%s", record.Note(fmt.Sprintf("Rolled %s %s because %s changed", kind, obj.GetName(), refs.Names(changed))))
	}
	ctrl.LoggerFrom(ctx).Info(fmt.Sprintf("Changes detected in %s; updated '%s' of type '%s' in namespace '%s'",
		detected, obj.GetName(), kind, obj.GetNamespace()),
		"kind", kind, "sources", refs.Names(changed))
	r.Metrics.Rolled(kind, obj.GetNamespace())
	if at, ok := r.memory.Unrolled.Take(client.ObjectKeyFromObject(obj)); ok {
		r.Metrics.Waited(kind, r.now().Sub(at))
	}
	r.notify(obj, changed)
}

// detectedIn names the sources in changed as Reloader's log lines and Events
// do: "'db' of type 'SECRET' in namespace 'shop', ...".
func detectedIn(changed []refs.Source) string {
	var out []string
	for _, s := range changed {
		out = append(out, fmt.Sprintf("'%s' of type '%s' in namespace '%s'", s.Name, strings.ToUpper(string(s.Kind)), s.Namespace))
	}
	return strings.Join(out, ", ")
}

// notify tells Notify, when set, of the rollout of obj for changed.
func (r *Reconciler) notify(obj client.Object, changed []refs.Source) {
	if r.Notify != nil {
		r.Notify(alert.Alert{Kind: r.Kind.Name(), Namespace: obj.GetNamespace(), Name: obj.GetName(), Sources: alert.Sources(changed), Time: r.now()})
	}
}
