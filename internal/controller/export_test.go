package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"nudge.dev/nudge/internal/workload"
)

// WatchKind is watchKind, for the tests of package controller_test (which
// hold the package's plane).
var WatchKind = watchKind

// NewQueue is newQueue, for the tests of package controller_test.
var NewQueue = newQueue

// AddHandler is addHandler, for the tests of package controller_test.
func (s *kindSource) AddHandler(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	return s.addHandler(ctx, queue)
}

// QueueReady is queueReady, for the tests of package controller_test.
const QueueReady = queueReady

// Apply is apply, for the tests of package controller_test.
func (r *Reconciler) Apply(ctx context.Context, obj client.Object, c workload.Change) error {
	return r.apply(ctx, obj, c)
}

// ClockSkew is clockSkew, for the tests of package controller_test.
const ClockSkew = clockSkew
