package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"nudge.dev/nudge/internal/version"
)

// buildVersion is the root command's Version: "v0.3.0 (go1.26.0
// linux/amd64)". cobra prints it for --version as "nudge version
// v0.3.0 (...)", and the version subcommand prints the same. (No version
// template: a cobra template links text/template, whose reflection keeps
// every method of every type in the binary, 10 MB more.)
func buildVersion() string {
	return fmt.Sprintf("%s (%s %s/%s)", version.Get(), version.GoVersion(), runtime.GOOS, runtime.GOARCH)
}

func versionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print nudge's version: the one stamped at build time (git describe), else the VCS revision, else dev",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s version %s\n", cmd.Root().DisplayName(), cmd.Root().Version)
			return err
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}
