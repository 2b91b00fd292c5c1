// Command nudge rolls Kubernetes workloads when the ConfigMaps and Secrets
// they use change. See the README for flags and annotations.
//
// Run without a subcommand, it is the controller. Its subcommands explain
// what nudge does (nudge explain) and tell its version (nudge version).
// Installed under the name kubectl-nudge, it is the kubectl plugin
// `kubectl nudge`, with the subcommands alone.
//
// Exit codes: 0 success; 1 an error (the controller failed, the API refused
// a read, an object does not exist); 2 a usage error of a subcommand (an
// unknown flag, type or argument).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	// The zone database, for maintenance windows in a zone: the image
	// (`make image`'s, from files) has no /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/spf13/cobra"
	ctrl "sigs.k8s.io/controller-runtime"

	"nudge.dev/nudge/internal/alert"
	"nudge.dev/nudge/internal/app"
	"nudge.dev/nudge/internal/logging"
	"nudge.dev/nudge/internal/options"
)

// gcPercent is nudge's default GOGC: a heap goal of 1.2× the live heap
// instead of Go's 2×. nudge's heap is mostly its long-lived cache and it
// allocates little once synced, so the extra collections cost CPU mostly at
// start, and the memory saved is most of the GC's headroom (measured with
// `make bench` for GOGC 100, 50, 25 and 20: docs/performance.md). While it
// starts, nudge leaves at least 8 MiB of growth between collections where
// this would leave less (internal/gctune, startHeadroom). $GOGC still wins when set.
const gcPercent = 20

// sampleAllocations reports whether the controller keeps Go's heap profiling
// (runtime.MemProfileRate, a sample every 512 KiB allocated): when pprof is
// served (--pprof-bind-address other than "0"), or when $GODEBUG sets
// memprofilerate (https://pkg.go.dev/runtime#hdr-Environment_Variables).
// Otherwise no profile can be read, yet every sample keeps a record of its
// stack for the life of the process, and the first one maps the runtime's
// 1.4 MB table of them: 0.4–0.9 MiB of an idle nudge's anonymous memory at
// `make bench`'s scale (docs/performance.md, "The fixed part"), paid again
// by each shard.
func sampleAllocations(pprofAddr, godebug string) bool {
	if pprofAddr != "0" {
		return true
	}
	for setting := range strings.SplitSeq(godebug, ",") {
		if name, _, _ := strings.Cut(strings.TrimSpace(setting), "="); name == "memprofilerate" {
			return true
		}
	}
	return false
}

// pluginName is the binary's name as a kubectl plugin: kubectl runs
// kubectl-nudge for `kubectl nudge`.
const pluginName = "kubectl-nudge"

// Exit codes.
const (
	exitError = 1
	exitUsage = 2
)

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	cmd := rootCommand(os.Args[0])
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", cmd.Name(), err)
		if errors.As(err, new(usageError)) {
			os.Exit(exitUsage)
		}
		os.Exit(exitError)
	}
}

// rootCommand returns the command the binary runs as, by the name it was
// run by (argv0): kubectl-nudge is the plugin, any other name nudge.
func rootCommand(argv0 string) *cobra.Command {
	if strings.TrimSuffix(filepath.Base(argv0), ".exe") == pluginName {
		return pluginCommand()
	}
	return command()
}

// command is nudge: the controller, with the subcommands.
func command() *cobra.Command {
	opts := options.Default()
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		opts.SystemNamespace = ns
	}
	cmd := &cobra.Command{
		Use:           "nudge",
		Short:         "Roll workloads when the ConfigMaps and Secrets they use change",
		Version:       buildVersion(),
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
			if !sampleAllocations(opts.PprofAddr, os.Getenv("GODEBUG")) {
				runtime.MemProfileRate = 0
			}
			log := logging.New(opts)
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
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.AddCommand(explainCommand(os.Getenv("POD_NAMESPACE")), statusCommand(os.Getenv("POD_NAMESPACE")), versionCommand())
	cmd.SetContext(context.Background())
	return cmd
}

// pluginCommand is kubectl-nudge: the subcommands alone, named as kubectl
// shows them.
func pluginCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:           pluginName,
		Short:         "Explain what nudge rolls, and why; show its fleet at a glance",
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl nudge"},
	}
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetFlagErrorFunc(flagError)
	cmd.AddCommand(explainCommand(""), statusCommand(""), versionCommand())
	cmd.SetContext(context.Background())
	return cmd
}

// usageError is an error in what the user asked; main exits with exitUsage.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// flagError makes cobra's flag errors usage errors.
func flagError(_ *cobra.Command, err error) error { return usageError{err} }
