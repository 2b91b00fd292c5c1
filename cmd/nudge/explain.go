package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"nudge.dev/nudge/internal/app"
	"nudge.dev/nudge/internal/explain"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/settings"
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
	opts := options.Default()
	opts.SystemNamespace = cmp.Or(systemNamespace, defaultSystemNamespace)
	var conn connection
	var output string
	cmd := &cobra.Command{
		Use:   "explain TYPE/NAME | TYPE NAME",
		Short: "Explain what nudge does with a workload, or which workloads a ConfigMap or Secret would roll",
		Long: `Explain, with your own kubeconfig and permissions, what nudge does with a workload
(deployment, statefulset, daemonset, cronjob, job, rollout): which dialect annotations it
carries, every ConfigMap and Secret it references and how it reads each, whether each differs
from what its running pods started with, and whether nudge would roll it now; or, for a
configmap or secret, which workloads of its namespace would roll if it changed, and why.

It explains with the settings of the nudge install that handles the namespace, which nudge
publishes in a ConfigMap of its namespace: looked for in --system-namespace (nudge-system by
default), else in every namespace you may list ConfigMaps of. The flags below, when given, win.

Comparing content needs read access to nudge's key Secret (in the install's namespace);
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
			c, namespace, err := conn.client()
			if err != nil {
				return err
			}
			found, err := settings.Find(cmd.Context(), c, opts.SystemNamespace, namespace)
			e := explain.Explainer{Client: c, Options: withInstall(cmd.Flags(), opts, found, err)}
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
	conn.bind(fs)
	fs.StringVarP(&output, "output", "o", "", `Output format: "json" or "yaml"; a table when empty.`)
	fs.StringVar(&opts.SystemNamespace, "system-namespace", opts.SystemNamespace, "nudge's namespace, holding its settings and key Secret (the controller's --system-namespace).")
	fs.StringVar(&opts.KeySecret, "key-secret", opts.KeySecret, "Name of nudge's key Secret (the controller's --key-secret).")
	fs.BoolVar(&opts.AutoReloadAll, "auto-reload-all", opts.AutoReloadAll, "Explain as for a controller run with --auto-reload-all.")
	fs.DurationVar(&opts.RolloutWindow, "rollout-window", opts.RolloutWindow, "The controller's --rollout-window.")
	fs.IntVar(&opts.MaxConcurrentRollouts, "max-concurrent-rollouts", opts.MaxConcurrentRollouts, "The controller's --max-concurrent-rollouts: a workload that would roll shows as pending, waiting for a slot.")
	fs.DurationVar(&opts.RolloutTimeout, "rollout-timeout", opts.RolloutTimeout, "The controller's --rollout-timeout.")
	fs.DurationVar(&opts.ProducerReadyTimeout, "producer-ready-timeout", opts.ProducerReadyTimeout, "The controller's --producer-ready-timeout: a workload whose changed Secret's producer is not ready shows as gated; 0 shows none.")
	return cmd
}

// defaultSystemNamespace is where the chart's instructions install nudge.
const defaultSystemNamespace = "nudge-system"

// explainFlags are the flags of explain that, given, win over the install's
// settings.
var explainFlags = []string{"system-namespace", "key-secret", "auto-reload-all", "rollout-window", "max-concurrent-rollouts", "rollout-timeout", "producer-ready-timeout"}

// withInstall returns the explain options of install s, found by
// settings.Find or Pick: its settings, with the flags of fs the user gave
// (those of explainFlags) set on them; given alone, with findErr as the
// reason, when none was found.
func withInstall(fs *pflag.FlagSet, given options.Options, s *settings.Settings, findErr error) explain.Options {
	var changed []string
	for _, name := range explainFlags {
		if f := fs.Lookup(name); f != nil && f.Changed {
			changed = append(changed, "--"+name+"="+f.Value.String())
		}
	}
	if findErr != nil {
		out := explainOptions(given)
		out.Install = explain.Install{Flags: changed, Reason: findErr.Error()}
		return out
	}
	o := s.Options
	if o.SystemNamespace == "" {
		o.SystemNamespace = s.Namespace
	}
	if s.NotifyOnly {
		o.MaxConcurrentRollouts = 0 // waves are off with --webhook-url
	}
	settings := pflag.NewFlagSet("settings", pflag.ContinueOnError)
	o.BindFlags(settings)
	for _, g := range changed {
		name, value, _ := strings.Cut(strings.TrimPrefix(g, "--"), "=")
		_ = settings.Set(name, value) // parsed once already, by fs
	}
	out := explainOptions(o)
	out.Install = explain.Install{ConfigMap: s.Namespace + "/" + s.Name, Version: s.Version, Flags: override(s.Args, changed)}
	return out
}

// explainOptions returns what explain must know of a nudge run with o.
func explainOptions(o options.Options) explain.Options {
	return explain.Options{
		SystemNamespace:       o.SystemNamespace,
		KeySecret:             o.KeySecret,
		AutoReloadAll:         o.AutoReloadAll,
		RolloutWindow:         o.RolloutWindow,
		MaxConcurrentRollouts: o.MaxConcurrentRollouts,
		RolloutTimeout:        o.RolloutTimeout,
		ProducerReadyTimeout:  o.ProducerReadyTimeout,
		Dialect:               app.Dialect(o),
		Counting:              app.Behaviour(o).Counting,
		Pace:                  app.Behaviour(o).Pace,
	}
}

// override returns args, "--name=value" each, with those of given in place
// of the same flag's, and the others of given after them.
func override(args, given []string) []string {
	out := slices.Clone(args)
	for _, g := range given {
		name, _, _ := strings.Cut(g, "=")
		if i := slices.IndexFunc(out, func(a string) bool { return strings.HasPrefix(a, name+"=") }); i >= 0 {
			out[i] = g
		} else {
			out = append(out, g)
		}
	}
	return out
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
