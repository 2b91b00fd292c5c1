// Command cert-manager-controller runs cert-manager's controllers (those
// that issue a Certificate from a self-signed or a CA Issuer or
// ClusterIssuer) for test/chart/certmanager, built from the module
// github.com/cert-manager/cert-manager pinned in hack/kube/go.mod.
//
// cert-manager's own binary is the module
// github.com/cert-manager/cert-manager/controller-binary, which the Go
// module proxy does not serve; this command does what its app.Run does with
// the same packages: a controller.ContextFactory, every controller of
// controller.Known() that is enabled, then the shared informer factories.
// What it leaves out, the test does not need: leader election (one replica),
// the metrics, healthz and pprof servers, and the ACME, Vault and Venafi
// issuers and the certificate shims (their controllers are not linked).
//
// Usage:
//
//	cert-manager-controller --kubeconfig FILE [--namespace NS] [--cluster-resource-namespace NS] [-v N]
//	cert-manager-controller --version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"

	// The controllers a Certificate needs, as cert-manager's binary links
	// them: each registers itself in controller.Known().
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// workers is the number of workers of each controller, cert-manager's
// default (--concurrent-workers).
const workers = 5

func main() {
	fs := pflag.NewFlagSet("cert-manager-controller", pflag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file of the API server")
	namespace := fs.String("namespace", "", "namespace to act in; every namespace when empty")
	clusterNS := fs.String("cluster-resource-namespace", "kube-system", "namespace of the Secrets a ClusterIssuer reads")
	version := fs.Bool("version", false, "print the version and exit")
	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	fs.AddGoFlagSet(klogFlags)
	_ = fs.Parse(os.Args[1:])
	if *version {
		fmt.Printf("cert-manager-controller version %s\n", util.AppVersion)
		return
	}
	logf.InitLogs()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	if err := run(ctx, controller.ContextOptions{
		Kubeconfig:    *kubeconfig,
		Namespace:     *namespace,
		IssuerOptions: controller.IssuerOptions{ClusterResourceNamespace: *clusterNS},
	}); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

// run starts every registered controller and the informers they share,
// and returns when ctx is done or a controller fails.
func run(ctx context.Context, opts controller.ContextOptions) error {
	log := logf.FromContext(ctx)
	factory, err := controller.NewContextFactory(ctx, opts)
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}
	base, err := factory.Build()
	if err != nil {
		return fmt.Errorf("building the controller context: %w", err)
	}
	names := make([]string, 0, len(controller.Known()))
	for name := range controller.Known() {
		names = append(names, name)
	}
	sort.Strings(names)
	g, ctx := errgroup.WithContext(ctx)
	for _, name := range names {
		if name == clusterissuers.ControllerName && opts.Namespace != "" {
			continue // as cert-manager's binary: no ClusterIssuers in one namespace
		}
		iface, err := controller.Known()[name](factory)
		if err != nil {
			return fmt.Errorf("starting controller %s: %w", name, err)
		}
		log.Info("Started controller", "controller", name)
		g.Go(func() error { return iface.Run(workers, ctx) })
	}
	base.SharedInformerFactory.Start(ctx.Done())
	base.KubeSharedInformerFactory.Start(ctx.Done())
	base.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
