// Command bench measures a reloader (nudge by default) on a local
// kube-apiserver: memory and CPU once synced, change-to-rollout latency,
// fan-out, bursts, no-op changes, coalescing, changes made while it was
// down, and its API requests in each, counted from the audit log under the
// controller's own identity. See docs/performance.md.
//
//	go run ./hack/bench [flags]              # the default scenario set
//	go run ./hack/bench -scale-run           # 100,000 sources, 25,000 Deployments
//	go run ./hack/bench -compare a.json b.json  # runs side by side
//
// The controller under test runs as a separate process (-controller-cmd);
// a rollout is a change of a Deployment's pod template, seen by the
// benchmark's watch (no workload controller runs in apiserver mode).
//
// This package holds the scenarios; the harness they run on is in packages
// of its own: the controller's process (process, cgroup), the plane's
// processes (plane), the rollouts seen (watch), the requests made (audit),
// and what a run measured and its report (results, stats).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"nudge.dev/nudge/hack/bench/process"
	"nudge.dev/nudge/hack/bench/results"
)

func main() {
	if err := mainErr(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func mainErr(args []string) error {
	if len(args) > 0 && args[0] == "-compare" {
		return compareFiles(args[1:])
	}
	cfg, err := parseConfig(args)
	if err != nil {
		return err
	}
	if first := strings.Fields(cfg.ControllerCmd)[0]; strings.Contains(first, "/") {
		if _, err := os.Stat(first); err != nil {
			return fmt.Errorf("controller binary: %w (run `make build`, or give -controller-cmd)", err)
		}
	}
	if first := strings.Fields(cfg.FloorCmd + " floor")[0]; (cfg.Has("floor") || cfg.Has("random") || cfg.Has("random-restart")) && strings.Contains(first, "/") {
		if _, err := os.Stat(first); err != nil {
			return fmt.Errorf("floor binary: %w (run `make bench`, which builds it, or give -floor-cmd)", err)
		}
	}
	self := os.Args[0]
	if strings.Contains(self, "go-build") {
		self = "go run ./hack/bench"
	}
	words := []string{self}
	for _, a := range args {
		words = append(words, process.Quote(a))
	}
	res, runErr := run(context.Background(), cfg, strings.Join(words, " "))
	if res == nil {
		return runErr
	}
	report := results.Markdown(res)
	fmt.Print(report)
	if cfg.MD != "" {
		if err := os.WriteFile(cfg.MD, []byte(report), 0o644); err != nil {
			return err
		}
	}
	if cfg.JSON != "" {
		data, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(cfg.JSON, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return runErr
}

// compareFiles prints the runs of JSON files side by side.
func compareFiles(paths []string) error {
	if len(paths) == 0 {
		return fmt.Errorf("-compare needs JSON files written by -json")
	}
	var runs []*results.Run
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var r results.Run
		if err := json.Unmarshal(data, &r); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		runs = append(runs, &r)
	}
	fmt.Print(results.Compare(runs))
	return nil
}
