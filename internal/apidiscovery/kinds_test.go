package apidiscovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"nudge.dev/nudge/internal/testbed"
)

// TestServedKinds: a kind served at start is set up at once; a kind whose
// CRD is added later is set up without a restart: from the watch of CRDs
// (the poll's interval is an hour), or, for an identity that may not list
// CRDs and with --namespaces (which never asks), from a poll of API
// discovery, which says so in one log line.
func TestServedKinds(t *testing.T) {
	p := testbed.ForTest(t, testbed.Options{Mode: testbed.APIServer})
	crds, err := apiextensions.NewForConfig(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	// No RBAC at all: discovery alone, which every authenticated user may read.
	nobody, err := p.UserConfig("nobody")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		cfg        *rest.Config
		interval   time.Duration
		poll       bool // --namespaces
		aggregated bool
		fallback   bool // the log line that says nudge polls
	}{
		"a CRD added later is seen by the watch":                           {cfg: p.Config(), interval: time.Hour},
		"a custom kind, which may be aggregated, is seen by the watch too": {cfg: p.Config(), interval: time.Hour, aggregated: true},
		"forbidden to watch CRDs: discovery every interval, said once":     {cfg: nobody, interval: 500 * time.Millisecond, fallback: true},
		"namespaced: discovery every interval, without asking to watch":    {cfg: p.Config(), interval: 500 * time.Millisecond, poll: true, fallback: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			log := &logLines{}
			ctx := logr.NewContext(t.Context(), funcr.New(log.add, funcr.Options{}))
			var runnables []manager.Runnable
			s, err := New(tc.cfg, tc.interval, tc.poll, func(r manager.Runnable) error {
				runnables = append(runnables, r)
				return nil
			})
			g.Expect(err).NotTo(HaveOccurred())

			var served string
			g.Expect(s.When(ctx, schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, false, func(resource string) error {
				served = resource
				return nil
			})).To(Succeed())
			g.Expect(served).To(Equal("deployments"), "a kind served at start is set up at once")
			g.Expect(runnables).To(BeEmpty(), "nothing to wait for")

			group := fmt.Sprintf("t%d.served.test", rand.Uint32())
			setUp := make(chan string, 2)
			setup := func(resource string) error {
				setUp <- resource
				return nil
			}
			for _, kind := range []string{"Widget", "Gadget"} {
				g.Expect(s.When(ctx, schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, tc.aggregated, setup)).To(Succeed())
			}
			g.Expect(runnables).To(HaveLen(1), "one watch for every kind waiting")
			done := make(chan error, 1)
			go func() { done <- runnables[0].Start(ctx) }()
			// Once it has looked for them: from now on only the watch (or
			// the poll, when it falls back) can find them.
			g.Eventually(log.text).WithTimeout(10 * time.Second).Should(ContainSubstring(
				map[bool]string{true: "Cannot watch what serves new kinds", false: "Watching for kinds to be served"}[tc.fallback]))

			for _, kind := range []string{"Widget", "Gadget"} {
				createCRD(t, crds, group, kind)
			}
			got := map[string]bool{}
			for range 2 {
				select {
				case r := <-setUp:
					got[r] = true
				case <-time.After(30 * time.Second):
					t.Fatalf("waited 30 s for the kinds to be set up; set up %v; log:\n%s", got, log.text())
				}
			}
			g.Expect(got).To(Equal(map[string]bool{"widgets": true, "gadgets": true}), "each kind set up once, under its plural")
			select {
			case err := <-done:
				g.Expect(err).NotTo(HaveOccurred())
			case <-time.After(10 * time.Second):
				t.Fatal("the runnable did not return within 10 s once no kind waited")
			}
			g.Expect(strings.Count(log.text(), "Cannot watch what serves new kinds")).To(Equal(map[bool]int{true: 1, false: 0}[tc.fallback]))
			g.Expect(log.text()).To(ContainSubstring("Started watching a newly served kind"))
			if tc.fallback {
				g.Expect(log.text()).NotTo(ContainSubstring("Watching for kinds to be served"))
			}
			if tc.poll {
				g.Expect(log.text()).To(ContainSubstring("nudge watches its namespaces alone"))
			}
			if tc.aggregated {
				g.Expect(log.text()).To(ContainSubstring("apiservices.apiregistration.k8s.io"), "APIServices watched too")
			}
		})
	}
}

// createCRD creates a namespaced CRD of kind in group, version v1, and
// deletes it when t ends.
func createCRD(t *testing.T, c apiextensions.Interface, group, kind string) {
	t.Helper()
	plural := strings.ToLower(kind) + "s"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
	if _, err := c.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
	t.Cleanup(func() {
		_ = c.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
}

// logLines keeps what a funcr logger writes.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(prefix, args string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, prefix+" "+args)
}

func (l *logLines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
