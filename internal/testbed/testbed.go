package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Mode says which components a plane runs.
type Mode int

const (
	// APIServer runs etcd and kube-apiserver: objects are stored and
	// validated, but no controller acts on them and no pod ever runs.
	APIServer Mode = iota
	// Cluster adds kube-controller-manager, kube-scheduler and kwok with
	// Options.Nodes fake nodes: Deployments, StatefulSets and DaemonSets
	// really create, schedule, ready and replace pods (without containers).
	Cluster
)

// String returns "apiserver" or "cluster".
func (m Mode) String() string {
	switch m {
	case APIServer:
		return "apiserver"
	case Cluster:
		return "cluster"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// Options configures a plane. The zero value is a valid apiserver-mode plane.
type Options struct {
	// Mode says which components run.
	Mode Mode
	// Nodes is the number of kwok fake nodes in cluster mode; 0 or less
	// means 2.
	// Ignored in apiserver mode.
	Nodes int
	// BinDir holds the control-plane binaries. Empty means $NUDGE_KUBE_BINS,
	// or, when that is unset, os.UserCacheDir()/nudge/kube-bins/v1.36.3
	// (where `make kube-bins` builds them).
	BinDir string
	// AuditLog makes kube-apiserver write every request as a JSON audit
	// event at Metadata level (stage ResponseComplete, plus ResponseStarted
	// for watches) to AuditLogPath.
	AuditLog bool
	// Logf receives the plane's own messages: where its logs are, what
	// failed. Nil means standard error.
	Logf func(format string, args ...any)
	// DisableWatchCache runs kube-apiserver with --watch-cache=false: every
	// list and watch is served by etcd, so a watch that resumes from a
	// revision etcd has compacted (CompactEtcd) fails with 410 Gone and its
	// informer lists again, as it would after a long disconnection.
	DisableWatchCache bool
	// FeatureGates are kube-apiserver's --feature-gates, "Name=true"
	// each (ShardedListAndWatch=true, say); none means the release's
	// defaults.
	FeatureGates []string
	// CallerHandlesSignals stops Start from handling SIGINT and SIGTERM
	// (see Start): the caller stops the plane itself, for example after
	// stopping what it runs against the plane. A signal during Start should
	// then cancel Start's context.
	CallerHandlesSignals bool
}

// Plane is a running local control plane. Stop it when done.
type Plane struct {
	mode     Mode
	binDir   string
	dir      string
	logf     func(format string, args ...any)
	host     string // https://127.0.0.1:port
	serverCA *authority
	clientCA *authority
	admin    *rest.Config
	client   kubernetes.Interface // admin
	kubecfg  string
	audit    string

	// What RestartAPIServer needs to start kube-apiserver again as before.
	etcd          *process
	etcdURL       string
	apiserverPort int
	watchCacheOff bool
	featureGates  []string

	mu      sync.Mutex
	procs   []*process // in start order
	stopped bool
	stopErr error
	signals chan os.Signal
	quit    chan struct{} // closed by Stop
}

// Start starts a plane and returns once it serves: in apiserver mode, once
// kube-apiserver's /readyz and /livez answer ok; in cluster mode, also once
// every fake node is Ready and untainted and the default namespace has its
// default ServiceAccount, so a pod can be created at once.
//
// ctx bounds the start only; the plane runs until Stop. Unless
// opts.CallerHandlesSignals, Start also stops the plane when the process
// receives SIGINT or SIGTERM, then re-raises the signal. Every component listens on 127.0.0.1 alone, on ports free at the
// time, and keeps its state and log in a new temporary directory.
//
// Start returns an error wrapping ErrMissingBinary when a binary is missing.
// When a component fails to start, Start stops the others, keeps the
// directory, and returns an error with the tail of the component's log.
func Start(ctx context.Context, opts Options) (*Plane, error) {
	begin := time.Now()
	binDir, err := resolveBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if err := checkBinaries(binDir, opts.Mode); err != nil {
		return nil, err
	}
	if opts.Mode != APIServer && opts.Mode != Cluster {
		return nil, fmt.Errorf("unknown mode %v", opts.Mode)
	}
	if opts.Mode == Cluster && opts.Nodes <= 0 {
		opts.Nodes = 2
	}
	dir, err := os.MkdirTemp("", "nudge-testbed-")
	if err != nil {
		return nil, fmt.Errorf("creating state directory: %w", err)
	}
	p := &Plane{
		mode:    opts.Mode,
		binDir:  binDir,
		dir:     dir,
		logf:    opts.Logf,
		signals: make(chan os.Signal, 1),
		quit:    make(chan struct{}),
	}
	if p.logf == nil {
		p.logf = func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, "testbed: "+format+"\n", args...)
		}
	}
	if !opts.CallerHandlesSignals {
		signal.Notify(p.signals, syscall.SIGINT, syscall.SIGTERM)
		go p.stopOnSignal()
	}

	phases, err := p.start(ctx, opts)
	if err != nil {
		if stopErr := p.Stop(true); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, fmt.Errorf("starting %s plane (state and logs kept in %s): %w", opts.Mode, dir, err)
	}
	p.logf("Started %s plane in %v (%s): kubeconfig %s",
		opts.Mode, time.Since(begin).Round(time.Millisecond), phases, p.kubecfg)
	return p, nil
}

// start starts the components of opts.Mode and returns how long each phase
// took, for the log.
func (p *Plane) start(ctx context.Context, opts Options) (string, error) {
	var phases []string
	last := time.Now()
	phase := func(name string) {
		now := time.Now()
		phases = append(phases, name+" "+now.Sub(last).Round(time.Millisecond).String())
		last = now
	}
	if err := p.writeCredentials(); err != nil {
		return "", err
	}
	phase("credentials")
	etcd, etcdURL, err := p.startEtcd(ctx)
	if err != nil {
		return "", err
	}
	phase("etcd")
	if err := p.startAPIServer(ctx, etcd, etcdURL, opts); err != nil {
		return "", err
	}
	phase("kube-apiserver")
	if opts.Mode == Cluster {
		if err := p.startCluster(ctx, opts.Nodes); err != nil {
			return "", err
		}
		phase("controllers and nodes")
	}
	return strings.Join(phases, ", "), nil
}

// Config returns a new copy of the admin identity's client configuration: a
// client certificate in group system:masters, which RBAC never restricts.
// QPS and Burst are raised so that client-side throttling never shapes a
// test's timing.
func (p *Plane) Config() *rest.Config { return rest.CopyConfig(p.admin) }

// Kubeconfig returns the path of a kubeconfig file for the admin identity,
// for kubectl and for programs that take --kubeconfig.
func (p *Plane) Kubeconfig() string { return p.kubecfg }

// BinDir returns the directory the plane's binaries came from; kubectl is
// there too.
func (p *Plane) BinDir() string { return p.binDir }

// Dir returns the plane's state directory, which holds one log file per
// component (etcd.log, kube-apiserver.log, …). Stop removes it unless told
// to keep the logs.
func (p *Plane) Dir() string { return p.dir }

// Mode returns the mode the plane was started in.
func (p *Plane) Mode() Mode { return p.mode }

// AuditLogPath returns the path of kube-apiserver's audit log (one JSON
// audit.k8s.io/v1 Event per line), or "" when Options.AuditLog was false.
// Every component has a user of its own, so a reader can tell the requests of
// the code under test from those of kube-controller-manager
// (system:kube-controller-manager), kube-scheduler (system:kube-scheduler),
// kwok (testbed:kwok) and the admin identity of Config (testbed:admin).
func (p *Plane) AuditLogPath() string { return p.audit }

// UserConfig returns the configuration of a new client-certificate identity
// for user name in groups, signed by the plane's client CA. It has no
// permission until RBAC grants one, so a controller run under it meets the
// authorization it would meet in a real cluster, and the audit log tells its
// requests apart.
func (p *Plane) UserConfig(name string, groups ...string) (*rest.Config, error) {
	if name == "" {
		return nil, errors.New("user name is empty")
	}
	pair, err := p.clientCA.client(name, groups...)
	if err != nil {
		return nil, err
	}
	return p.restConfig(pair), nil
}

func (p *Plane) restConfig(pair keyPair) *rest.Config {
	return &rest.Config{
		Host: p.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.serverCA.certPEM,
			CertData: pair.certPEM,
			KeyData:  pair.keyPEM,
		},
		QPS:   1000,
		Burst: 2000,
	}
}

// Stop stops every process the plane started, by PID: SIGTERM, then SIGKILL
// for any still running 5 seconds later; the components that depend on
// kube-apiserver first, then kube-apiserver, then etcd. It then removes the
// state directory, unless keepLogs is true or a process could not be
// stopped, and says through Logf where the logs are when it keeps them.
//
// Stop is safe to call more than once and from several goroutines; calls
// after the first return the first one's result.
func (p *Plane) Stop(keepLogs bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return p.stopErr
	}
	p.stopped = true
	signal.Stop(p.signals)
	close(p.quit)

	var errs []error
	for _, tier := range p.stopTiers() {
		var wg sync.WaitGroup
		tierErrs := make([]error, len(tier))
		for i, proc := range tier {
			wg.Go(func() { tierErrs[i] = proc.stop(stopGrace) })
		}
		wg.Wait()
		errs = append(errs, tierErrs...)
	}
	p.stopErr = errors.Join(errs...)
	if keepLogs || p.stopErr != nil {
		p.logf("Kept the state and logs of the %s plane in %s", p.mode, p.dir)
	} else if err := os.RemoveAll(p.dir); err != nil {
		p.stopErr = fmt.Errorf("removing state directory: %w", err)
	}
	return p.stopErr
}

// stopTiers returns the processes in the order Stop stops them: the
// components that use kube-apiserver together, then kube-apiserver, then
// etcd, so that none sees its dependency go away while it still runs.
func (p *Plane) stopTiers() [][]*process {
	var clients, apiserver, etcd []*process
	for _, proc := range p.procs {
		switch proc.name {
		case "etcd":
			etcd = append(etcd, proc)
		case "kube-apiserver":
			apiserver = append(apiserver, proc)
		default:
			clients = append(clients, proc)
		}
	}
	return [][]*process{clients, apiserver, etcd}
}

// pids returns the process IDs of every process the plane started.
func (p *Plane) pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	pids := make([]int, 0, len(p.procs))
	for _, proc := range p.procs {
		pids = append(pids, proc.pid())
	}
	return pids
}

// addProcess records a process Stop must stop. When Stop has already run
// (a signal arrived during Start), it stops the process at once instead.
func (p *Plane) addProcess(proc *process) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return errors.Join(errStopped, proc.stop(stopGrace))
	}
	p.procs = append(p.procs, proc)
	return nil
}

// errStopped says that the plane was stopped while it started.
var errStopped = errors.New("plane stopped during start")

// stopOnSignal stops the plane when the process receives SIGINT or SIGTERM,
// then raises the signal again: once no channel is notified of it, Go's
// default action ends the process as the signal asked.
func (p *Plane) stopOnSignal() {
	select {
	case sig := <-p.signals:
		p.logf("Received %v: stopping the %s plane", sig, p.mode)
		_ = p.Stop(true)
		if s, ok := sig.(syscall.Signal); ok {
			_ = syscall.Kill(os.Getpid(), s)
		}
	case <-p.quit:
	}
}

// path returns the path of name in the plane's state directory.
func (p *Plane) path(name string) string { return filepath.Join(p.dir, name) }
