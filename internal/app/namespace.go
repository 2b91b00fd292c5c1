package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/options"
)

// ErrNoSystemNamespace: nudge could not keep its fingerprint key in its
// system namespace (none found, one that does not exist, or one it may not
// write Secrets in). Its message names the flag to set.
var ErrNoSystemNamespace = errors.New("set --system-namespace (or $POD_NAMESPACE) to an existing namespace where nudge may read and create Secrets")

// systemNamespace returns opts.SystemNamespace or, when it is empty, the
// namespace nudge runs in, as kubectl finds it: in a cluster the pod's
// ($POD_NAMESPACE, else its service account's namespace); outside one the
// current context's namespace in the kubeconfig (--kubeconfig, else
// $KUBECONFIG or ~/.kube/config), "default" when the context names none.
func systemNamespace(opts options.Options) (string, error) {
	if opts.SystemNamespace != "" {
		return opts.SystemNamespace, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if opts.Kubeconfig != "" {
		rules.ExplicitPath = opts.Kubeconfig
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err == nil && ns == "" {
		err = errors.New("the kubeconfig names none")
	}
	if err != nil {
		return "", fmt.Errorf("finding nudge's own namespace: %w: %w", err, ErrNoSystemNamespace)
	}
	return ns, nil
}

// keyError adds to an error of fingerprint.LoadKey in namespace the flag to set, when
// the namespace is missing or nudge may not use it.
func keyError(namespace string, err error) error {
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return fmt.Errorf("%w; namespace %q: %w", err, namespace, ErrNoSystemNamespace)
	}
	return err
}

// warnAccepted logs a warning for each of Reloader's flags nudge accepts but
// does not act on, so that a migrated Deployment's args say what they do.
func warnAccepted(ctx context.Context, opts options.Options) {
	log := ctrl.LoggerFrom(ctx)
	if strings.EqualFold(strings.TrimSpace(opts.Reloader.IsOpenShift), "true") {
		log.Info("Accepted --is-openshift=true, but nudge does not handle OpenShift DeploymentConfigs; Deployments and the other kinds are handled as usual", "warning", true)
	}
}
