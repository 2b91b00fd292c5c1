package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/rest"
)

// profiler fetches Go profiles from the controller's pprof endpoints, when
// its command line has {pprof-addr} (nudge: --pprof-bind-address), into the
// work directory: a heap profile at the end of idle, and CPU profiles of the
// start, of the latency scenario's sequential changes, of the fan-out,
// burst, steady (its stream and the 2 s after, which the phase then counts
// too) and large scenarios, and of the value-binding fan-out (with one of
// kube-apiserver beside it). Read them with `go tool pprof -top bin/nudge
// FILE`.
type profiler struct {
	base string // http://addr/debug/pprof, "" when profiling is off
	dir  string
}

// fetch saves base/path as name in the work directory; it retries for a few
// seconds while the server is not up yet and logs instead of failing.
func (p profiler) fetch(ctx context.Context, path, name string, timeout time.Duration) {
	if p.base == "" {
		return
	}
	client := &http.Client{Timeout: timeout + 10*time.Second}
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := p.save(ctx, client, p.base+path, filepath.Join(p.dir, name))
		if err == nil {
			logf("Saved profile %s", filepath.Join(p.dir, name))
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			logf("No profile %s: %v", name, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cpu starts a CPU profile of d in the background and returns a function
// that waits for it.
func (p profiler) cpu(ctx context.Context, name string, d time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.fetch(ctx, fmt.Sprintf("/profile?seconds=%d", int(d.Seconds())), name, d)
	}()
	return func() { <-done }
}

// apiserverCPU starts a CPU profile of kube-apiserver of d in the
// background, through the admin client (kube-apiserver serves
// /debug/pprof with --profiling, its default), saved as name in the work
// directory when the controller is profiled too; it returns a function that
// waits for it. Read it with `go tool pprof -top FILE`.
func (p profiler) apiserverCPU(ctx context.Context, rc rest.Interface, name string, d time.Duration) (wait func()) {
	done := make(chan struct{})
	if p.base == "" {
		close(done)
		return func() {}
	}
	go func() {
		defer close(done)
		data, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(int(d.Seconds()))).
			Timeout(d + 10*time.Second).DoRaw(ctx)
		if err == nil {
			err = os.WriteFile(filepath.Join(p.dir, name), data, 0o644)
		}
		if err != nil {
			logf("No profile %s: %v", name, err)
			return
		}
		logf("Saved profile %s", filepath.Join(p.dir, name))
	}()
	return func() { <-done }
}

func (p profiler) save(ctx context.Context, client *http.Client, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
