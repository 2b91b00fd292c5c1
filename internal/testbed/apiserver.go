package testbed

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// serviceCIDR is the range Service cluster IPs come from. Nothing ever
	// connects to it: there is no kube-proxy.
	serviceCIDR = "10.0.0.0/24"
	// adminUser is the admin identity's user name; its group is system:masters.
	adminUser = "testbed:admin"
	// etcdReadyTimeout and apiserverReadyTimeout bound each wait within
	// Start's context. The machine may be shared and slow.
	etcdReadyTimeout      = 30 * time.Second
	apiserverReadyTimeout = 90 * time.Second
)

// auditPolicy logs every request once, at Metadata level (who, verb,
// resource, namespace, name, response code; no bodies), when it completes.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// writeCredentials creates the plane's CAs and keys and writes the files
// kube-apiserver and kube-controller-manager read.
func (p *Plane) writeCredentials() error {
	var err error
	if p.serverCA, err = newAuthority("testbed-server-ca"); err != nil {
		return err
	}
	if p.clientCA, err = newAuthority("testbed-client-ca"); err != nil {
		return err
	}
	serving, err := p.serverCA.serving("kube-apiserver")
	if err != nil {
		return err
	}
	saPrivate, saPublic, err := signingKey()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"server-ca.crt":  p.serverCA.certPEM,
		"client-ca.crt":  p.clientCA.certPEM,
		"apiserver.crt":  serving.certPEM,
		"apiserver.key":  serving.keyPEM,
		"sa.key":         saPrivate,
		"sa.pub":         saPublic,
		"audit-policy.y": []byte(auditPolicy),
	}
	for name, data := range files {
		if err := os.WriteFile(p.path(name), data, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}

// startEtcd starts etcd and returns it and its client URL once it is
// healthy.
func (p *Plane) startEtcd(ctx context.Context) (*process, string, error) {
	var clientURL string
	etcd, err := p.startOnFreePorts(ctx, 2, func(ports []int) (*process, error) {
		clientURL = "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		return p.startComponent("etcd", []string{
			"--name", "testbed",
			"--data-dir", p.path("etcd"),
			"--listen-client-urls", clientURL,
			"--advertise-client-urls", clientURL,
			"--listen-peer-urls", peerURL,
			"--initial-advertise-peer-urls", peerURL,
			"--initial-cluster", "testbed=" + peerURL,
			"--unsafe-no-fsync", // the data dies with the plane
			// etcd's default quota, 2 GiB, holds about 200,000 sources of
			// 8 KiB; the benchmark's larger scale runs need more.
			"--quota-backend-bytes", strconv.FormatInt(8<<30, 10),
		})
	}, func(ctx context.Context, proc *process) error {
		client := &http.Client{Timeout: 2 * time.Second}
		return waitFor(ctx, etcdReadyTimeout, "etcd /health", []*process{proc}, func(ctx context.Context) error {
			body, err := get(ctx, client, clientURL+"/health")
			if err == nil && !strings.Contains(body, `"health":"true"`) {
				err = fmt.Errorf("unhealthy: %s", body)
			}
			return err
		})
	})
	return etcd, clientURL, err
}

// startAPIServer starts kube-apiserver on etcd, which serves at etcdURL, and
// returns once its /readyz and /livez answer ok; it then writes the admin
// kubeconfig.
func (p *Plane) startAPIServer(ctx context.Context, etcd *process, etcdURL string, opts Options) error {
	p.etcd, p.etcdURL = etcd, etcdURL
	if opts.AuditLog {
		p.audit = p.path("audit.log")
	}
	p.watchCacheOff = opts.DisableWatchCache
	p.featureGates = opts.FeatureGates
	_, err := p.startOnFreePorts(ctx, 1, func(ports []int) (*process, error) {
		p.host = "https://127.0.0.1:" + strconv.Itoa(ports[0])
		p.apiserverPort = ports[0]
		admin, err := p.clientCA.client(adminUser, "system:masters")
		if err != nil {
			return nil, err
		}
		p.admin = p.restConfig(admin)
		return p.startComponent("kube-apiserver", p.apiserverArgs())
	}, p.apiserverReady)
	if err != nil {
		return err
	}
	if p.client, err = kubernetes.NewForConfig(p.admin); err != nil {
		return fmt.Errorf("building admin client: %w", err)
	}
	p.kubecfg = p.path("admin.kubeconfig")
	return p.writeKubeconfig(p.kubecfg, adminUser, p.admin)
}

// apiserverArgs returns kube-apiserver's command line: on p.apiserverPort,
// on the plane's etcd, with the plane's credentials.
func (p *Plane) apiserverArgs() []string {
	args := []string{
		"--etcd-servers", p.etcdURL,
		"--bind-address", "127.0.0.1",
		"--advertise-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(p.apiserverPort),
		"--cert-dir", p.path("apiserver"),
		"--tls-cert-file", p.path("apiserver.crt"),
		"--tls-private-key-file", p.path("apiserver.key"),
		"--client-ca-file", p.path("client-ca.crt"),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", p.path("sa.pub"),
		"--service-account-signing-key-file", p.path("sa.key"),
		"--service-cluster-ip-range", serviceCIDR,
		"--authorization-mode", "Node,RBAC",
		// The default reconciler would publish 127.0.0.1 as the
		// endpoint of Service default/kubernetes, which the API
		// rejects for a loopback address.
		"--endpoint-reconciler-type", "none",
		"--allow-privileged=true",
	}
	if p.watchCacheOff {
		args = append(args, "--watch-cache=false")
	}
	if len(p.featureGates) > 0 {
		args = append(args, "--feature-gates", strings.Join(p.featureGates, ","))
	}
	if p.audit != "" {
		args = append(args,
			"--audit-log-path", p.audit,
			"--audit-policy-file", p.path("audit-policy.y"),
			"--audit-log-mode", "blocking", // an event is on disk when its response is sent
			// One file, read whole: kube-apiserver rotates at 100 MB by
			// default, and a scale run's sync alone writes more.
			"--audit-log-maxsize", "1048576",
		)
	}
	return args
}

// apiserverReady waits until kube-apiserver's /readyz and /livez answer ok,
// failing at once if it or etcd exits.
func (p *Plane) apiserverReady(ctx context.Context, proc *process) error {
	client, err := rest.HTTPClientFor(p.admin)
	if err != nil {
		return fmt.Errorf("building admin HTTP client: %w", err)
	}
	client.Timeout = 5 * time.Second
	return waitFor(ctx, apiserverReadyTimeout, "kube-apiserver /readyz and /livez", []*process{p.etcd, proc}, func(ctx context.Context) error {
		for _, path := range []string{"/readyz", "/livez"} {
			if body, err := get(ctx, client, p.host+path); err != nil {
				return err
			} else if body != "ok" {
				return fmt.Errorf("%s: %s", path, body)
			}
		}
		return nil
	})
}

// startComponent starts the binary name of the plane with args, logging to
// name.log in the state directory, and records it for Stop.
func (p *Plane) startComponent(name string, args []string) (*process, error) {
	proc, err := startProcess(name, filepath.Join(p.binDir, name), args, p.path(name+".log"))
	if err != nil {
		return nil, err
	}
	return proc, p.addProcess(proc)
}

// writeKubeconfig writes a kubeconfig file at path for cfg's client
// certificate, with every credential embedded.
func (p *Plane) writeKubeconfig(path, user string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["testbed"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["testbed"] = &clientcmdapi.Context{Cluster: "testbed", AuthInfo: user}
	kc.CurrentContext = "testbed"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig for %s: %w", user, err)
	}
	return nil
}

// get returns the body of a GET of url, or an error unless the status is 200.
func get(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)), nil
}
