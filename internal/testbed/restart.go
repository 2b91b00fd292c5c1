package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"time"
)

// RestartAPIServer kills kube-apiserver (SIGKILL: requests in flight are cut,
// as in a crash) and starts it again on the same port, etcd and credentials,
// so clients built from Config or Kubeconfig reconnect without change. It
// returns once /readyz and /livez answer ok again, or an error if the new
// kube-apiserver exits or is not ready within 90 seconds of ctx.
//
// Watches through the old process end; one resumed from a resourceVersion
// older than the new process's watch cache fails with 410 Gone, so
// informers list again.
func (p *Plane) RestartAPIServer(ctx context.Context) error {
	p.mu.Lock()
	old := p.component("kube-apiserver")
	p.mu.Unlock()
	if old == nil {
		return errors.New("no kube-apiserver to restart")
	}
	if err := old.kill(stopGrace); err != nil {
		return err
	}
	proc, err := startProcess("kube-apiserver", filepath.Join(p.binDir, "kube-apiserver"), p.apiserverArgs(), old.logPath)
	if err != nil {
		return err
	}
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return errors.Join(errStopped, proc.stop(stopGrace))
	}
	for i, c := range p.procs {
		if c == old {
			p.procs[i] = proc
		}
	}
	p.mu.Unlock()
	if err := p.apiserverReady(ctx, proc); err != nil {
		return fmt.Errorf("restarting kube-apiserver: %w", err)
	}
	p.logf("Restarted kube-apiserver on %s", p.host)
	return nil
}

// PID returns the process ID of the plane's component name ("etcd",
// "kube-apiserver"; in cluster mode also "kube-controller-manager",
// "kube-scheduler" and "kwok"), 0 when it has none: for a caller that reads
// a component's memory or CPU from /proc. After RestartAPIServer it is the
// new kube-apiserver's.
func (p *Plane) PID(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c := p.component(name); c != nil && c.cmd.Process != nil {
		return c.cmd.Process.Pid
	}
	return 0
}

// component returns the running process of the component name, nil if there
// is none. The caller holds p.mu.
func (p *Plane) component(name string) *process {
	for _, c := range p.procs {
		if c.name == name {
			return c
		}
	}
	return nil
}

// EtcdURL returns the client URL of the plane's etcd
// (http://127.0.0.1:port), which also serves etcd's JSON gateway to its gRPC
// API (https://etcd.io/docs/v3.6/dev-guide/api_grpc_gateway/): a test can
// watch the keys kube-apiserver stores, /registry/<resource>/<namespace>/<name>,
// whatever happens to kube-apiserver.
func (p *Plane) EtcdURL() string { return p.etcdURL }

// EtcdRevision returns etcd's current revision: the resourceVersion of the
// plane's last write.
func (p *Plane) EtcdRevision(ctx context.Context) (int64, error) {
	var out struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	// Any key will do: every response carries the store's revision.
	if err := p.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": []byte("/"), "count_only": true}, &out); err != nil {
		return 0, err
	}
	rev, err := strconv.ParseInt(out.Header.Revision, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("etcd revision %q: %w", out.Header.Revision, err)
	}
	return rev, nil
}

// CompactEtcd compacts etcd's history up to its current revision, as
// kube-apiserver does every 5 minutes, and returns that revision: a watch or
// list at an older resourceVersion that etcd serves then fails with 410
// Gone. It returns once the compaction is done on disk.
func (p *Plane) CompactEtcd(ctx context.Context) (int64, error) {
	rev, err := p.EtcdRevision(ctx)
	if err != nil {
		return 0, err
	}
	req := map[string]any{"revision": strconv.FormatInt(rev, 10), "physical": true}
	if err := p.etcdCall(ctx, "/v3/kv/compaction", req, nil); err != nil {
		return 0, err
	}
	return rev, nil
}

// etcdCall POSTs req as JSON to path of etcd's JSON gateway and decodes the
// answer into out (unless nil).
func (p *Plane) etcdCall(ctx context.Context, path string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, p.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	return nil
}
