// Package shard holds nudge's rules for a cluster split by namespace hash
// (--shard): each shard rolls the workloads of its own namespaces exactly
// once per change, reads a source of another shard's namespace through a
// watch of that one object, hands its namespaces over when the shard set
// changes, and, when kube-apiserver's ShardedListAndWatch feature gate is
// on, is sent only its namespaces' objects. Every test runs against two
// kube-apiservers without controllers, one with the gate and one without.
package shard

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/testbed"
)

// plane is one kube-apiserver, with the gate on or off, and a client of it.
type plane struct {
	name string
	gate bool
	p    *testbed.Plane
	k8s  client.WithWatch
}

// planes are the gate-off and gate-on planes every test runs against.
var planes []*plane

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	planes = []*plane{{name: "gate off"}, {name: "gate on", gate: true}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(planes))
	for i, pl := range planes {
		wg.Go(func() {
			opts := testbed.Options{Mode: testbed.APIServer}
			if pl.gate {
				opts.FeatureGates = []string{"ShardedListAndWatch=true"}
			}
			if pl.p, errs[i] = testbed.Start(ctx, opts); errs[i] == nil {
				pl.k8s, errs[i] = nt.Client(pl.p.Config())
			}
		})
	}
	wg.Wait()
	code := 0
	for i, err := range errs {
		if err != nil {
			fmt.Fprintf(os.Stderr, "testbed (%s): %v\n", planes[i].name, err)
			code = 1
		}
	}
	if code == 0 {
		code = m.Run()
	}
	for _, pl := range planes {
		if pl.p == nil {
			continue
		}
		if err := pl.p.Stop(code != 0); err != nil {
			fmt.Fprintf(os.Stderr, "testbed (%s): stopping the plane: %v\n", pl.name, err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// eachPlane runs test as a parallel subtest on each plane.
func eachPlane(t *testing.T, test func(t *testing.T, pl *plane)) {
	t.Parallel()
	for _, pl := range planes {
		t.Run(pl.name, func(t *testing.T) {
			t.Parallel()
			test(t, pl)
		})
	}
}
