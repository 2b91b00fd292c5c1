package testbed

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// kwokNodeAnnotation marks the Nodes kwok manages
	// (https://kwok.sigs.k8s.io/docs/user/kwok-in-cluster/).
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeValue      = "fake"
	// podCIDR is where kwok takes fake pod IPs from. Nothing ever connects
	// to them.
	podCIDR = "10.244.0.0/16"
	// componentReadyTimeout and clusterReadyTimeout bound the waits for
	// kube-controller-manager and kube-scheduler to serve, and for the nodes
	// and the default ServiceAccount to appear.
	componentReadyTimeout = 60 * time.Second
	clusterReadyTimeout   = 60 * time.Second
)

// startCluster starts kube-controller-manager, kube-scheduler and kwok,
// creates nodes fake Nodes, and returns once the nodes are Ready and
// untainted and the default namespace has its default ServiceAccount.
func (p *Plane) startCluster(ctx context.Context, nodes int) error {
	// kube-controller-manager runs all its controllers as one user in group
	// system:masters. The bootstrap role of that user suffices only with
	// --use-service-account-credentials (a ServiceAccount per controller, as
	// in kubeadm clusters), under which kube-controller-manager creates each
	// controller's ServiceAccount and token one after another before
	// starting it: 4 seconds more before the last controller runs.
	kcmConfig, err := p.componentKubeconfig("kube-controller-manager", "system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	schedConfig, err := p.componentKubeconfig("kube-scheduler", "system:kube-scheduler")
	if err != nil {
		return err
	}
	// kwok writes the status of Nodes and Pods and the nodes' Leases; no
	// bootstrap role grants that alone.
	kwokConfig, err := p.componentKubeconfig("kwok", "testbed:kwok", "system:masters")
	if err != nil {
		return err
	}
	stageArgs, err := writeStages(p.path("stages"))
	if err != nil {
		return err
	}
	kwok, err := p.startComponent("kwok", append(stageArgs,
		"--kubeconfig", kwokConfig,
		"--manage-nodes-with-annotation-selector", kwokNodeAnnotation+"="+kwokNodeValue,
		"--node-lease-duration-seconds", "40",
		"--cidr", podCIDR,
		// With neither --server-address nor --node-port, kwok listens on
		// no port at all.
	))
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	var kcmErr, schedErr, nodesErr error
	var kcm, sched *process
	wg.Go(func() {
		kcm, kcmErr = p.startServing(ctx, "kube-controller-manager", "/healthz", func(port int) []string {
			return []string{
				"--kubeconfig", kcmConfig,
				"--leader-elect=false",
				"--bind-address", "127.0.0.1",
				"--secure-port", strconv.Itoa(port),
				"--cert-dir", p.path("kube-controller-manager"),
				"--flex-volume-plugin-dir", p.path("flexvolume"),
				"--service-account-private-key-file", p.path("sa.key"),
				"--root-ca-file", p.path("server-ca.crt"),
				"--use-service-account-credentials=false",
				"--controllers", "*",
			}
		})
	})
	wg.Go(func() {
		sched, schedErr = p.startServing(ctx, "kube-scheduler", "/readyz", func(port int) []string {
			return []string{
				"--kubeconfig", schedConfig,
				"--leader-elect=false",
				"--bind-address", "127.0.0.1",
				"--secure-port", strconv.Itoa(port),
			}
		})
	})
	wg.Go(func() { nodesErr = p.createNodes(ctx, nodes) })
	wg.Wait()
	if err := errors.Join(kcmErr, schedErr, nodesErr); err != nil {
		return err
	}
	return p.waitForCluster(ctx, nodes, []*process{kcm, sched, kwok})
}

// startServing starts component name on a free port with the arguments args
// returns for it, and waits until it answers 200 on health over HTTPS.
func (p *Plane) startServing(ctx context.Context, name, health string, args func(port int) []string) (*process, error) {
	var url string
	return p.startOnFreePorts(ctx, 1, func(ports []int) (*process, error) {
		url = "https://127.0.0.1:" + strconv.Itoa(ports[0]) + health
		return p.startComponent(name, args(ports[0]))
	}, func(ctx context.Context, proc *process) error {
		// The component serves a self-signed certificate it generated
		// itself, on loopback; this probe sends no credential.
		client := &http.Client{
			Timeout:   2 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
		}
		defer client.CloseIdleConnections()
		return waitFor(ctx, componentReadyTimeout, name+" "+health, []*process{proc}, func(ctx context.Context) error {
			_, err := get(ctx, client, url)
			return err
		})
	})
}

// componentKubeconfig writes name.kubeconfig for a client certificate of
// user in groups and returns its path.
func (p *Plane) componentKubeconfig(name, user string, groups ...string) (string, error) {
	cfg, err := p.UserConfig(user, groups...)
	if err != nil {
		return "", err
	}
	path := p.path(name + ".kubeconfig")
	return path, p.writeKubeconfig(path, user, cfg)
}

// nodeName returns the name of fake node i.
func nodeName(i int) string { return "kwok-node-" + strconv.Itoa(i) }

// createNodes creates n Nodes for kwok to manage, without taints, with
// room for far more pods than a test creates.
func (p *Plane) createNodes(ctx context.Context, n int) error {
	cs := p.client
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	for i := range n {
		name := nodeName(i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Annotations: map[string]string{
					kwokNodeAnnotation:             kwokNodeValue,
					"node.alpha.kubernetes.io/ttl": "0",
				},
				Labels: map[string]string{
					"kubernetes.io/arch":     "amd64",
					"kubernetes.io/os":       "linux",
					"kubernetes.io/hostname": name,
					"kubernetes.io/role":     "agent",
					"type":                   "kwok",
				},
			},
			Status: corev1.NodeStatus{
				Allocatable: resources,
				Capacity:    resources,
				// TEST-NET-1 (RFC 5737): documentation addresses that
				// route nowhere, and nothing connects to them.
				Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2." + strconv.Itoa(i+1)}},
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating Node %s: %w", name, err)
		}
	}
	return nil
}

// waitForCluster waits until n nodes are Ready without taints and the
// default namespace has its default ServiceAccount, failing as soon as one of
// procs exits.
func (p *Plane) waitForCluster(ctx context.Context, n int, procs []*process) error {
	cs := p.client
	err := waitFor(ctx, clusterReadyTimeout, strconv.Itoa(n)+" Ready untainted kwok nodes", procs, func(ctx context.Context) error {
		for i := range n {
			node, err := cs.CoreV1().Nodes().Get(ctx, nodeName(i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(node) {
				return fmt.Errorf("node %s is not Ready", node.Name)
			}
			if len(node.Spec.Taints) > 0 {
				return fmt.Errorf("node %s has taints %v", node.Name, node.Spec.Taints)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return waitFor(ctx, clusterReadyTimeout, "ServiceAccount default/default", procs, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// CreateNamespace creates namespace name and returns once pods can be
// created in it: once its default ServiceAccount exists, which the
// ServiceAccount admission plugin requires of every pod. In cluster mode
// kube-controller-manager creates that ServiceAccount; in apiserver mode,
// where no controller runs, CreateNamespace creates it.
//
// Deleting a namespace takes about 10 seconds (its finalizer waits for every
// object in it to go): a test should use a namespace of its own with a fresh
// name (see GenerateNamespace) and never wait for one to be deleted.
func (p *Plane) CreateNamespace(ctx context.Context, name string) error {
	_, err := p.createNamespace(ctx, metav1.ObjectMeta{Name: name})
	return err
}

// GenerateNamespace creates a namespace named prefix followed by five random
// characters, as CreateNamespace does, and returns its name.
func (p *Plane) GenerateNamespace(ctx context.Context, prefix string) (string, error) {
	return p.createNamespace(ctx, metav1.ObjectMeta{GenerateName: prefix})
}

func (p *Plane) createNamespace(ctx context.Context, meta metav1.ObjectMeta) (string, error) {
	cs := p.client
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("creating Namespace %s: %w", meta.Name+meta.GenerateName, err)
	}
	if p.mode == APIServer {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("creating ServiceAccount %s/default: %w", ns.Name, err)
		}
		return ns.Name, nil
	}
	p.mu.Lock()
	procs := append([]*process(nil), p.procs...)
	p.mu.Unlock()
	err = waitFor(ctx, clusterReadyTimeout, "ServiceAccount "+ns.Name+"/default", procs, func(ctx context.Context) error {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
	return ns.Name, err
}

// writeStages writes the embedded kwok stages into dir and returns the
// --config arguments that pass them to kwok.
func writeStages(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating stage directory: %w", err)
	}
	entries, err := stages.ReadDir(stagesDir)
	if err != nil {
		return nil, fmt.Errorf("reading embedded stages: %w", err)
	}
	var args []string
	for _, e := range entries {
		data, err := stages.ReadFile(stagesDir + "/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("reading embedded stage %s: %w", e.Name(), err)
		}
		path := dir + "/" + e.Name()
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("writing stage %s: %w", e.Name(), err)
		}
		args = append(args, "--config", path)
	}
	return args, nil
}
