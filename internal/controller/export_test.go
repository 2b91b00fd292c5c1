package controller

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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
