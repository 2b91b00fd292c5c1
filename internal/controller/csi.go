package controller

import (
	"context"
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/handler"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/rollout"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/watch"
)

// WatchPodStatuses makes r's controller (see SetupWithManager) also
// reconcile the workloads of r's kind that may mount the SecretProviderClass
// of each SecretProviderClassPodStatus that changes, read from mgr's cache.
// It may be called while the manager runs; the caller sets the CSI flag of
// the reconcilers after. It does nothing for a controller set up with the
// flag on, which watches them already.
//
// The handler is added to the kind's informer here, before the flag is on
// and so before any reconcile reads a pod status (podStatusSource): a
// version a reconcile reads was then either in the informer's store when
// the handler joined, or reaches the handler later as an update. Added at
// the controller's start instead, as a Kind source adds it, once the
// informer has synced, an update landing between a reconcile's read and the
// handler would reach it only as a create of the initial list, which
// sources.PodStatusChanged drops: a lost rotation.
func (r *Reconciler) WatchPodStatuses(ctx context.Context, mgr ctrl.Manager) error {
	if r.ctrl == nil {
		return fmt.Errorf("watching SecretProviderClassPodStatuses for %ss: the controller is not set up", r.Kind.Name())
	}
	if r.podStatuses {
		return nil
	}
	src, err := r.podStatusSource(ctx, mgr)
	if err != nil {
		return err
	}
	r.podStatuses = true
	return r.ctrl.Watch(src)
}

// podStatusSource returns the source of SecretProviderClassPodStatus events
// for r's controller, its handler added now (see WatchPodStatuses).
func (r *Reconciler) podStatusSource(ctx context.Context, mgr ctrl.Manager) (*watch.KindSource, error) {
	return r.watchNow(ctx, r.queue, watch.NewKindSource(mgr.GetCache(), sources.NewPodStatus(),
		handler.EnqueueRequestsFromMapFunc(r.workloadsOf), sources.PodStatusChanged()))
}

// csiOn reports whether nudge watches SecretProviderClassPodStatuses now.
func (r Selector) csiOn() bool { return r.CSI != nil && r.CSI.Load() }

// classNames returns the names of the SecretProviderClasses some pod of
// namespace has mounted, for name patterns.
func (r Selector) classNames(ctx context.Context, namespace string) ([]string, error) {
	if !r.csiOn() {
		return nil, nil
	}
	statuses, err := sources.PodStatuses(ctx, r.Reader, namespace)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range statuses {
		if s.Mounted && s.Class != "" {
			names = append(names, s.Class)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// resolveClass reads a SecretProviderClass reference from the pod statuses
// of its namespace and records it in in: its digest is over the versions of
// the objects every mounted pod status of the class holds
// (fingerprint.Versions). With none mounted, no pod runs with the class:
// it counts for nothing (Unmounted) and leaves the references, so the first
// pod that mounts it makes a baseline, not a rollout. SecretProviderClasses
// are not read themselves: Reloader's ignore and match marks on them are not
// seen, so search mode never selects one.
func (r Resolver) resolveClass(ctx context.Context, c candidate, in *rollout.Input) (Outcome, error) {
	if !r.csiOn() {
		return CSIOff, nil
	}
	if c.needsMatch {
		return Unmatched, nil
	}
	statuses, err := sources.PodStatuses(ctx, r.Reader, c.Namespace)
	if err != nil {
		return "", err
	}
	var pods [][]fingerprint.ObjectVersion
	for _, s := range statuses {
		if s.Mounted && s.Class == c.Name {
			pods = append(pods, s.Objects)
		}
	}
	if len(pods) == 0 {
		return Unmounted, nil
	}
	in.Desired.Entries[c.Source] = fingerprint.Entry{
		Shape:  fingerprint.Shape(c.Reference),
		Digest: r.Key.Source(refs.Reference{Source: c.Source}, fingerprint.Versions(pods...)),
	}
	return Counted, nil
}
