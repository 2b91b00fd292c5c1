package model_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

	"nudge.dev/nudge/internal/testbed"
	"nudge.dev/nudge/test/model"
)

var (
	soakFlag     = flag.Duration("soak", 0, "run TestSoak for this long (make soak DURATION=30m)")
	nudgeBinFlag = flag.String("nudge-bin", "", "the nudge binary TestSoak runs (make soak builds bin/nudge)")
	worldsFlag   = flag.Int("soak-worlds", 8, "sequences TestSoak plays at once, one namespace each")
	soakLogFlag  = flag.String("soak-log-level", "info", "nudge's --log-level in TestSoak (its log is kept when the test fails)")
	rateFlag     = flag.Float64("soak-rate", 20, "steps per second TestSoak plays, over every namespace; 0: as fast as nudge settles")
	warmupFlag   = flag.Duration("soak-warmup", 5*time.Minute, "how long TestSoak lets nudge grow before its growth counts")
	heapFlag     = flag.String("soak-heap", "", "a directory where TestSoak saves nudge's heap profiles at the end of the warm-up and of the run")
)

// soakWarmup is how long the soak lets nudge grow before its growth counts:
// -soak-warmup, or a third of a shorter run.
func soakWarmup(d time.Duration) time.Duration { return min(*warmupFlag, d/3) }

// maxGrowth is the growth of RSS and goroutines allowed after the warm-up.
const maxGrowth = 0.05

// The soak: the binary nudge runs for -soak while -soak-worlds sequences
// (without restarts) play on it at once, -soak-rate steps per second in
// all, each step checked against the model, so every rollout is accounted
// for. Every 10 s its RSS and
// goroutines are read from its /metrics; the mean of the last minute may not
// exceed the mean of the minute after the warm-up by more than 5 %.
func TestSoak(t *testing.T) {
	if *soakFlag == 0 {
		t.Skip("a long run: make soak DURATION=30m")
	}
	if *nudgeBinFlag == "" {
		t.Fatal("-nudge-bin is required")
	}
	namespaces := make([]string, *worldsFlag)
	for i := range namespaces {
		ns, err := suite.Plane.GenerateNamespace(t.Context(), "soak-")
		if err != nil {
			t.Fatal(err)
		}
		namespaces[i] = ns
	}
	ports, err := testbed.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
	dir, err := os.MkdirTemp("", "nudge-soak-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	log := filepath.Join(dir, "nudge.log")
	args := []string{"--kubeconfig=" + suite.Plane.Kubeconfig(), "--namespaces=" + strings.Join(namespaces, ","),
		"--system-namespace=" + namespaces[0], fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0]),
		"--health-probe-bind-address=0", "--rollout-window=0", "--log-format=json", "--log-level=" + *soakLogFlag,
		"--max-rollouts-per-hour=0"} // the storm brake, which the sequences' model does not know here
	heapURL := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", ports[1])
	if *heapFlag != "" {
		args = append(args, "--enable-pprof", fmt.Sprintf("--pprof-addr=127.0.0.1:%d", ports[1]))
	}
	stop := startBinary(t, log, args...)
	defer stop()

	ctx, cancel := context.WithTimeout(t.Context(), *soakFlag)
	defer cancel()
	start := time.Now()
	var mu sync.Mutex
	var samples []sample
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		warmed := time.After(soakWarmup(*soakFlag))
		for {
			if s, err := scrape(metricsURL); err == nil {
				s.at = time.Since(start)
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
				t.Logf("%6s RSS %.1f MiB, %d goroutines", s.at.Round(time.Second), s.rss/(1<<20), int(s.goroutines))
			}
			select {
			case <-ctx.Done():
				saveHeap(t, heapURL, "end")
				return
			case <-warmed:
				saveHeap(t, heapURL, "warm")
			case <-tick.C:
			}
		}
	}()

	base := uint64(time.Now().UnixNano())
	steps := make([]int, len(namespaces))
	rollouts := make([]int, len(namespaces))
	limit := rate.NewLimiter(rate.Limit(*rateFlag), 1)
	if *rateFlag == 0 {
		limit = rate.NewLimiter(rate.Inf, 0)
	}
	eg := errgroup.Group{}
	for i, ns := range namespaces {
		gen := model.NewGenerator(base+uint64(i), false)
		gen.Steady = true
		s, err := newSequence(t, base+uint64(i), ns, gen, nil)
		if err != nil {
			t.Fatal(err)
		}
		eg.Go(func() error {
			for limit.Wait(ctx) == nil {
				if err := s.step(ctx); err != nil {
					if ctx.Err() != nil {
						break // the step's wait was cut by the end of the soak
					}
					return err
				}
				steps[i]++
			}
			rollouts[i] = s.rollouts()
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	<-sampled
	total, rolled := 0, 0
	for i := range steps {
		total, rolled = total+steps[i], rolled+rollouts[i]
	}
	elapsed := time.Since(start)
	t.Logf("%d steps in %s (%.1f per second) over %d namespaces, %d rollouts, each as the model says",
		total, elapsed.Round(time.Second), float64(total)/elapsed.Seconds(), len(namespaces), rolled)

	warm := soakWarmup(*soakFlag)
	after := window(samples, warm, warm+time.Minute)
	last := window(samples, elapsed-time.Minute, elapsed)
	if after.n == 0 || last.n == 0 {
		t.Fatalf("too few samples (%d) to measure growth", len(samples))
	}
	for _, f := range []struct {
		name       string
		from, to   float64
		unit       string
		multiplier float64
	}{
		{"RSS", after.rss, last.rss, "MiB", 1.0 / (1 << 20)},
		{"goroutines", after.goroutines, last.goroutines, "", 1},
	} {
		growth := (f.to - f.from) / f.from
		t.Logf("%s: %.1f%s after the warm-up of %s, %.1f%s in the last minute: %+.1f %%",
			f.name, f.from*f.multiplier, f.unit, warm, f.to*f.multiplier, f.unit, 100*growth)
		if growth > maxGrowth {
			t.Errorf("%s grew by %.1f %% after the warm-up; at most %.0f %% allowed", f.name, 100*growth, 100*maxGrowth)
		}
	}
}

// saveHeap saves nudge's heap profile as -soak-heap/<name>.pb.gz, when
// -soak-heap is set; compare two with `go tool pprof -base warm.pb.gz
// bin/nudge end.pb.gz`.
func saveHeap(t *testing.T, url, name string) {
	if *heapFlag == "" {
		return
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Logf("reading the heap profile: %v", err)
		return
	}
	defer resp.Body.Close()
	f, err := os.Create(filepath.Join(*heapFlag, name+".pb.gz"))
	if err == nil {
		_, err = io.Copy(f, resp.Body)
		f.Close()
	}
	if err != nil {
		t.Logf("saving the heap profile: %v", err)
	}
}

// sample is one reading of nudge's /metrics.
type sample struct {
	at              time.Duration
	rss, goroutines float64
	n               int
}

// window returns the mean of the samples taken in [from, to).
func window(samples []sample, from, to time.Duration) sample {
	var out sample
	for _, s := range samples {
		if s.at >= from && s.at < to {
			out.rss += s.rss
			out.goroutines += s.goroutines
			out.n++
		}
	}
	if out.n > 0 {
		out.rss /= float64(out.n)
		out.goroutines /= float64(out.n)
	}
	return out
}

// scrape reads process_resident_memory_bytes and go_goroutines.
func scrape(url string) (sample, error) {
	resp, err := http.Get(url)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	var s sample
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains([]string{"process_resident_memory_bytes", "go_goroutines"}, name) {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return sample{}, fmt.Errorf("reading %s: %w", name, err)
		}
		if name == "go_goroutines" {
			s.goroutines = v
		} else {
			s.rss = v
		}
		found++
	}
	if found != 2 {
		return sample{}, fmt.Errorf("%s: process_resident_memory_bytes or go_goroutines missing", url)
	}
	return s, sc.Err()
}

// startBinary starts the nudge binary with args, its output in log, and
// returns a function that stops it (SIGTERM) and fails t unless it exits
// cleanly within 30 s.
func startBinary(t *testing.T, log string, args ...string) func() {
	t.Helper()
	out, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(*nudgeBinFlag, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", *nudgeBinFlag, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("nudge exited with %v", err)
				}
				if t.Failed() {
					t.Logf("nudge's log: %s", log)
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Errorf("nudge did not stop within 30 s of SIGTERM")
			}
			out.Close()
		})
	}
}
