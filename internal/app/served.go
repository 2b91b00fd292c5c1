package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// setupWhenServed calls setup, with the plural resource name gvk is served
// under, once the API server serves gvk: at once when it does now, otherwise
// from a poll of API discovery every interval (nudge then needs no restart
// when, say, Argo Rollouts or a custom kind is installed after it). Discovery
// needs no RBAC beyond being authenticated, so this also works with a
// namespaced Role, and nothing of the CRDs is cached.
func setupWhenServed(ctx context.Context, mgr ctrl.Manager, gvk schema.GroupVersionKind, interval time.Duration, setup func(resource string) error) error {
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("creating discovery client: %w", err)
	}
	// served returns the resource gvk is served under, "" for none; a
	// subresource (services/status) has the kind too and is skipped.
	served := func() (string, error) {
		list, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		for _, r := range list.APIResources {
			if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
				return r.Name, nil
			}
		}
		return "", nil
	}
	if resource, err := served(); err != nil {
		return fmt.Errorf("looking up %s: %w", gvk, err)
	} else if resource != "" {
		return setup(resource)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("kind", gvk.String())
	log.Info("Waiting for the API server to serve a kind", "every", interval)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		err := wait.PollUntilContextCancel(ctx, interval, false, func(context.Context) (bool, error) {
			resource, err := served()
			if err != nil {
				log.V(1).Info("Failed to look up a kind; will retry", "error", err.Error())
				return false, nil
			}
			if resource == "" {
				return false, nil
			}
			if err := setup(resource); err != nil {
				log.Error(err, "Failed to start watching a newly served kind; will retry")
				return false, nil
			}
			log.Info("Started watching a newly served kind")
			return true, nil
		})
		if ctx.Err() != nil {
			return nil
		}
		return err
	}))
}
