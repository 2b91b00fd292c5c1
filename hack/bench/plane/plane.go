// Package plane samples what the bench's control plane needs while a run
// goes (Monitor): the memory of kube-apiserver and etcd, kube-apiserver's
// live heap, etcd's database, the audit log and the disk's free space; the
// figures land in a Result.
package plane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/process"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/internal/testbed"
)

// Result is what the plane needed to hold the run's cluster: the
// memory of kube-apiserver and etcd, which bounds what one cluster holds
// on this machine, and what the run left on disk.
type Result struct {
	APIServer Process `json:"kube_apiserver"`
	Etcd      Process `json:"etcd"`
	// EtcdDBMiB is the size of etcd's database file at the end of the
	// run, EtcdDBInUseMiB the part of it in use, and EtcdQuotaMiB the
	// quota past which etcd refuses writes (its metrics
	// etcd_mvcc_db_total_size_in_bytes, …_in_use_in_bytes and
	// etcd_server_quota_backend_bytes); 0 when etcd did not say.
	EtcdDBMiB      float64 `json:"etcd_db_mib"`
	EtcdDBInUseMiB float64 `json:"etcd_db_in_use_mib"`
	EtcdQuotaMiB   float64 `json:"etcd_quota_mib"`
	// AuditLogMiB is kube-apiserver's audit log (every request, Metadata
	// level) at the end, and DiskFreeGiB the space left on the filesystem
	// of the plane's directory then.
	AuditLogMiB float64 `json:"audit_log_mib"`
	DiskFreeGiB float64 `json:"disk_free_gib"`
	// Env are GOGC and GOMEMLIMIT as the benchmark's environment set them
	// for every process it starts (the plane's and the controllers');
	// empty when unset (the Go defaults: GOGC=100, no limit).
	Env []string `json:"env,omitempty"`
}

// Process is the memory of one process of the plane, in MiB.
type Process struct {
	PID int `json:"pid"`
	// PopulatedRSSMiB and PopulatedAnonMiB are its RSS and RssAnon once
	// the population was created, PopulatePeakMiB its peak RSS (VmHWM)
	// until then.
	PopulatedRSSMiB  float64 `json:"populated_rss_mib"`
	PopulatedAnonMiB float64 `json:"populated_anon_mib"`
	PopulatePeakMiB  float64 `json:"populate_peak_mib"`
	// StartPeakMiB is the largest RSS sampled (every second) while the
	// shards started, from the first one's start until all were quiet;
	// Idle its memory over the shards' memory window; nil without shards.
	StartPeakMiB *float64              `json:"start_peak_mib,omitempty"`
	Idle         *process.MemoryWindow `json:"idle,omitempty"`
	// PeakRSSMiB is its peak RSS since its start (VmHWM), at the end of
	// the run.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	// kube-apiserver's live heap (go_gc_heap_live_bytes: what its last
	// garbage collection marked, the rest of its RSS being the
	// collector's headroom and the runtime's): PopulatedLiveHeapMiB once
	// the population was created, PeakLiveHeapMiB the largest read every
	// 30 s, LiveHeapMiB after a collection forced at the end of the
	// shards' memory window. Nil for etcd, and when not read.
	PopulatedLiveHeapMiB *float64 `json:"populated_live_heap_mib,omitempty"`
	PeakLiveHeapMiB      *float64 `json:"peak_live_heap_mib,omitempty"`
	LiveHeapMiB          *float64 `json:"live_heap_mib,omitempty"`
}

// Proc is a process the plane started (testbed.Plane.PID).
type Proc struct {
	Name string // one of ProcNames
	PID  int
}

// Stats reads the process's memory and CPU from /proc.
func (p Proc) Stats() (process.Stats, error) {
	s, err := process.ReadStats(p.PID)
	if err != nil {
		return s, fmt.Errorf("reading %s's memory: %w", p.Name, err)
	}
	return s, nil
}

// ProcNames are the processes of an apiserver-mode plane, in the
// order of Monitor.Procs.
var ProcNames = []string{"kube-apiserver", "etcd"}

// Monitor samples the memory of the plane's processes every second,
// from its start until Stop, and logs it with the audit log's size and the
// disk's free space every LogEvery: the figures a run needs when
// kube-apiserver or etcd runs out of memory, or the disk of space.
type Monitor struct {
	// Procs are the plane's processes, in the order of ProcNames; set by
	// StartMonitor and only read after.
	Procs []Proc

	plane *testbed.Plane
	api   rest.Interface // the admin's, for kube-apiserver's live heap
	logf  func(format string, args ...any)

	mu      sync.Mutex
	samples [][]process.Stats // of each of Procs, in time order
	err     error             // the first failed read (a process gone)
	// live and peakLive are kube-apiserver's live heap at its last
	// collection when last logged, and the largest logged, in bytes.
	live, peakLive int64

	stop, done chan struct{}
}

// LogEvery is how often the plane monitor logs.
const LogEvery = 30 * time.Second

// StartMonitor starts sampling the plane's processes; api is the
// admin's client, through which kube-apiserver's live heap is read each time
// the monitor logs with logf.
func StartMonitor(plane *testbed.Plane, api rest.Interface, logf func(format string, args ...any)) (*Monitor, error) {
	m := &Monitor{plane: plane, api: api, logf: logf, samples: make([][]process.Stats, len(ProcNames)), stop: make(chan struct{}), done: make(chan struct{})}
	for _, name := range ProcNames {
		pid := plane.PID(name)
		if pid == 0 {
			return nil, fmt.Errorf("the plane runs no %s", name)
		}
		m.Procs = append(m.Procs, Proc{Name: name, PID: pid})
	}
	go m.run()
	return m, nil
}

func (m *Monitor) run() {
	defer close(m.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastLog := time.Now()
	for {
		m.sample()
		if time.Since(lastLog) >= LogEvery {
			lastLog = time.Now()
			m.readLive()
			m.logf("Plane: %s", m)
		}
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
	}
}

func (m *Monitor) sample() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, p := range m.Procs {
		s, err := p.Stats()
		if err != nil {
			if m.err == nil {
				m.err = err
				m.logf("Plane: %v", err)
			}
			continue
		}
		m.samples[i] = append(m.samples[i], s)
	}
}

// readLive reads kube-apiserver's live heap at its last collection, and
// keeps the largest.
func (m *Monitor) readLive() {
	live, err := APIServerLiveHeap(context.Background(), m.api, false)
	if err != nil {
		m.logf("Plane: %v", err)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live, m.peakLive = live, max(m.peakLive, live)
}

// String is each process's last RSS and its peak, kube-apiserver's live
// heap, the audit log's size and the disk's free space.
func (m *Monitor) String() string {
	m.mu.Lock()
	var parts []string
	for i, p := range m.Procs {
		if n := len(m.samples[i]); n > 0 {
			s := m.samples[i][n-1]
			live := ""
			if p.Name == "kube-apiserver" && m.live > 0 {
				live = fmt.Sprintf(", live heap %.0f", stats.MiB(m.live))
			}
			parts = append(parts, fmt.Sprintf("%s RSS %.0f MiB (anonymous %.0f%s, peak %.0f)", p.Name, stats.MiB(s.RSSBytes), stats.MiB(s.AnonBytes), live, stats.MiB(s.PeakBytes)))
		}
	}
	m.mu.Unlock()
	audit, free := m.disk()
	return strings.Join(parts, ", ") + fmt.Sprintf("; audit log %.0f MiB, %.1f GiB free on disk", audit, free)
}

// disk returns the audit log's size in MiB and the free space of the
// plane's filesystem in GiB; 0 for what it cannot read.
func (m *Monitor) disk() (auditMiB, freeGiB float64) {
	if fi, err := os.Stat(m.plane.AuditLogPath()); err == nil {
		auditMiB = stats.MiB(fi.Size())
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m.plane.Dir(), &st); err == nil {
		freeGiB = stats.Round(float64(st.Bavail)*float64(st.Bsize)/(1<<30), 1)
	}
	return auditMiB, freeGiB
}

// Peak returns the largest RSS of process i sampled at or after from and
// before to, in MiB; 0 when none was.
func (m *Monitor) Peak(i int, from, to time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var top int64
	for _, s := range m.samples[i] {
		if !s.At.Before(from) && s.At.Before(to) {
			top = max(top, s.RSSBytes)
		}
	}
	return stats.MiB(top)
}

// Populated sets each process's figures once the population is created.
func (m *Monitor) Populated(res *Result) error {
	for _, p := range m.Procs {
		s, err := p.Stats()
		if err != nil {
			return err
		}
		f := res.Process(p.Name)
		f.PID, f.PopulatedRSSMiB, f.PopulatedAnonMiB, f.PopulatePeakMiB = p.PID, stats.MiB(s.RSSBytes), stats.MiB(s.AnonBytes), stats.MiB(s.PeakBytes)
	}
	m.readLive()
	if m.live > 0 {
		res.APIServer.PopulatedLiveHeapMiB = ptr.To(stats.MiB(m.live))
	}
	m.logf("Populated: %s", m)
	return nil
}

// End stops the monitor and sets the figures of the run's end, those it
// can still read (a process may have died: the log says so): each
// process's peak RSS, etcd's database and quota, the audit log and the
// disk.
func (m *Monitor) End(ctx context.Context, res *Result) {
	m.Stop()
	for _, p := range m.Procs {
		s, err := p.Stats()
		if err != nil {
			m.logf("Plane: %v", err)
			continue
		}
		res.Process(p.Name).PeakRSSMiB = stats.MiB(s.PeakBytes)
	}
	if m.peakLive > 0 {
		res.APIServer.PeakLiveHeapMiB = ptr.To(stats.MiB(m.peakLive))
	}
	res.AuditLogMiB, res.DiskFreeGiB = m.disk()
	metrics, err := m.etcdMetrics(ctx)
	if err != nil {
		m.logf("Plane: etcd's metrics: %v", err)
	}
	res.EtcdDBMiB = stats.MiB(int64(metrics["etcd_mvcc_db_total_size_in_bytes"]))
	res.EtcdDBInUseMiB = stats.MiB(int64(metrics["etcd_mvcc_db_total_size_in_use_in_bytes"]))
	res.EtcdQuotaMiB = stats.MiB(int64(metrics["etcd_server_quota_backend_bytes"]))
	m.logf("Plane at the end: %s", m)
}

// Stop stops the sampling; it is safe to call more than once.
func (m *Monitor) Stop() {
	if m == nil {
		return
	}
	select {
	case <-m.stop:
	default:
		close(m.stop)
	}
	<-m.done
}

// etcdMetrics returns etcd's unlabelled metrics, from its /metrics.
func (m *Monitor) etcdMetrics(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.plane.EtcdURL()+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return promValues(resp.Body)
}

// APIServerLiveHeap returns kube-apiserver's live heap, in bytes: the
// heap its last garbage collection marked (go_gc_heap_live_bytes of its
// /metrics), after forcing one with force (through
// /debug/pprof/heap?gc=1), through client (the admin's: /metrics and
// /debug/pprof are served to system:masters).
func APIServerLiveHeap(ctx context.Context, client rest.Interface, force bool) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if force {
		if _, err := client.Get().AbsPath("/debug/pprof/heap").Param("gc", "1").DoRaw(ctx); err != nil {
			return 0, fmt.Errorf("forcing a collection in kube-apiserver: %w", err)
		}
	}
	page, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("kube-apiserver's metrics: %w", err)
	}
	metrics, err := promValues(bytes.NewReader(page))
	if err != nil {
		return 0, fmt.Errorf("kube-apiserver's metrics: %w", err)
	}
	live, ok := metrics["go_gc_heap_live_bytes"]
	if !ok {
		return 0, errors.New("kube-apiserver's metrics have no go_gc_heap_live_bytes")
	}
	return int64(live), nil
}

// GoEnv returns GOGC and GOMEMLIMIT as "NAME=value" when environ sets
// them.
func GoEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=") {
			out = append(out, kv)
		}
	}
	return out
}

// promValues returns the samples without labels of a metrics page in the
// Prometheus text format
// (https://prometheus.io/docs/instrumenting/exposition_formats/), by
// name; comments and labelled samples are skipped, and a sample whose
// value is not a number is an error.
func promValues(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || strings.ContainsRune(line, '{') {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return nil, fmt.Errorf("metric line %q: no value", line)
		}
		v, err := strconv.ParseFloat(fields[1], 64)
		if err != nil {
			return nil, fmt.Errorf("metric line %q: %w", line, err)
		}
		out[fields[0]] = v
	}
	return out, sc.Err()
}

// Process returns the figures of the process named name, one of
// ProcNames.
func (r *Result) Process(name string) *Process {
	if name == "etcd" {
		return &r.Etcd
	}
	return &r.APIServer
}
