package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/internal/explain"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/fleet"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/producer"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/sources"
	"nudge.dev/nudge/internal/workload"
)

// update rewrites the golden files: go test ./cmd/nudge -run TestExplain -update
var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// fixture is one namespace of workloads in every dialect and reference
// form, baselined by a nudge that has been stopped since, then changed.
type fixture struct {
	ns, system string
}

// TestExplain pins nudge explain's table output for every dialect and
// reference form (golden files), its JSON and YAML, and its answer for a
// user who may not read nudge's key Secret.
func TestExplain(t *testing.T) {
	f := newFixture(t)
	goldens := map[string][]string{
		"native-auto":     {"deployment/native-auto"},
		"native-named":    {"deploy", "native-named"},
		"reloader-auto":   {"statefulset/reloader-auto"},
		"reloader-search": {"ds/reloader-search"},
		"reloader-reload": {"cronjob/reloader-reload"},
		"pod-reloader":    {"deployment/pod-reloader"},
		"wave":            {"rollout/wave"},
		"held":            {"deployment/held"},
		"windowed":        {"deployment/windowed"},
		"unmanaged":       {"deployment/unmanaged"},
		"first-sight":     {"deployment/first-sight"},
		"pending":         {"deployment/native-auto", "--max-concurrent-rollouts", "5"},
		"halted":          {"deployment/halted", "--max-concurrent-rollouts", "5"},
		"restored":        {"deployment/restored"},
		"job":             {"job/job"},
		"source-app":      {"configmap/app"},
		"source-db":       {"secret/db"},
		"source-gone":     {"secret/gone"},
		"source-unused":   {"cm/unused"},
		"source-win":      {"configmap/win"},
		"selector":        {"deployment/selector"},
		"source-dash":     {"configmap/dash-3"},
	}
	for name, args := range goldens {
		t.Run(name, func(t *testing.T) {
			out, err := run(t, command(), f.args(append([]string{"explain"}, args...)...)...)
			NewWithT(t).Expect(err).NotTo(HaveOccurred(), "explain %v:\n%s", args, out)
			golden(t, name, f.normalise(out))
		})
	}

	t.Run("-o json parses and holds the comparison", func(t *testing.T) {
		g := NewWithT(t)
		out, err := run(t, pluginCommand(), f.args("explain", "deployment/native-auto", "-o", "json")...)
		g.Expect(err).NotTo(HaveOccurred())
		var got struct {
			APIVersion, Kind string
			Workload         explain.Workload
		}
		g.Expect(json.Unmarshal([]byte(out), &got)).To(Succeed(), "JSON output:\n%s", out)
		g.Expect(got.APIVersion).To(Equal(explain.APIVersion))
		g.Expect(got.Kind).To(Equal(explain.Kind))
		g.Expect(got.Workload.Status.State).To(Equal(explain.StateWouldRoll))
		g.Expect(got.Workload.Comparison.Compared).To(BeTrue())
		g.Expect(got.Workload.References).To(ContainElement(And(
			HaveField("Name", "app"), HaveField("ReadAs", []string{"envFrom"}), HaveField("Content", explain.ContentChanged))))
	})

	t.Run("-o yaml parses", func(t *testing.T) {
		g := NewWithT(t)
		out, err := run(t, pluginCommand(), f.args("explain", "secret", "db", "-o", "yaml")...)
		g.Expect(err).NotTo(HaveOccurred())
		var got struct{ Source explain.Source }
		g.Expect(yaml.Unmarshal([]byte(out), &got)).To(Succeed(), "YAML output:\n%s", out)
		g.Expect(got.Source.Workloads).NotTo(BeEmpty())
	})

	t.Run("-o json and yaml name who wrote a restored state back", func(t *testing.T) {
		for _, format := range []string{"json", "yaml"} {
			g := NewWithT(t)
			out, err := run(t, pluginCommand(), f.args("explain", "deployment/restored", "-o", format)...)
			g.Expect(err).NotTo(HaveOccurred())
			var got struct{ Workload explain.Workload }
			g.Expect(yaml.Unmarshal([]byte(out), &got)).To(Succeed(), "%s output:\n%s", format, out)
			g.Expect(got.Workload.Status).To(And(HaveField("State", explain.StateRestored),
				HaveField("WrittenBackBy", "argocd-controller")), "%s output:\n%s", format, out)
		}
	})

	t.Run("without access to the key Secret", func(t *testing.T) {
		g := NewWithT(t)
		user := f.reader(t)
		out, err := run(t, pluginCommand(), f.args("explain", "deployment/native-auto", "--as", user)...)
		g.Expect(err).NotTo(HaveOccurred(), "explain still works:\n%s", out)
		golden(t, "no-key-access", f.normalise(out))
		g.Expect(out).To(ContainSubstring("cannot compare content: no access to Secret " + f.system + "/nudge-fingerprint-key"))

		// The same user may not read the workload of another namespace.
		_, err = run(t, pluginCommand(), "explain", "deployment/native-auto", "--as", user, "-n", f.system,
			"--kubeconfig", suite.Plane.Kubeconfig(), "--system-namespace", f.system)
		g.Expect(err).To(MatchError(ContainSubstring("forbidden")))
		g.Expect(err).NotTo(BeAssignableToTypeOf(usageError{}), "an API error exits 1, not 2")
	})

	t.Run("finds the install and its key without a flag", func(t *testing.T) {
		g := NewWithT(t)
		out, err := run(t, pluginCommand(), "explain", "deployment/native-auto", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", f.ns)
		g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
		g.Expect(out).To(ContainSubstring("(ConfigMap "+f.system+"/nudge-settings): "), "the install found, by its label")
		g.Expect(out).To(ContainSubstring("--system-namespace="+f.system), "its settings shown")
		g.Expect(out).To(ContainSubstring("Content:      compared with key"), "its key found with its settings:\n%s", out)
		g.Expect(out).To(MatchRegexp(`ConfigMap +app +\* +no +envFrom +Counted +Changed`))
	})

	t.Run("a flag given wins over the install's settings", func(t *testing.T) {
		g := NewWithT(t)
		out, err := run(t, pluginCommand(), "explain", "deployment/native-auto", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", f.ns,
			"--key-secret", "other-key")
		g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
		g.Expect(out).To(ContainSubstring("--key-secret=other-key"))
		g.Expect(out).To(ContainSubstring("Secret " + f.system + "/other-key (nudge's key) does not exist"))
	})

	t.Run("without access to nudge's namespace: no internal error, and why", func(t *testing.T) {
		g := NewWithT(t)
		out, err := run(t, pluginCommand(), "explain", "deployment/native-auto", "--as", f.reader(t), "--kubeconfig", suite.Plane.Kubeconfig(), "-n", f.ns)
		g.Expect(err).NotTo(HaveOccurred(), "explain still works:\n%s", out)
		g.Expect(out).To(ContainSubstring("Install:      no settings found (no nudge install found: looked for ConfigMaps labelled"))
		g.Expect(out).To(ContainSubstring("you may not list ConfigMaps in namespace nudge-system"))
		g.Expect(out).To(ContainSubstring("Content:      cannot compare content: no access to Secret nudge-system/nudge-fingerprint-key"))
		g.Expect(out).NotTo(ContainSubstring("empty namespace"))
		g.Expect(out).To(MatchRegexp(`ConfigMap +app +\* +no +envFrom +Counted +Unknown`), "every reference still shown")
	})

	t.Run("a workload that does not exist is an error", func(t *testing.T) {
		_, err := run(t, command(), f.args("explain", "deployment/nothing")...)
		NewWithT(t).Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
	})
}

// args adds the fixture's kubeconfig, namespace and nudge's system namespace.
func (f *fixture) args(args ...string) []string {
	return append(args, "--kubeconfig", suite.Plane.Kubeconfig(), "-n", f.ns, "--system-namespace", f.system)
}

// normalise replaces what differs from run to run: the generated namespace
// names, times, and the key's identifier.
func (f *fixture) normalise(out string) string {
	out = strings.ReplaceAll(out, f.system, "SYSTEM")
	out = strings.ReplaceAll(out, f.ns, "NS")
	out = regexp.MustCompile(`nudge \S+ \(ConfigMap`).ReplaceAllString(out, "nudge VERSION (ConfigMap")
	out = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`).ReplaceAllString(out, "YYYY-MM-DDTHH:MM:SSZ")
	out = regexp.MustCompile(`[0-9a-f]{8}\.[A-Za-z0-9_-]{16}`).ReplaceAllString(out, "KEYID.DIGEST")
	return regexp.MustCompile(`key [0-9a-f]{8} `).ReplaceAllString(out, "key KEYID ")
}

// golden compares got with testdata/name.golden, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s (run with -update to create it): %v", path, err)
	}
	NewWithT(t).Expect(got).To(Equal(string(want)), "output differs from %s (run with -update if intended)", path)
}

// reader creates a user who may read the fixture's workloads, sources and
// Events, and nothing in nudge's namespace, and returns its name.
func (f *fixture) reader(t *testing.T) string {
	t.Helper()
	g := NewWithT(t)
	const user = "explain-reader"
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "explain-reader"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "events"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets", "daemonsets"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"batch"}, Resources: []string{"cronjobs", "jobs"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"rollouts"}, Verbs: []string{"get", "list"}},
	}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "explain-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := suite.K8s.Create(t.Context(), o); !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
	}
	return user
}

// newFixture builds the fixture: sources and workloads, a nudge that records
// their baselines and rolls windowed once, then, nudge stopped, changes.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	f := &fixture{}
	var err error
	f.ns, err = suite.Plane.GenerateNamespace(ctx, "explain-")
	g.Expect(err).NotTo(HaveOccurred())
	f.system, err = suite.Plane.GenerateNamespace(ctx, "explain-system-")
	g.Expect(err).NotTo(HaveOccurred())
	nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
	ns := f.ns

	matched := nt.ConfigMap(ns, "matched", map[string]string{"a": "1"})
	matched.Annotations = map[string]string{"reloader.stakater.com/match": "true"}
	tls := nt.Secret(ns, "tls", map[string]string{"crt": "c", "key": "k"})
	objs := []client.Object{
		nt.ConfigMap(ns, "app", map[string]string{"mode": "a"}),
		nt.Secret(ns, "db", map[string]string{"password": "p", "user": "u"}),
		nt.ConfigMap(ns, "files", map[string]string{"f": "1"}),
		tls, matched,
		nt.ConfigMap(ns, "extra", map[string]string{"x": "1"}),
		nt.ConfigMap(ns, "win", map[string]string{"w": "1"}),
		nt.ConfigMap(ns, "later", map[string]string{"l": "1"}),
		nt.ConfigMap(ns, "unused", map[string]string{"u": "1"}),

		nt.Deployment(ns, "native-auto", 1, map[string]string{"nudge.dev/auto": "true"},
			nt.EnvFrom("ConfigMap", "app"), nt.EnvKey("Secret", "db", "password", false), nt.Volume("ConfigMap", "files"),
			projected("Secret", "tls", "crt")),
		nt.Deployment(ns, "native-named", 1, map[string]string{
			"nudge.dev/configmaps": "extra", "nudge.dev/secrets": "gone", "nudge.dev/exclude-configmaps": "app", "nudge.dev/auto": "true",
		}, nt.EnvFrom("ConfigMap", "app")),
		templateAnnotated(ns, "reloader-auto", map[string]string{"reloader.stakater.com/auto": "true"}, nt.Volume("Secret", "db")),
		nt.DaemonSet(ns, "reloader-search", map[string]string{"reloader.stakater.com/search": "true"},
			nt.EnvFrom("ConfigMap", "app"), nt.EnvFrom("ConfigMap", "matched")),
		cronJob(ns, "reloader-reload", map[string]string{
			"configmap.reloader.stakater.com/reload": "ext.*", "secret.reloader.stakater.com/reload": "db",
		}),
		nt.Deployment(ns, "pod-reloader", 1, map[string]string{
			"pod-reloader.cs.sap.com/configmaps": "app", "pod-reloader.cs.sap.com/secrets": "db",
		}, nt.EnvKey("ConfigMap", "app", "mode", true)),
		nt.Rollout(ns, "wave", map[string]string{
			"wave.pusher.com/update-on-config-change": "true", "wave.pusher.com/extra-secrets": "db",
		}, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(ns, "held", 1, map[string]string{"nudge.dev/auto": "true"},
			nt.EnvFrom("ConfigMap", "app"), nt.EnvFrom("ConfigMap", "later")),
		nt.Deployment(ns, "windowed", 1, map[string]string{"nudge.dev/auto": "true", "nudge.dev/rollout-window": "1h"},
			nt.EnvFrom("ConfigMap", "win")),
		nt.Deployment(ns, "unmanaged", 1, nil, nt.EnvFrom("ConfigMap", "app")),
		job(ns, "job", map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(ns, "halted", 1, map[string]string{"nudge.dev/auto": "true", fleet.PriorityAnnotation: "1"},
			nt.EnvFrom("ConfigMap", "app")),
		nt.Deployment(ns, "restored", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("ConfigMap", "win")),
		nt.Deployment(ns, "selector", 1, map[string]string{"nudge.dev/configmap-selector": "app=dash"}),
	}
	for _, name := range []string{"dash-1", "dash-2"} {
		dash := nt.ConfigMap(ns, name, map[string]string{"board.json": "{}"})
		dash.Labels = map[string]string{"app": "dash"}
		g.Expect(suite.K8s.Create(ctx, dash)).To(Succeed())
	}
	for _, o := range objs {
		g.Expect(suite.K8s.Create(ctx, o)).To(Succeed(), "creating %T %s", o, o.GetName())
	}

	n := nt.Start(t, suite.Plane.Config(), ns, func(o *options.Options) { o.SystemNamespace = f.system })
	for _, o := range objs[9:] {
		if o.GetName() == "unmanaged" || o.GetName() == "job" {
			continue
		}
		g.Eventually(func() string {
			g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(o), o)).To(Succeed())
			return o.GetAnnotations()[workload.AppliedAnnotation]
		}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of %s", o.GetName())
	}
	exported := nt.Deployment(ns, "restored", 1, nil) // kubectl get -o yaml, committed to Git
	g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(exported), exported)).To(Succeed())
	// One rollout of windowed, so its next change comes within its window, and
	// of restored, whose exported state a GitOps tool then writes back.
	updateData(t, ns, "win")
	for _, name := range []string{"windowed", "restored"} {
		g.Eventually(func() string {
			d := nt.Deployment(ns, name, 1, nil)
			g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			return d.Annotations[workload.LastRolloutAnnotation]
		}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge to roll %s", name)
	}
	writeBack(t, exported, "argocd-controller")
	// A required source of held goes away.
	g.Expect(suite.K8s.Delete(ctx, nt.ConfigMap(ns, "later", nil))).To(Succeed())
	// Wait for every Event nudge records here, so the goldens hold them all.
	for _, want := range []struct{ name, reason string }{
		{"windowed", record.ReasonRolled}, {"held", record.ReasonSourceMissing}, {"native-named", record.ReasonSourceMissing},
		{"restored", record.ReasonRolled}, {"restored", record.ReasonStateRestored},
	} {
		g.Eventually(func() []string {
			var list corev1.EventList
			g.Expect(suite.K8s.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, ev := range list.Items {
				if ev.InvolvedObject.Name == want.name {
					reasons = append(reasons, ev.Reason)
				}
			}
			return reasons
		}).WithTimeout(30*time.Second).Should(ContainElement(want.reason), "a %s Event on %s", want.reason, want.name)
	}
	g.Expect(n.Logs()).To(MatchRegexp(`"msg":"Starting nudge","version":"[^"]+","goVersion":"go`),
		"the start log line names the version")
	g.Eventually(func() error {
		return suite.K8s.Get(ctx, client.ObjectKey{Namespace: f.system, Name: "nudge-settings"}, &corev1.ConfigMap{})
	}).WithTimeout(30*time.Second).Should(Succeed(), "nudge to publish its settings")
	n.Stop(t)

	// Changes nudge has not seen.
	dash := nt.ConfigMap(ns, "dash-3", map[string]string{"board.json": "{}"})
	dash.Labels = map[string]string{"app": "dash"}
	g.Expect(suite.K8s.Create(ctx, dash)).To(Succeed())
	updateData(t, ns, "app")
	updateData(t, ns, "win")
	g.Expect(suite.K8s.Create(ctx, nt.Deployment(ns, "first-sight", 1, map[string]string{"nudge.dev/auto": "true"},
		nt.EnvFrom("ConfigMap", "app")))).To(Succeed())
	// halted is held for app's new content, as nudge holds a workload once
	// a rollout of that content failed elsewhere.
	key, err := fingerprint.ReadKey(ctx, suite.K8s, f.system, "nudge-fingerprint-key")
	g.Expect(err).NotTo(HaveOccurred())
	var cm corev1.ConfigMap
	g.Expect(suite.K8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, &cm)).To(Succeed())
	src := refs.Source{Kind: refs.ConfigMap, Namespace: ns, Name: "app"}
	halt := src.String() + "=" + sources.ContentDigest(key, src, &cm) + " Deployment/" + ns + "/canary"
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+fleet.HaltedAnnotation+`":"`+halt+`"}}}`))
	g.Expect(suite.K8s.Patch(ctx, nt.Deployment(ns, "halted", 1, nil), patch)).To(Succeed())
	return f
}

// writeBack applies d's labels and annotations, nudge's state and seal
// included, as manager by a forced server-side apply: what Argo CD or Flux
// do with a manifest exported from the live object.
func writeBack(t *testing.T, d *appsv1.Deployment, manager string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	u.SetNamespace(d.Namespace)
	u.SetName(d.Name)
	u.SetLabels(d.Labels)
	u.SetAnnotations(d.Annotations)
	NewWithT(t).Expect(suite.K8s.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(manager), client.ForceOwnership)).To(Succeed(), "%s writing back the state of %s", manager, d.Name)
}

func updateData(t *testing.T, ns, name string) {
	t.Helper()
	g := NewWithT(t)
	var cm corev1.ConfigMap
	g.Expect(suite.K8s.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &cm)).To(Succeed())
	for k := range cm.Data {
		cm.Data[k] += "-changed"
	}
	g.Expect(suite.K8s.Update(t.Context(), &cm)).To(Succeed())
}

// projected mounts the keys of a ConfigMap or Secret through a projected volume.
func projected(kind, name string, keys ...string) nt.PodOption {
	return func(t *corev1.PodTemplateSpec) {
		var items []corev1.KeyToPath
		for _, k := range keys {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
		p := corev1.VolumeProjection{}
		if kind == "Secret" {
			p.Secret = &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}
		} else {
			p.ConfigMap = &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items}
		}
		t.Spec.Volumes = append(t.Spec.Volumes, corev1.Volume{Name: "p-" + name,
			VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{p}}}})
	}
}

// templateAnnotated is a StatefulSet whose pod template, not its metadata,
// carries annotations: Reloader reads them there too.
func templateAnnotated(ns, name string, annotations map[string]string, opts ...nt.PodOption) *appsv1.StatefulSet {
	s := nt.StatefulSet(ns, name, 1, nil, opts...)
	s.Spec.Template.Annotations = annotations
	return s
}

func cronJob(ns, name string, annotations map[string]string, opts ...nt.PodOption) *batchv1.CronJob {
	tmpl := nt.Template(name, opts...)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: batchv1.CronJobSpec{Schedule: "0 0 1 1 *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
	}
}

func job(ns, name string, annotations map[string]string, opts ...nt.PodOption) *batchv1.Job {
	tmpl := nt.Template(name, opts...)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec: batchv1.JobSpec{Template: tmpl, BackoffLimit: ptr.To[int32](0)}}
}

// TestExplainGated: a workload whose changed Secret's producer (an
// ExternalSecret, with its real CRD) is not ready is shown Gated, naming
// the producer and why; once it is Ready, the same change would roll.
func TestExplainGated(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	ns, err := suite.Plane.GenerateNamespace(ctx, "explain-gated-")
	g.Expect(err).NotTo(HaveOccurred())
	system, err := suite.Plane.GenerateNamespace(ctx, "explain-gated-system-")
	g.Expect(err).NotTo(HaveOccurred())
	nt.InstallCRD(t, suite.K8s, nt.ExternalSecretCRD(t))

	es := &unstructured.Unstructured{}
	es.SetGroupVersionKind(producer.ExternalSecret.WithVersion("v1"))
	es.SetNamespace(ns)
	es.SetName("vault-db")
	es.Object["spec"] = map[string]any{"refreshInterval": "1h", "secretStoreRef": map[string]any{"kind": "SecretStore", "name": "vault"},
		"target": map[string]any{"name": "db"}}
	g.Expect(suite.K8s.Create(ctx, es)).To(Succeed())
	secret := nt.Secret(ns, "db", map[string]string{"password": "p"})
	secret.OwnerReferences = []metav1.OwnerReference{{APIVersion: es.GetAPIVersion(), Kind: es.GetKind(), Name: es.GetName(),
		UID: es.GetUID(), Controller: ptr.To(true)}}
	g.Expect(suite.K8s.Create(ctx, secret)).To(Succeed())
	d := nt.Deployment(ns, "gated", 1, map[string]string{"nudge.dev/auto": "true"}, nt.EnvFrom("Secret", "db"))
	g.Expect(suite.K8s.Create(ctx, d)).To(Succeed())

	n := nt.Start(t, suite.Plane.Config(), ns, func(o *options.Options) { o.SystemNamespace = system })
	g.Eventually(func() string {
		g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		return d.Annotations[workload.AppliedAnnotation]
	}).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "nudge to record the baseline of %s", d.Name)
	n.Stop(t)

	// The producer rewrites the Secret and is not Ready (yet).
	g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(secret), secret)).To(Succeed())
	secret.Data["password"] = []byte("q")
	g.Expect(suite.K8s.Update(ctx, secret)).To(Succeed())
	setReady := func(status string) {
		g.Expect(suite.K8s.Get(ctx, client.ObjectKeyFromObject(es), es)).To(Succeed())
		es.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": status,
			"reason": "SecretSyncedError", "message": "could not reach the store", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
		g.Expect(suite.K8s.Status().Update(ctx, es)).To(Succeed())
	}
	setReady("False")
	args := []string{"explain", "deployment/gated", "--kubeconfig", suite.Plane.Kubeconfig(), "-n", ns, "--system-namespace", system}
	out, err := run(t, pluginCommand(), args...)
	g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Status: +Gated`), "explain:\n%s", out)
	g.Expect(out).To(ContainSubstring("ExternalSecret "+ns+"/vault-db is not ready (Ready is False: SecretSyncedError"), "explain:\n%s", out)
	g.Expect(out).To(ContainSubstring("--producer-ready-timeout (2m0s)"), "explain:\n%s", out)

	setReady("True")
	out, err = run(t, pluginCommand(), args...)
	g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Status: +WouldRoll`), "the producer Ready, the change rolls:\n%s", out)

	out, err = run(t, pluginCommand(), append(args, "--producer-ready-timeout=0")...)
	g.Expect(err).NotTo(HaveOccurred(), "explain:\n%s", out)
	g.Expect(out).To(MatchRegexp(`Status: +WouldRoll`), "without the gate, the change rolls:\n%s", out)
}
