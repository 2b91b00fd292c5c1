package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"nudge.dev/nudge/internal/version"
)

// versionLine is what `nudge version` and `nudge --version` print: "nudge
// v0.3.0 go1.26.0 linux/amd64".
func versionLine(name string) string {
	return fmt.Sprintf("%s %s %s %s/%s", name, version.Get(), version.GoVersion(), runtime.GOOS, runtime.GOARCH)
}

func versionCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print nudge's version: the one stamped at build time (git describe), else the VCS revision, else dev",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(cmd.Root().Name()))
			return err
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}
