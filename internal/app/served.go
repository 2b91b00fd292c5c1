package app

import (
	"context"
	"fmt"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// setupWhenServed calls setup once the API server serves gvk: at once when
// it does now, otherwise when a CustomResourceDefinition for it becomes
// established (nudge then needs no restart when, say, Argo Rollouts is
// installed after it).
func setupWhenServed(ctx context.Context, mgr ctrl.Manager, gvk schema.GroupVersionKind, setup func() error) error {
	_, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case err == nil:
		return setup()
	case !meta.IsNoMatchError(err):
		return fmt.Errorf("looking up %s: %w", gvk, err)
	}
	ctrl.LoggerFrom(ctx).Info("Waiting for a CustomResourceDefinition to serve it", "kind", gvk.String())
	w := &crdWatch{mgr: mgr, gvk: gvk, setup: setup}
	return ctrl.NewControllerManagedBy(mgr).
		Named("crd-"+gvk.Kind).
		For(&apiextensionsv1.CustomResourceDefinition{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			crd, ok := o.(*apiextensionsv1.CustomResourceDefinition)
			return ok && crd.Spec.Group == gvk.Group && crd.Spec.Names.Kind == gvk.Kind
		}))).
		Complete(w)
}

// crdWatch runs setup once the CustomResourceDefinition of gvk is
// established and serves gvk's version.
type crdWatch struct {
	mgr   ctrl.Manager
	gvk   schema.GroupVersionKind
	setup func() error

	mu   sync.Mutex
	done bool
}

func (w *crdWatch) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := w.mgr.GetClient().Get(ctx, req.NamespacedName, &crd); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	established := false
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			established = true
		}
	}
	if !established {
		return ctrl.Result{}, nil
	}
	if _, err := w.mgr.GetRESTMapper().RESTMapping(w.gvk.GroupKind(), w.gvk.Version); err != nil {
		return ctrl.Result{}, fmt.Errorf("waiting for %s to be served: %w", w.gvk, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return ctrl.Result{}, nil
	}
	if err := w.setup(); err != nil {
		return ctrl.Result{}, err
	}
	w.done = true
	ctrl.LoggerFrom(ctx).Info("Started watching a newly served kind", "kind", w.gvk.String())
	return ctrl.Result{}, nil
}
