package testbed

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

// startTimeout bounds Start in ForTest and Main. A cluster plane is up in
// seconds; the margin is for a loaded shared machine.
const startTimeout = 3 * time.Minute

// ForTest starts a plane for test t and registers its Stop with t.Cleanup,
// keeping the logs when t failed. Messages go to t.Logf. It ends the test
// with t.Fatal when the plane does not start.
func ForTest(t testing.TB, opts Options) *Plane {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	p, err := Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(t.Failed()); err != nil {
			t.Errorf("Stopping the plane: %v", err)
		}
	})
	return p
}

// Main runs a package's tests on one plane, for TestMain:
//
//	func TestMain(m *testing.M) {
//		os.Exit(testbed.Main(m, testbed.Options{}, func(p *testbed.Plane) { plane = p }))
//	}
//
// It starts the plane, hands it to got (which may be nil), runs the tests,
// and stops the plane, keeping its logs when a test failed. It returns the
// exit code for os.Exit: m.Run's, or 1 when the plane did not start or stop.
// Messages go to standard error unless opts.Logf says otherwise.
func Main(m *testing.M, opts Options, got func(*Plane)) int {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	p, err := Start(ctx, opts)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "testbed: %v\n", err)
		return 1
	}
	if got != nil {
		got(p)
	}
	code := m.Run()
	if err := p.Stop(code != 0); err != nil {
		fmt.Fprintf(os.Stderr, "testbed: stopping the plane: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}
