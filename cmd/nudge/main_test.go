package main

import (
	"bytes"
	"errors"
	"os"
	goruntime "runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/version"
)

// suite is the kube-apiserver the explain tests talk to, and its client;
// no workload controller runs.
var suite nt.Suite

func TestMain(m *testing.M) { os.Exit(suite.Main(m)) }

// run runs root (command or pluginCommand) with args and returns its
// standard output and error.
func run(t *testing.T, root *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetContext(t.Context())
	err := root.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	want := "nudge version " + version.Get() + " (" + goruntime.Version() + " " + goruntime.GOOS + "/" + goruntime.GOARCH + ")\n"
	tests := map[string]struct {
		root func() *cobra.Command
		args []string
		want string
	}{
		"nudge version prints the version":   {command, []string{"version"}, want},
		"nudge --version prints the same":    {command, []string{"--version"}, want},
		"kubectl nudge version names itself": {pluginCommand, []string{"version"}, "kubectl " + want},
		"kubectl nudge --version too":        {pluginCommand, []string{"--version"}, "kubectl " + want},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := run(t, tc.root(), tc.args...)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out).To(Equal(tc.want))
		})
	}
}

func TestRootCommandByName(t *testing.T) {
	tests := map[string]string{
		"nudge":                        "nudge",
		"/usr/local/bin/nudge":         "nudge",
		"/usr/local/bin/kubectl-nudge": "kubectl nudge",
		"kubectl-nudge.exe":            "kubectl nudge",
		"kubectl-nudge-old":            "nudge",
	}
	for argv0, want := range tests {
		t.Run(argv0, func(t *testing.T) {
			NewWithT(t).Expect(rootCommand(argv0).DisplayName()).To(Equal(want))
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := map[string][]string{
		"an unknown type": {"explain", "pod/web"},
		"no name":         {"explain", "deployment"},
		"an output format other than json or yaml": {"explain", "deployment/web", "-o", "wide"},
		"an unknown flag":                          {"explain", "deployment/web", "--no-such-flag"},
		"version takes no argument":                {"version", "extra"},
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := run(t, pluginCommand(), append(args, "--kubeconfig", suite.Plane.Kubeconfig())...)
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.As(err, new(usageError))).To(BeTrue(), "a usage error (exit code 2), got %v", err)
		})
	}
}

// The controller's flags stay on the root command, and the subcommands do
// not take them.
func TestRootKeepsTheControllerFlags(t *testing.T) {
	g := NewWithT(t)
	root := command()
	for _, f := range []string{"kubeconfig", "system-namespace", "key-secret", "auto-reload-all", "reload-strategy", "namespaces", "enable-ha", "log-format"} {
		g.Expect(root.Flags().Lookup(f)).NotTo(BeNil(), "root flag --%s", f)
	}
	_, err := run(t, command(), "--log-format", "xml")
	g.Expect(err).To(MatchError(ContainSubstring("--log-format")), "the root still validates the controller's options")
	g.Expect(strings.Contains(root.UsageString(), "explain")).To(BeTrue(), "the root lists its subcommands")
}

func TestSampleAllocations(t *testing.T) {
	for _, c := range []struct {
		pprof, godebug string
		want           bool
	}{
		{"0", "", false},
		{"0", "http2debug=1", false},
		{"127.0.0.1:6060", "", true},
		{":6060", "memprofilerate=0", true},
		{"0", "memprofilerate=1", true},
		{"0", "http2debug=1, memprofilerate=4096", true},
		{"0", "xmemprofilerate=1", false},
	} {
		if got := sampleAllocations(c.pprof, c.godebug); got != c.want {
			t.Errorf("sampleAllocations(%q, %q) = %v, want %v", c.pprof, c.godebug, got, c.want)
		}
	}
}
