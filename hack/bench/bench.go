package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/hack/bench/audit"
	"nudge.dev/nudge/hack/bench/cgroup"
	"nudge.dev/nudge/hack/bench/plane"
	"nudge.dev/nudge/hack/bench/process"
	"nudge.dev/nudge/hack/bench/results"
	"nudge.dev/nudge/hack/bench/stats"
	"nudge.dev/nudge/hack/bench/watch"
	"nudge.dev/nudge/internal/testbed"
)

// adminUser is the user name of the testbed's admin identity, which the
// benchmark uses.
const adminUser = "testbed:admin"

// stopGrace is how long the controller has to exit after SIGTERM.
const stopGrace = 10 * time.Second

// bench is one run in progress.
type bench struct {
	cfg    Config
	res    *results.Run
	layout Layout
	alloc  allocator
	cs     kubernetes.Interface
	// creators is the admin client populate creates the population
	// through, in protobuf: kube-apiserver decodes a Secret's bytes as
	// they are, not from base64 in JSON.
	creators kubernetes.Interface
	dyn      dynamic.Interface
	// watchDyn is the client of the benchmark's watches of custom
	// resources, on connections of their own (see connect).
	watchDyn dynamic.Interface
	changer  *changer
	watcher  *watch.Watcher
	audit    *audit.Log
	// adminWatches are the watches of the benchmark's own identity: a
	// restarted watch of Deployments delays what the benchmark sees.
	adminWatches *audit.Log
	terminated   map[string]int // apiserver_terminated_watchers_total by resource, at the phase's start
	// harbors and statuses watch the bindings scenario's Harbors and
	// ValueBindings, once it has started.
	harbors  *targetWatcher
	statuses *statusWatcher

	kubeconfig string // the controller's
	// With -shards: the API server's address, the controller's identity,
	// and the counting proxy the first controller talks through.
	apiHost    string
	userConfig *rest.Config
	proxy      *countingProxy
	// idleReceived is what the first controller received until the end of
	// its idle phase.
	idleReceived int64
	workDir      string
	ctrl         *process.Controller
	ctrlCmd      string  // ctrl's command line (the floor scenario runs two)
	cpuOffset    float64 // CPU seconds of controller processes already stopped
	cgroups      int     // memory cgroups made so far (-cgroup)
	// monitor samples the plane's processes from the population's start.
	monitor *plane.Monitor

	phases   []results.Phase
	phaseCPU float64 // total controller CPU when the current phase began
}

// run starts a plane, creates the population, runs the controller through
// the scenarios and returns what it measured. The plane and the controller
// are stopped before it returns.
func run(ctx context.Context, cfg Config, command string) (res *results.Run, err error) {
	res = &results.Run{
		Controller:    cfg.ControllerName,
		ControllerCmd: cfg.ControllerCmd,
		Command:       command,
		Binary:        binaryID(cfg.ControllerCmd),
		Revision:      revision(),
		Started:       time.Now(),
		Machine:       results.ThisMachine(),
		Scale: results.Scale{Namespaces: cfg.Namespaces, Secrets: cfg.Secrets, ConfigMaps: cfg.ConfigMaps,
			Deployments: cfg.Deployments, FanOut: cfg.FanOut, SourceBytes: cfg.SourceBytes, Keys: cfg.Keys, ScaleRun: cfg.ScaleRun},
	}
	b := &bench{cfg: cfg, res: res, layout: newLayout(cfg), alloc: allocator{total: cfg.Deployments}}
	if b.workDir = cfg.WorkDir; b.workDir == "" {
		if b.workDir, err = os.MkdirTemp("", "nudge-bench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(b.workDir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if cfg.Keep || err != nil || strings.Contains(cfg.ControllerCmd, "{pprof-addr}") {
			logf("Kept the controller's log and kubeconfig in %s", b.workDir)
		} else {
			_ = os.RemoveAll(b.workDir)
		}
	}()

	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	opts := testbed.Options{Mode: testbed.APIServer, AuditLog: true, BinDir: cfg.BinDir, Logf: logf}
	if cfg.Shards > 0 && cfg.ShardGate {
		opts.FeatureGates = []string{"ShardedListAndWatch=true"}
	}
	tb, err := testbed.Start(startCtx, opts)
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() {
		if b.ctrl != nil {
			err = errors.Join(err, b.ctrl.Stop(stopGrace))
		}
		b.proxy.Close()
		if b.monitor != nil {
			b.monitor.End(ctx, res.Plane)
		}
		err = errors.Join(err, tb.Stop(cfg.Keep || err != nil))
	}()
	if err := b.connect(ctx, tb); err != nil {
		return nil, err
	}
	if b.monitor, err = plane.StartMonitor(tb, b.cs.CoreV1().RESTClient(), logf); err != nil {
		return nil, err
	}
	res.Plane = &plane.Result{Env: plane.GoEnv(os.Environ())}
	data := newContent(cfg.Keys, cfg.SourceBytes)
	b.changer = &changer{cs: b.cs, data: data}
	if res.Population, err = populate(ctx, b.creators, cfg, b.layout, data); err != nil {
		return res, err
	}
	if err := b.monitor.Populated(res.Plane); err != nil {
		return res, err
	}
	if cfg.Has("bindings") {
		if err := installCRDs(ctx, b.dyn, bindingCRDs, harborGVR, bindingGVR); err != nil {
			return nil, err
		}
	}
	if cfg.Has("kinds") && slices.Contains(cfg.Kinds, rolloutKind) {
		if err := installCRDs(ctx, b.dyn, []string{rolloutCRDPath}, rolloutGVR); err != nil {
			return nil, err
		}
	}

	if !cfg.ShardsOnly {
		if err := b.single(ctx); err != nil {
			return res, err
		}
	}
	if cfg.Shards > 0 {
		if err := b.shards(ctx); err != nil {
			return res, fmt.Errorf("scenario shards: %w", err)
		}
	}
	if err := b.endPhase(); err != nil {
		return res, err
	}
	if n := b.layout.Shared(); n > 1 {
		res.Notes = append(res.Notes, fmt.Sprintf("Sources are shared by up to %d Deployments (fewer than 2 Secrets and 2 ConfigMaps per Deployment in a namespace): a change rolls each of them, and the scenarios expect it.", n))
	}
	if b.alloc.wrapped {
		res.Notes = append(res.Notes, "The scenarios needed more Deployments than the population has: some Deployments changed in two scenarios.")
	}
	res.Machine.LoadEnd = results.LoadAvg()
	res.Seconds = stats.Seconds(time.Since(res.Started))
	res.Targets = results.Targets(res)
	return res, nil
}

// single runs the controller under test through sync, idle and the
// scenarios, then the controllers of -restart-cmd.
func (b *bench) single(ctx context.Context) error {
	cfg, res := b.cfg, b.res
	if err := b.sync(ctx); err != nil {
		return err
	}
	if err := b.idle(ctx); err != nil {
		return err
	}
	b.idleReceived = b.proxy.Received()
	scenarios := map[string]func(context.Context) error{
		"latency": b.latency, "fanout": b.fanout, "burst": b.burst,
		"noop": b.noop, "coalesce": b.coalesce, "downtime": b.downtime,
		"bindings": b.bindings, "floor": b.versus, "churn": b.churn,
		"large": b.large, "kinds": b.kinds,
		"steady": func(ctx context.Context) (err error) {
			b.res.Steady, err = b.steady(ctx, false)
			return err
		},
		"restart": func(ctx context.Context) (err error) {
			b.res.Restart, err = b.steady(ctx, true)
			return err
		},
		"random": func(ctx context.Context) (err error) {
			b.res.Random, err = b.random(ctx, false)
			return err
		},
		"random-restart": func(ctx context.Context) (err error) {
			b.res.RandomRestart, err = b.random(ctx, true)
			return err
		},
	}
	for _, name := range allScenarios {
		if !cfg.Has(name) {
			continue
		}
		if err := scenarios[name](ctx); err != nil {
			return fmt.Errorf("scenario %s: %w", name, err)
		}
		if err := b.ctrl.Exited(); err != nil {
			return fmt.Errorf("after scenario %s: %w", name, err)
		}
	}
	if res.Process == nil {
		s, err := b.ctrl.Stats()
		if err != nil {
			return err
		}
		res.Process = processResult(s)
	}
	if err := b.restarts(ctx); err != nil {
		return fmt.Errorf("restarts: %w", err)
	}
	return nil
}

// connect builds the admin client, writes the controller's kubeconfig, opens
// the audit log and starts the Deployment watch.
func (b *bench) connect(ctx context.Context, tb *testbed.Plane) error {
	admin := tb.Config()
	admin.QPS, admin.Burst = 1e5, 1e5 // the creators must never wait on the client
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	b.cs = cs
	proto := rest.CopyConfig(admin)
	proto.ContentType = runtime.ContentTypeProtobuf
	proto.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if b.creators, err = kubernetes.NewForConfig(proto); err != nil {
		return err
	}
	if b.dyn, err = dynamic.NewForConfig(admin); err != nil {
		return err
	}
	user, err := tb.UserConfig(b.cfg.ControllerUser, b.cfg.ControllerGroup)
	if err != nil {
		return err
	}
	b.kubeconfig = filepath.Join(b.workDir, "controller.kubeconfig")
	b.apiHost, b.userConfig = admin.Host, user
	if b.cfg.Shards > 0 {
		// The first controller's bytes are counted as the shards' are.
		if b.proxy, err = newCountingProxy(admin.Host); err != nil {
			return err
		}
		user = rest.CopyConfig(user)
		user.Host = "https://" + b.proxy.Addr()
	}
	if err := writeKubeconfig(b.kubeconfig, b.cfg.ControllerUser, user); err != nil {
		return err
	}
	b.audit = audit.NewLog(tb.AuditLogPath(), b.cfg.ControllerUser, "")
	b.adminWatches = audit.NewLog(tb.AuditLogPath(), adminUser, "watch")
	// The watches get connections of their own: on the writers' HTTP/2
	// connection, kube-apiserver closes a watch that falls behind a burst of
	// concurrent writes (the burst's patches, the apply floor's applies).
	watches := rest.CopyConfig(admin)
	watches.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if b.watchDyn, err = dynamic.NewForConfig(watches); err != nil {
		return err
	}
	// The Deployment watch in protobuf: kube-apiserver then encodes each
	// event once for the benchmark and the controllers alike, not a JSON
	// copy for the benchmark alone.
	protoWatches := rest.CopyConfig(watches)
	protoWatches.ContentType = runtime.ContentTypeProtobuf
	protoWatches.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	wcs, err := kubernetes.NewForConfig(protoWatches)
	if err != nil {
		return err
	}
	b.watcher, err = watch.Start(ctx, wcs, b.cfg.BaselineAnnotation)
	return err
}

// prof returns the profiler of the running controller.
func (b *bench) prof() profiler {
	return profiler{base: b.ctrl.PprofURL(), dir: b.workDir}
}

// startController starts the controller that ran last (the floor, during
// the floor scenario's floor turns), or the controller under test when
// none has run yet.
func (b *bench) startController() error {
	cmd := b.ctrlCmd
	if cmd == "" {
		cmd = b.cfg.ControllerCmd
	}
	return b.start(cmd)
}

// start starts cmd, the controller under test or the floor, logging to
// controller.log or floor.log in the work directory. With -cgroup, the
// controller under test runs in a memory cgroup of its own, its binary
// first dropped from the page cache (see cgroup.DropPageCache).
func (b *bench) start(cmd string) error {
	log := "controller.log"
	if cmd != b.cfg.ControllerCmd {
		log = "floor.log"
	}
	return b.startLogged(cmd, log, cmd == b.cfg.ControllerCmd)
}

// startLogged starts cmd logging to log in the work directory; a
// controller under test in a memory cgroup of its own with -cgroup.
func (b *bench) startLogged(cmd, log string, underTest bool) error {
	var group *cgroup.Group
	if b.cfg.Cgroup != "" && underTest {
		if bin := strings.Fields(cmd)[0]; strings.Contains(bin, "/") {
			if err := cgroup.DropPageCache(bin); err != nil {
				return err
			}
		}
		b.cgroups++
		var err error
		if group, err = cgroup.New(b.cfg.Cgroup, fmt.Sprintf("nudge-bench-%d-%d", os.Getpid(), b.cgroups)); err != nil {
			return err
		}
	}
	c, err := process.Start(cmd, b.kubeconfig, filepath.Join(b.workDir, log), group)
	if err != nil {
		return errors.Join(err, group.RemoveIfAny())
	}
	b.ctrl, b.ctrlCmd = c, cmd
	return nil
}

// stopController stops the controller, first adding its CPU time to the
// offset so that phases keep counting the controller's total.
func (b *bench) stopController() (process.Stats, error) {
	s, err := b.ctrl.Stats()
	if err != nil {
		return s, err
	}
	b.cpuOffset += s.CPUSeconds
	return s, b.ctrl.Stop(stopGrace)
}

// cpu returns the CPU seconds of every controller process so far; the
// current one's only while it runs.
func (b *bench) cpu() float64 {
	if b.ctrl == nil || b.ctrl.Exited() != nil {
		return b.cpuOffset
	}
	s, err := b.ctrl.Stats()
	if err != nil {
		return b.cpuOffset
	}
	return b.cpuOffset + s.CPUSeconds
}

// phase ends the current phase and begins one named name.
func (b *bench) phase(name string) error {
	if err := b.endPhase(); err != nil {
		return err
	}
	logf("Phase %s (load %s)", name, results.LoadAvg())
	b.phases = append(b.phases, results.Phase{Name: name, From: time.Now(), Load: results.LoadAvg()})
	b.phaseCPU = b.cpu()
	b.terminated = terminatedWatchers(context.Background(), b.cs)
	return nil
}

// endPhase closes the current phase, if any, with the controller's
// requests, CPU and the rollouts seen in it.
func (b *bench) endPhase() error {
	if len(b.phases) == 0 || !b.phases[len(b.phases)-1].To.IsZero() {
		return nil
	}
	p := &b.phases[len(b.phases)-1]
	p.To = time.Now()
	p.CPUSeconds = stats.Round(b.cpu()-b.phaseCPU, 2)
	if err := b.audit.Read(); err != nil {
		return err
	}
	p.Requests = audit.Count(b.audit.Between(p.From, p.To))
	if err := b.adminWatches.Read(); err != nil {
		return err
	}
	p.BenchWatchRestarts = audit.Count(b.adminWatches.Between(p.From, p.To))["watch deployments"]
	for resource, n := range terminatedWatchers(context.Background(), b.cs) {
		if d := n - b.terminated[resource]; d > 0 {
			if p.TerminatedWatchers == nil {
				p.TerminatedWatchers = audit.Counts{}
			}
			p.TerminatedWatchers[resource] = d
		}
	}
	p.Rollouts = len(b.rollouts(p.From, p.To))
	if p.Rollouts > 0 {
		writes := 0
		for _, what := range workloadResources {
			writes += p.Requests.Of(what, "patch", "update")
		}
		p.WritesPerRollout = stats.Round(float64(writes)/float64(p.Rollouts), 2)
		p.EventsPerRollout = stats.Round(float64(p.Requests.Of("events", "create", "patch"))/float64(p.Rollouts), 2)
	}
	b.res.Phases = append(b.res.Phases[:0], b.phases...)
	return nil
}

// rollouts returns the rollouts seen after from and not after to, but the
// probe's.
func (b *bench) rollouts(from, to time.Time) []watch.Rollout {
	var out []watch.Rollout
	for _, r := range b.watcher.RolloutsBetween(from, to) {
		if r.Key != probeNamespace+"/"+probeName {
			out = append(out, r)
		}
	}
	return out
}

// writeKubeconfig writes a kubeconfig at path for cfg's client certificate.
func writeKubeconfig(path, user string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["bench"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["bench"] = &clientcmdapi.Context{Cluster: "bench", AuthInfo: user}
	kc.CurrentContext = "bench"
	return clientcmd.WriteToFile(*kc, path)
}

func processResult(s process.Stats) *results.Process {
	return &results.Process{RSSMiB: stats.MiB(s.RSSBytes), PeakRSSMiB: stats.MiB(s.PeakBytes), CPUSeconds: stats.Round(s.CPUSeconds, 2), Threads: s.Threads}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", clock(time.Now()), fmt.Sprintf(format, args...))
}

// clock formats t as the log lines' time of day, to the millisecond.
func clock(t time.Time) string { return t.Format("15:04:05.000") }

func ptrSeconds(d time.Duration) *float64 { return ptr.To(stats.Seconds(d)) }

// terminatedWatchers returns kube-apiserver's apiserver_terminated_watchers_total
// by resource: watches it closed because their client did not keep up.
func terminatedWatchers(ctx context.Context, cs kubernetes.Interface) map[string]int {
	out := map[string]int{}
	data, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "apiserver_terminated_watchers_total{") {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimPrefix(line, "apiserver_terminated_watchers_total{"), "} ")
		resource := ""
		for _, l := range strings.Split(labels, ",") {
			if v, ok := strings.CutPrefix(l, "resource="); ok {
				resource = strings.Trim(v, `"`)
			}
		}
		n, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
		out[resource] += int(n)
	}
	return out
}
