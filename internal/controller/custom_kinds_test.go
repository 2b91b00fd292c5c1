package controller_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/app"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// customCase is one configured custom kind under test, with its real CRD
// from its project's Go module. No controller of these kinds runs: every
// write to an object's spec is nudge's rollout.
type customCase struct {
	kind workload.CustomKind
	crd  func(testing.TB) *apiextensionsv1.CustomResourceDefinition
	// object returns the object "w" of the test's namespace: it reads (or
	// names) every key of ConfigMap app and key password of Secret db.
	object func(ns string) *unstructured.Unstructured
	// keysOnly: the object reads Secret db's key password alone (rule 8
	// applies); a source named by annotations counts whole.
	keysOnly bool
}

func customCases() map[string]customCase {
	reloaderAuto := map[string]string{"reloader.stakater.com/auto": "true"}
	return map[string]customCase{
		"Knative Service": {kind: nt.KnativeServiceKind, crd: nt.KnativeServiceCRD, keysOnly: true,
			object: func(ns string) *unstructured.Unstructured {
				return nt.KnativeService(ns, "w", reloaderAuto, nt.EnvFrom("ConfigMap", "app"), nt.EnvKey("Secret", "db", "password", false))
			}},
		"KEDA ScaledJob": {kind: nt.ScaledJobKind, crd: nt.KEDAScaledJobCRD, keysOnly: true,
			object: func(ns string) *unstructured.Unstructured {
				return nt.ScaledJob(ns, "w", reloaderAuto, nt.EnvFrom("ConfigMap", "app"), nt.EnvKey("Secret", "db", "password", false))
			}},
		// Reloader issue 1018: the operator reverts a change of its
		// StatefulSet; a change of the Prometheus's podMetadata it rolls.
		"Prometheus Operator Prometheus": {kind: nt.PrometheusKind, crd: nt.PrometheusCRD,
			object: func(ns string) *unstructured.Unstructured {
				return nt.Prometheus(ns, "w", map[string]string{
					"configmap.reloader.stakater.com/reload": "app", "secret.reloader.stakater.com/reload": "db"})
			}},
	}
}

// customEnv is a test's namespace with the CRD of tc installed, its sources
// and object created, and a count of the object's spec writes.
type customEnv struct {
	*env
	tc     customCase
	obj    *unstructured.Unstructured
	specs  *specWrites
	kindsF string
}

func setupCustom(t *testing.T, tc customCase) *customEnv {
	e := &customEnv{env: setup(t, false, nil), tc: tc}
	nt.InstallCRD(t, suite.K8s, tc.crd(t))
	e.specs = watchSpecs(t, tc.kind, e.NS)
	e.obj = tc.object(e.NS)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
		nt.Secret(e.NS, "db", map[string]string{"password": e.secretValue(1), "other": "o"}), e.obj)
	e.kindsF = nt.CustomKindsFile(t, tc.kind)
	return e
}

// secretValue is the test's n-th value of Secret db's key password.
func (e *customEnv) secretValue(n int) string { return fmt.Sprintf("s3cr3t-%s-%d", e.NS, n) }

func (e *customEnv) start() {
	e.Nudge = nt.Start(e.T, suite.Plane.Config(), e.NS, func(o *options.Options) {
		o.RolloutWindow = 0
		o.CustomKindsFile = e.kindsF
	})
}

// rolledTo waits until the object's spec has been written n times, then
// checks for 3 s that no further write follows.
func (e *customEnv) rolledTo(n int64) {
	e.T.Helper()
	count := func() int64 { return e.specs.count(e.obj.GetName()) }
	e.G.Eventually(count).WithTimeout(20*time.Second).Should(BeNumerically(">=", n), "%s to be rolled %d time(s)", e.tc.kind.Kind, n)
	e.G.Consistently(count).WithTimeout(3*time.Second).Should(Equal(n), "%s to stay at %d rollout(s)", e.tc.kind.Kind, n)
}

// TestCustomKindRules: each custom kind, as a Deployment, rolls nothing at
// nudge's first start over it (rule 3) nor for a label-only change of a
// source (rule 2), exactly once per change (rule 1), with the trigger at its
// trigger path; only for keys it reads (rule 8, kinds with a pod template);
// once for a change made while nudge was down (rule 4); and not again when a
// GitOps tool applies its manifest over it, stripping what nudge wrote (rule
// 6: the tool's own write is the only one).
func TestCustomKindRules(t *testing.T) {
	t.Parallel()
	for name, tc := range customCases() {
		t.Run(name, func(t *testing.T) {
			e := setupCustom(t, tc)
			e.start()
			e.BaselinedObj(e.obj)
			e.rolledTo(0) // rule 3

			e.changeMeta("ConfigMap/app")
			e.changeMeta("Secret/db")
			e.rolledTo(0) // rule 2

			e.changeData("ConfigMap/app")
			e.rolledTo(1) // rule 1
			e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(e.obj), e.obj)).To(Succeed())
			path := tc.kind.Adapter("").TriggerPath()
			trigger, _, _ := unstructured.NestedStringMap(e.obj.Object, path...)
			e.G.Expect(trigger).To(HaveKeyWithValue(workload.RestartedForAnnotation, "ConfigMap "+e.NS+"/app"),
				"the trigger at %s", strings.Join(path, "."))

			if tc.keysOnly {
				e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["other"] = []byte("changed") })
				e.rolledTo(1) // rule 8
			}
			e.changeData("Secret/db")
			e.rolledTo(2)

			e.Nudge.Stop(t)
			e.changeData("ConfigMap/app")
			e.G.Consistently(func() int64 { return e.specs.count("w") }).WithTimeout(time.Second).Should(Equal(int64(2)), "no rollout while nudge is down")
			e.start()
			e.rolledTo(3) // rule 4

			strip := map[string]any{"metadata": map[string]any{
				"annotations": map[string]any{workload.AppliedAnnotation: nil, workload.LastRolloutAnnotation: nil},
				"labels":      map[string]any{workload.SealLabel: nil},
			}}
			e.G.Expect(unstructured.SetNestedField(strip, map[string]any{
				workload.RestartedAtAnnotation: nil, workload.RestartedForAnnotation: nil}, path...)).To(Succeed())
			body, err := json.Marshal(strip)
			e.G.Expect(err).NotTo(HaveOccurred())
			e.G.Expect(suite.K8s.Patch(e.Ctx, e.obj, client.RawPatch(types.MergePatchType, body))).To(Succeed())
			e.BaselinedObj(e.obj)
			e.rolledTo(4) // rule 6: the tool's write, none of nudge's
		})
	}
}

// TestCustomKindDeletedSource: rule 5 for each custom kind. A deleted
// required source (or, for Prometheus, one its annotation names) rolls
// nothing and says so; its return with the same content rolls nothing, with
// other content once. Rule 9: no form of the Secret's values is in the
// object, the Events or nudge's log.
func TestCustomKindDeletedSource(t *testing.T) {
	t.Parallel()
	for name, tc := range customCases() {
		t.Run(name, func(t *testing.T) {
			e := setupCustom(t, tc)
			e.start()
			e.BaselinedObj(e.obj)

			e.G.Expect(suite.K8s.Delete(e.Ctx, nt.Secret(e.NS, "db", nil))).To(Succeed())
			e.G.Eventually(e.Events("w", record.ReasonSourceMissing)).WithTimeout(10*time.Second).
				Should(ContainElement(HaveField("Note", ContainSubstring("Secret "+e.NS+"/db"))), "a Warning naming the missing Secret")
			e.rolledTo(0)

			e.Create(nt.Secret(e.NS, "db", map[string]string{"password": e.secretValue(1), "other": "o"}))
			e.rolledTo(0)
			e.G.Expect(suite.K8s.Delete(e.Ctx, nt.Secret(e.NS, "db", nil))).To(Succeed())
			e.Create(nt.Secret(e.NS, "db", map[string]string{"password": e.secretValue(2), "other": "o"}))
			e.rolledTo(1)

			var events eventsv1.EventList
			e.G.Expect(suite.K8s.List(e.Ctx, &events, client.InNamespace(e.NS))).To(Succeed())
			e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(e.obj), e.obj)).To(Succeed())
			written, err := json.Marshal([]any{e.obj, events.Items})
			e.G.Expect(err).NotTo(HaveOccurred())
			haystack := string(written) + e.Nudge.Logs()
			for _, v := range []string{e.secretValue(1), e.secretValue(2)} {
				sum := sha256.Sum256([]byte(v))
				for _, form := range []string{v, base64.StdEncoding.EncodeToString([]byte(v)), hex.EncodeToString(sum[:]),
					base64.StdEncoding.EncodeToString(sum[:]), base64.RawURLEncoding.EncodeToString(sum[:])} {
					e.G.Expect(strings.Contains(haystack, form)).To(BeFalse(), "found %q (a form of the Secret's value)", form)
				}
			}
		})
	}
}

// A custom kind whose CRD is installed after nudge started is handled once
// API discovery serves it, without a restart. The CRD is Knative's Service
// under a group of the test's own, so that no other test has installed it.
func TestCustomKindServedAfterStart(t *testing.T) {
	e := setup(t, false, nil)
	crd := nt.KnativeServiceCRD(t)
	crd.Spec.Group = e.NS + ".serving.test"
	crd.Name = crd.Spec.Names.Plural + "." + crd.Spec.Group
	kind := nt.KnativeServiceKind
	kind.APIVersion = crd.Spec.Group + "/v1"
	file := nt.CustomKindsFile(t, kind)
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0; o.CustomKindsFile = file })
	e.G.Eventually(e.Nudge.Logs).WithTimeout(20*time.Second).Should(ContainSubstring(kind.APIVersion+", Kind=Service"),
		"nudge to log that it waits for the kind")

	nt.InstallCRD(t, suite.K8s, crd)
	t.Cleanup(func() {
		e.Nudge.Stop(t)
		_ = suite.K8s.Delete(context.Background(), crd)
	})
	obj := nt.KnativeService(e.NS, "w", auto, nt.EnvFrom("ConfigMap", "app"))
	obj.SetAPIVersion(kind.APIVersion)
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), obj)
	e.BaselinedObj(obj)
	e.changeData("ConfigMap/app")
	e.G.Eventually(e.Generation(obj)).WithTimeout(20*time.Second).Should(Equal(int64(2)), "one rollout for a data change")
	e.G.Consistently(e.Generation(obj)).WithTimeout(3*time.Second).Should(Equal(int64(2)), "exactly one")
}

// A custom kinds file nudge cannot use stops its start with an error that
// names the flag and the problem, before any API call.
func TestBadCustomKindsFileStopsStart(t *testing.T) {
	g := NewWithT(t)
	opts := options.Default()
	opts.CustomKindsFile = nt.CustomKindsFile(t, workload.CustomKind{APIVersion: "example.com/v1", Kind: "Thing"})
	err := app.Run(t.Context(), suite.Plane.Config(), opts)
	g.Expect(err).To(MatchError(And(ContainSubstring("--custom-kinds-file"), ContainSubstring("triggerPath is required"))))
}

// specWrites counts, from a watch, the changes of the spec of each object of
// one custom kind in one namespace.
type specWrites struct {
	mu     sync.Mutex
	last   map[string]any
	counts map[string]int64
}

func watchSpecs(t *testing.T, k workload.CustomKind, ns string) *specWrites {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(k.GroupVersionKind().GroupVersion().WithKind(k.Kind + "List"))
	events := nt.Watch(t, suite.K8s, list, client.InNamespace(ns))
	sw := &specWrites{last: map[string]any{}, counts: map[string]int64{}}
	go func() {
		for ev := range events {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			sw.mu.Lock()
			if prev, seen := sw.last[u.GetName()]; seen && !reflect.DeepEqual(prev, u.Object["spec"]) {
				sw.counts[u.GetName()]++
			}
			sw.last[u.GetName()] = u.Object["spec"]
			sw.mu.Unlock()
		}
	}()
	return sw
}

func (sw *specWrites) count(name string) int64 {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.counts[name]
}
