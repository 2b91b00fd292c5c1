package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/explain"
	"nudge.dev/nudge/internal/options"
)

const explainExample = `  # Why does (or doesn't) nudge roll Deployment web?
  nudge explain deployment/web -n shop

  # Which workloads would roll if Secret db changed?
  nudge explain secret/db -n shop

  # The same as JSON, as the kubectl plugin
  kubectl nudge explain deploy web -n shop -o json`

// explainCommand is `nudge explain`. systemNamespace, when set, is the
// default of --system-namespace ($POD_NAMESPACE, as for the controller).
func explainCommand(systemNamespace string) *cobra.Command {
	defaults := options.Default()
	if systemNamespace != "" {
		defaults.SystemNamespace = systemNamespace
	}
	opts := explain.Options{SystemNamespace: defaults.SystemNamespace, KeySecret: defaults.KeySecret, RolloutWindow: defaults.RolloutWindow,
		RolloutTimeout: defaults.RolloutTimeout}
	// kubectl's connection flags, bound as cli-runtime's ConfigFlags binds
	// them, from client-go's clientcmd directly. cli-runtime is not linked:
	// its genericclioptions bring kustomize and OpenAPI, and its printers a
	// text/template, whose reflection keeps every method of every type in
	// the binary; either made the controller's binary 10-12 MB larger and
	// its memory at start 8.5-9.8 MB larger (/usr/bin/time of nudge --help).
	loading := clientcmd.NewDefaultClientConfigLoadingRules()
	overrides := &clientcmd.ConfigOverrides{}
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(loading, overrides)
	var output string
	cmd := &cobra.Command{
		Use:   "explain TYPE/NAME | TYPE NAME",
		Short: "Explain what nudge does with a workload, or which workloads a ConfigMap or Secret would roll",
		Long: `Explain, with your own kubeconfig and permissions, what nudge does with a workload
(deployment, statefulset, daemonset, cronjob, job, rollout): which dialect annotations it
carries, every ConfigMap and Secret it references and how it reads each, whether each differs
from what its running pods started with, and whether nudge would roll it now; or, for a
configmap or secret, which workloads of its namespace would roll if it changed, and why.

Comparing content needs read access to nudge's key Secret (--system-namespace, --key-secret);
without it, every reference is still shown.

Exit codes: 0 explained (also when content could not be compared); 1 an error (the object
does not exist, the API refused a read); 2 a usage error.`,
		Example: explainExample,
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			target, err := explain.ParseTarget(args)
			if err != nil {
				return usageError{err}
			}
			if output != "" && output != "json" && output != "yaml" {
				return usageError{fmt.Errorf(`--output must be "json" or "yaml", got %q`, output)}
			}
			namespace, _, err := config.Namespace()
			if err != nil {
				return fmt.Errorf("reading the namespace from the kubeconfig: %w", err)
			}
			cfg, err := config.ClientConfig()
			if err != nil {
				return fmt.Errorf("loading the kubeconfig: %w", err)
			}
			scheme := runtime.NewScheme()
			for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme} {
				if err := add(scheme); err != nil {
					return err
				}
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return fmt.Errorf("creating the API client: %w", err)
			}
			e := explain.Explainer{Client: c, Options: opts}
			var report any
			if target.Workload != nil {
				report, err = e.Workload(cmd.Context(), target.Workload, namespace, target.Name)
			} else {
				report, err = e.Source(cmd.Context(), target.Source, namespace, target.Name)
			}
			if errors.Is(err, explain.ErrUsage) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			return printReport(cmd.OutOrStdout(), output, report)
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	fs := cmd.Flags()
	fs.StringVar(&loading.ExplicitPath, clientcmd.RecommendedConfigPathFlag, "", "Path to the kubeconfig file to use for CLI requests.")
	clientcmd.BindOverrideFlags(overrides, fs, clientcmd.RecommendedConfigOverrideFlags(""))
	fs.StringVarP(&output, "output", "o", "", `Output format: "json" or "yaml"; a table when empty.`)
	fs.StringVar(&opts.SystemNamespace, "system-namespace", opts.SystemNamespace, "nudge's namespace, holding its key Secret (the controller's --system-namespace).")
	fs.StringVar(&opts.KeySecret, "key-secret", opts.KeySecret, "Name of nudge's key Secret (the controller's --key-secret).")
	fs.BoolVar(&opts.AutoReloadAll, "auto-reload-all", opts.AutoReloadAll, "Explain as for a controller run with --auto-reload-all.")
	fs.DurationVar(&opts.RolloutWindow, "rollout-window", opts.RolloutWindow, "The controller's --rollout-window.")
	fs.IntVar(&opts.MaxConcurrentRollouts, "max-concurrent-rollouts", opts.MaxConcurrentRollouts, "The controller's --max-concurrent-rollouts: a workload that would roll shows as pending, waiting for a slot.")
	fs.DurationVar(&opts.RolloutTimeout, "rollout-timeout", opts.RolloutTimeout, "The controller's --rollout-timeout.")
	return cmd
}

// printReport writes report as a table sized to the terminal, or as JSON or YAML.
func printReport(out io.Writer, output string, report any) error {
	if output != "" {
		return explain.Encode(out, output, report)
	}
	width := 0
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil {
			width = w
		}
	}
	if w, ok := report.(*explain.Workload); ok {
		return explain.PrintWorkload(out, width, w)
	}
	return explain.PrintSource(out, width, report.(*explain.Source))
}
