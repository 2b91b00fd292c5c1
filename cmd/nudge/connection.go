package main

import (
	"fmt"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
)

// connection is kubectl's connection flags, bound as cli-runtime's
// ConfigFlags binds them, from client-go's clientcmd directly. cli-runtime
// is not linked: its genericclioptions bring kustomize and OpenAPI, and its
// printers a text/template, whose reflection keeps every method of every
// type in the binary; either made the controller's binary 10-12 MB larger
// and its memory at start 8.5-9.8 MB larger (/usr/bin/time of nudge --help).
type connection struct {
	loading   *clientcmd.ClientConfigLoadingRules
	overrides *clientcmd.ConfigOverrides
}

// bind registers --kubeconfig and kubectl's override flags (-n, --context,
// --as, ...) on fs.
func (c *connection) bind(fs *pflag.FlagSet) {
	c.loading = clientcmd.NewDefaultClientConfigLoadingRules()
	c.overrides = &clientcmd.ConfigOverrides{}
	fs.StringVar(&c.loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	clientcmd.BindOverrideFlags(c.overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
}

// client returns an API client of the kubeconfig, for the kinds the
// subcommands read, and the namespace it names (-n, else the context's).
func (c *connection) client() (client.Client, string, error) {
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(c.loading, c.overrides)
	namespace, _, err := config.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
	}
	cfg, err := config.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		coordinationv1.AddToScheme, v1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, "", err
		}
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, "", fmt.Errorf("creating the API client: %w", err)
	}
	return cl, namespace, nil
}
