// Command nudge rolls Kubernetes workloads when the ConfigMaps and Secrets
// they use change. See the README for flags and annotations.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/app"
	"nudge.dev/nudge/internal/options"
)

// gcPercent is nudge's default GOGC: a heap goal of 1.2× the live heap
// instead of Go's 2×. nudge's heap is mostly its long-lived cache and it
// allocates little once synced, so the extra collections cost CPU mostly at
// start, and the memory saved is most of the GC's headroom (measured with
// `make bench` for GOGC 100, 50, 25 and 20: docs/performance.md). $GOGC still
// wins when set.
const gcPercent = 20

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if err := command().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "nudge:", err)
		os.Exit(1)
	}
}

func command() *cobra.Command {
	opts := options.Default()
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		opts.SystemNamespace = ns
	}
	cmd := &cobra.Command{
		Use:           "nudge",
		Short:         "Roll workloads when the ConfigMaps and Secrets they use change",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := alert.ConfigFromEnv(opts.AlertEnv(os.Getenv))
			if err != nil {
				return err
			}
			opts.Alert = a
			// Reloader's environment: its chart sets KUBERNETES_NAMESPACE to
			// watch only its own namespace (watchGlobally: false), and
			// METRICS_COUNT_BY_NAMESPACE=enabled counts reloads by namespace.
			if ns := os.Getenv("KUBERNETES_NAMESPACE"); ns != "" && !cmd.Flags().Changed("namespaces") {
				opts.Namespaces = []string{ns}
			}
			opts.MetricsByNamespace = os.Getenv("METRICS_COUNT_BY_NAMESPACE") == "enabled"
			if err := opts.Validate(); err != nil {
				return err
			}
			log := app.Logger(opts)
			ctrl.SetLogger(log)
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cfg, err := app.RESTConfig(opts)
			if err != nil {
				return err
			}
			return app.Run(ctrl.LoggerInto(ctx, log), cfg, opts)
		},
	}
	opts.BindFlags(cmd.Flags())
	// Reloader's string booleans may be written "--reload-on-create true".
	cmd.SetArgs(options.JoinBoolArgs(cmd.Flags(), os.Args[1:]))
	cmd.SetContext(context.Background())
	return cmd
}
