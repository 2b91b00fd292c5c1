package main

import (
	"cmp"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"nudge.dev/nudge/internal/explain"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/settings"
)

const statusExample = `  # The fleet of every namespace you may read
  kubectl nudge status -A

  # One namespace, as YAML
  kubectl nudge status -n shop -o yaml`

// statusCommand is `nudge status`. systemNamespace, when set, is the
// default of --system-namespace ($POD_NAMESPACE, as for the controller).
func statusCommand(systemNamespace string) *cobra.Command {
	var conn connection
	var output string
	var all bool
	opts := options.Default()
	opts.SystemNamespace = cmp.Or(systemNamespace, defaultSystemNamespace)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show nudge's fleet at a glance: rollouts in flight, halts, missing sources, ValueBindings not Ready, leaders",
		Long: `Show, with your own kubeconfig and permissions, what nudge is doing across a namespace (-n)
or every namespace (-A): the installs found by their settings ConfigMaps and each one's leader
(one per shard), the rollouts nudge started that are in flight or failed, the workloads halted
because the rollout of the same change failed elsewhere (with the source and content they are
held for), the workloads paused by nudge.dev/paused (and what waits, when your permissions
read nudge's key), the workloads waiting for a required source that does not exist, and the
ValueBindings not Ready, with their reasons. What your permissions do not let it read is
listed at the end.

Exit codes: 0 shown; 1 an error talking to the API; 2 a usage error.`,
		Example: statusExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "" && output != "json" && output != "yaml" {
				return usageError{fmt.Errorf(`--output must be "json" or "yaml", got %q`, output)}
			}
			c, namespace, err := conn.client()
			if err != nil {
				return err
			}
			if all {
				namespace = ""
			}
			ctx := cmd.Context()
			installs, err := settings.List(ctx, c, opts.SystemNamespace)
			var found *settings.Settings
			if err == nil {
				found = settings.Pick(ctx, c, installs, namespace)
			}
			e := explain.Explainer{Client: c, Options: withInstall(cmd.Flags(), opts, found, err)} // err, if any, is said in e.Install
			f, err := e.Status(ctx, namespace, installs)
			if err != nil {
				return err
			}
			if output != "" {
				return explain.Encode(cmd.OutOrStdout(), output, f)
			}
			width := 0
			if out, ok := cmd.OutOrStdout().(*os.File); ok && term.IsTerminal(int(out.Fd())) {
				if w, _, err := term.GetSize(int(out.Fd())); err == nil {
					width = w
				}
			}
			return explain.PrintFleet(cmd.OutOrStdout(), width, f)
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	fs := cmd.Flags()
	conn.bind(fs)
	fs.BoolVarP(&all, "all-namespaces", "A", false, "Every namespace you may read.")
	fs.StringVarP(&output, "output", "o", "", `Output format: "json" or "yaml"; tables when empty.`)
	fs.StringVar(&opts.SystemNamespace, "system-namespace", opts.SystemNamespace, "nudge's namespace, holding its settings (the controller's --system-namespace).")
	fs.BoolVar(&opts.AutoReloadAll, "auto-reload-all", opts.AutoReloadAll, "As for a controller run with --auto-reload-all.")
	fs.DurationVar(&opts.RolloutTimeout, "rollout-timeout", opts.RolloutTimeout, "The controller's --rollout-timeout.")
	return cmd
}
