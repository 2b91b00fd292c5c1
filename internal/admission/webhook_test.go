package admission_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// replace writes obj, a workload's manifest without nudge's keys, over the
// live one, as kubectl replace and an owner's update do: the whole object,
// at the live resourceVersion. obj is updated from the response.
func (e *env) replace(obj client.Object, opts ...client.UpdateOption) error {
	// As an owner's replace does (kubectl replace, a GitOps sync), a
	// conflict with a write made between the read and the update (obj is
	// then left as it was) is retried at the version read again.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		live := obj.DeepCopyObject().(client.Object)
		if err := suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			return err
		}
		obj.SetResourceVersion(live.GetResourceVersion())
		return suite.K8s.Update(e.Ctx, obj, opts...)
	})
}

// webhookServes waits until the API server calls the webhook: a dry-run
// replace of the workload with its manifest (build) comes back with the
// trigger of k kept.
func (e *env) webhookServes(k workload.Kind, build func() client.Object) {
	e.T.Helper()
	e.G.Eventually(func() map[string]string {
		obj := build()
		if err := e.replace(obj, client.DryRunAll); err != nil {
			return nil
		}
		return k.Template(obj).Annotations
	}).WithTimeout(30*time.Second).Should(HaveKey(workload.RestartedAtAnnotation),
		"the API server to call the webhook at %s", e.addr)
}

// Rule 6 with --admission-webhook: an owner that replaces the whole
// Deployment with its manifest after nudge rolled it changes no pod
// template when the webhook runs, and nudge's state stays as it was, so
// the next change rolls once; without the webhook the owner's write is a
// rollout of its own (TestRewrittenWorkloadIsNotRolledAgain), after which
// nudge records a new baseline.
func TestOwnerReplaceWithWebhookRollsNothing(t *testing.T) {
	tests := map[string]struct {
		webhook bool
		// rollouts after nudge's rollout and the owner's replace.
		rollouts int64
	}{
		"with the webhook the owner's replace rolls nothing":              {webhook: true, rollouts: 1},
		"without the webhook the owner's replace is a rollout of its own": {webhook: false, rollouts: 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, tc.webhook)
			manifest := func() client.Object {
				return nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
			}
			e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), manifest())
			e.Baselined("web")
			e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
			e.RolledTo("web", 1)
			rolled := e.Deployment("web")
			if tc.webhook {
				e.webhookServes(workload.Deployment, manifest)
			}

			e.G.Expect(e.replace(manifest())).To(Succeed(), "the owner replacing the Deployment with its manifest")
			e.RolledTo("web", tc.rollouts)
			live := e.Deployment("web")
			if tc.webhook {
				e.G.Expect(live.Spec.Template).To(Equal(rolled.Spec.Template), "the pod template as nudge rolled it")
				e.G.Expect(live.Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, rolled.Annotations[workload.AppliedAnnotation]), "nudge's state kept")
				e.G.Expect(live.Labels).To(HaveKeyWithValue(workload.SealLabel, rolled.Labels[workload.SealLabel]), "nudge's seal kept")
			} else {
				e.G.Expect(live.Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation))
				e.Baselined("web")
			}

			e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
			e.RolledTo("web", tc.rollouts+1)
		})
	}
}

// The webhook keeps nudge's state with the template, so that a change nudge
// has not rolled yet when the owner replaces the workload (here one that
// waits for the end of the rollout window) is still rolled: the replace
// strips nudge's applied state, and a nudge that saw none would record the
// new content as what the pods run (rule 3) while the kept template keeps
// the pods on the old content.
func TestChangeWaitingAtTheReplaceIsRolled(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 20 * time.Second })
	manifest := func() client.Object {
		return nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
	}
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), manifest())
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(e.Rollouts("web")).WithTimeout(20*time.Second).Should(BeEquivalentTo(1), "nudge's first rollout")
	e.webhookServes(workload.Deployment, manifest)
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" }) // waits for the window's end

	e.G.Expect(e.replace(manifest())).To(Succeed(), "the owner replacing the Deployment with its manifest")
	e.G.Expect(e.Rollouts("web")()).To(BeEquivalentTo(1), "the replace rolled nothing")
	e.G.Eventually(e.Rollouts("web")).WithTimeout(40*time.Second).Should(BeEquivalentTo(2), "the waiting change rolled at the window's end")
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3 * time.Second).Should(BeEquivalentTo(2))
	e.G.Expect(e.Deployment("web").Spec.Template.Annotations).To(HaveKeyWithValue(workload.RestartedForAnnotation, "ConfigMap "+e.NS+"/app"))
}

// Under Reloader's env-vars strategy the trigger is a STAKATER_ env var:
// the webhook keeps it too.
func TestEnvVarsTriggerIsKept(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.ReloadStrategy = "env-vars" })
	manifest := func() client.Object {
		return nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
	}
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), manifest())
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	rolled := e.Deployment("web")
	e.G.Expect(rolled.Spec.Template.Spec.Containers[0].Env).To(ContainElement(HaveField("Name", "STAKATER_APP_CONFIGMAP")))
	e.G.Eventually(func() []corev1.EnvVar {
		d := manifest().(*appsv1.Deployment)
		if err := e.replace(d, client.DryRunAll); err != nil {
			return nil
		}
		return d.Spec.Template.Spec.Containers[0].Env
	}).WithTimeout(30*time.Second).Should(ContainElement(HaveField("Name", "STAKATER_APP_CONFIGMAP")), "the API server to call the webhook")

	e.G.Expect(e.replace(manifest())).To(Succeed(), "the owner replacing the Deployment with its manifest")
	e.RolledTo("web", 1)
	e.G.Expect(e.Deployment("web").Spec.Template).To(Equal(rolled.Spec.Template))
}

// An owner whose write changes the pod template beyond the trigger (a new
// image) rolls the Deployment: the webhook leaves that write alone.
func TestOwnerTemplateChangeIsLeftAlone(t *testing.T) {
	e := setup(t, true)
	manifest := func(image string) func() client.Object {
		return func() client.Object {
			d := nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
			d.Spec.Template.Spec.Containers[0].Image = image
			return d
		}
	}
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), manifest("registry.example/app:1")())
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.webhookServes(workload.Deployment, manifest("registry.example/app:1"))

	e.G.Expect(e.replace(manifest("registry.example/app:2")())).To(Succeed(), "the owner replacing the Deployment with a new image")
	e.RolledTo("web", 2)
	live := e.Deployment("web")
	e.G.Expect(live.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/app:2"))
	e.G.Expect(live.Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation), "the owner's template as written")
}

// The webhook fails open: with nudge (and its webhook server) stopped, the
// owner's write is admitted as it is.
func TestWebhookFailsOpen(t *testing.T) {
	e := setup(t, true)
	manifest := func() client.Object {
		return nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
	}
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), manifest())
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	e.webhookServes(workload.Deployment, manifest)

	e.Nudge.Stop(t)
	start := time.Now()
	e.G.Expect(e.replace(manifest())).To(Succeed(), "the owner's replace with the webhook down")
	e.G.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second), "admitted without waiting out the webhook's timeout twice")
	e.RolledTo("web", 2)
	e.G.Expect(e.Deployment("web").Spec.Template.Annotations).NotTo(HaveKey(workload.RestartedAtAnnotation), "the write as the owner sent it")
}

// Every kind nudge rolls by a template write keeps its trigger through an
// owner's replace: its spec (hence its generation) does not change.
func TestEveryKindKeepsItsTrigger(t *testing.T) {
	tests := map[string]struct {
		kind  workload.Kind
		build func(ns string) client.Object
		crd   bool
	}{
		"a StatefulSet": {kind: workload.StatefulSet, build: func(ns string) client.Object {
			return nt.StatefulSet(ns, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
		}},
		"a DaemonSet": {kind: workload.DaemonSet, build: func(ns string) client.Object {
			return nt.DaemonSet(ns, "web", auto, nt.EnvFrom("ConfigMap", "app"))
		}},
		"a CronJob": {kind: workload.CronJob, build: func(ns string) client.Object {
			t := nt.Template("web", nt.EnvFrom("ConfigMap", "app"))
			t.Spec.RestartPolicy = corev1.RestartPolicyNever
			return &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Annotations: auto},
				Spec:       batchv1.CronJobSpec{Schedule: "0 0 1 1 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: t}}},
			}
		}},
		"an Argo Rollout": {kind: workload.Rollout, crd: true, build: func(ns string) client.Object {
			return nt.Rollout(ns, "web", auto, nt.EnvFrom("ConfigMap", "app"))
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.crd {
				nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
			}
			e := setup(t, true)
			manifest := func() client.Object { return tc.build(e.NS) }
			obj := manifest()
			e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), obj)
			e.BaselinedObj(obj)
			e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
			e.G.Eventually(func() map[string]string {
				e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
				return tc.kind.Template(obj).Annotations
			}).WithTimeout(20*time.Second).Should(HaveKey(workload.RestartedAtAnnotation), "nudge to roll %s", name)
			rolled := *tc.kind.Template(obj)
			generation := obj.GetGeneration()
			e.webhookServes(tc.kind, manifest)

			e.G.Expect(e.replace(manifest())).To(Succeed(), "the owner replacing %s with its manifest", name)
			e.G.Consistently(e.Generation(obj)).WithTimeout(3*time.Second).Should(Equal(generation), "no change of the spec")
			e.G.Expect(*tc.kind.Template(obj)).To(Equal(rolled), "the pod template as nudge rolled it")
		})
	}
}

// An Argo Rollout rolled by spec.restartAt (Reloader's rollout-strategy
// "restart") keeps it, and nudge's state, through an owner's replace with
// its manifest, which leaves the pod template as it was: a restart in
// progress is not cut short, and the next change rolls.
func TestRolloutRestartAtIsKept(t *testing.T) {
	nt.InstallCRD(t, suite.K8s, nt.RolloutCRD(t))
	e := setup(t, true)
	manifest := func() *unstructured.Unstructured {
		return nt.Rollout(e.NS, "web", map[string]string{"nudge.dev/auto": "true", "reloader.stakater.com/rollout-strategy": "restart"},
			nt.EnvFrom("ConfigMap", "app"))
	}
	obj := manifest()
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), obj)
	e.BaselinedObj(obj)
	restartAt := func(o *unstructured.Unstructured) string {
		s, _, _ := unstructured.NestedString(o.Object, "spec", "restartAt")
		return s
	}
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.G.Eventually(func() string {
		e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return restartAt(obj)
	}).WithTimeout(20*time.Second).ShouldNot(BeEmpty(), "nudge to roll the Rollout by spec.restartAt")
	rolled := obj.DeepCopy()
	e.G.Eventually(func() string {
		o := manifest()
		if err := e.replace(o, client.DryRunAll); err != nil {
			return ""
		}
		return restartAt(o)
	}).WithTimeout(30*time.Second).Should(Equal(restartAt(rolled)), "the API server to call the webhook at %s", e.addr)

	e.G.Expect(e.replace(manifest())).To(Succeed(), "the owner replacing the Rollout with its manifest")
	e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
	e.G.Expect(restartAt(obj)).To(Equal(restartAt(rolled)), "spec.restartAt as nudge wrote it")
	e.G.Expect(obj.GetAnnotations()).To(HaveKeyWithValue(workload.AppliedAnnotation, rolled.GetAnnotations()[workload.AppliedAnnotation]), "nudge's state kept")
	e.G.Expect(obj.GetLabels()).To(HaveKeyWithValue(workload.SealLabel, rolled.GetLabels()[workload.SealLabel]), "nudge's seal kept")

	// The state kept is the rolled one: the next change rolls.
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
	e.G.Eventually(func() string {
		e.G.Expect(suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		return obj.GetAnnotations()[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).ShouldNot(Equal(rolled.GetAnnotations()[workload.AppliedAnnotation]), "nudge to roll the next change")
}

// Rule 6 with --admission-webhook, for a Flux HelmRelease-style owner:
// helm-controller upgrades the release by replacing the Deployment
// (spec.upgrade.force) with the chart's manifest as its post-renderer
// rewrote it (a label and an annotation of the pod template added, a
// kustomize patch), which holds no trigger of nudge's. The webhook keeps
// the trigger and nudge's state: the upgrade of unchanged content rolls
// nothing, and the next change rolls once.
func TestFluxHelmReleasePostRenderedUpgradeRollsNothing(t *testing.T) {
	e := setup(t, true)
	postRendered := func() client.Object {
		d := nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app"))
		d.Labels = map[string]string{"helm.toolkit.fluxcd.io/name": "web", "helm.toolkit.fluxcd.io/namespace": e.NS}
		d.Spec.Template.Labels["team"] = "shop"
		d.Spec.Template.Annotations = map[string]string{"post-renderer.example/patched": "true"}
		return d
	}
	helmController := client.FieldOwner("helm-controller")
	e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), postRendered())
	e.Baselined("web")
	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
	e.RolledTo("web", 1)
	rolled := e.Deployment("web")
	e.webhookServes(workload.Deployment, postRendered)

	for range 2 { // each reconcile of the HelmRelease upgrades it again
		e.G.Expect(e.replace(postRendered(), helmController)).To(Succeed(), "helm-controller upgrading the release")
	}
	e.G.Consistently(e.Rollouts("web")).WithTimeout(3*time.Second).Should(BeEquivalentTo(1), "the upgrades rolled nothing")
	live := e.Deployment("web")
	e.G.Expect(live.Spec.Template).To(Equal(rolled.Spec.Template), "the pod template as nudge rolled it, post-rendered")
	e.G.Expect(live.Spec.Template.Annotations).To(HaveKeyWithValue("post-renderer.example/patched", "true"))
	e.G.Expect(live.Annotations).To(HaveKeyWithValue(workload.AppliedAnnotation, rolled.Annotations[workload.AppliedAnnotation]), "nudge's state kept")

	e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "3" })
	e.RolledTo("web", 2)
}
