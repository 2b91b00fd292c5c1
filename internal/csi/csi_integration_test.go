package csi_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/dialect"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// csiOn is --enable-csi-integration.
func csiOn(o *options.Options) { o.Reloader.EnableCSIIntegration = true }

// classEntry is the start of a SecretProviderClass's entry in the applied
// fingerprint of a workload of its namespace.
func classEntry(class string) string { return " SecretProviderClass/" + class + "=" }

// counted waits until nudge counts the SecretProviderClass class for the
// Deployment: its entry is in the applied fingerprint.
func (e *env) counted(name, class string) {
	e.T.Helper()
	e.G.Eventually(func() string {
		return e.Deployment(name).Annotations[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).Should(ContainSubstring(classEntry(class)),
		"nudge to count SecretProviderClass %s for Deployment %s", class, name)
}

// updatePodStatus rewrites a SecretProviderClassPodStatus as mutate says, as
// the driver does (the whole object: no status subresource).
func (e *env) updatePodStatus(ps *unstructured.Unstructured, mutate func(*unstructured.Unstructured)) {
	e.T.Helper()
	e.G.Eventually(func() error {
		cur := ps.DeepCopy()
		if err := suite.K8s.Get(e.Ctx, client.ObjectKeyFromObject(ps), cur); err != nil {
			return err
		}
		mutate(cur)
		return suite.K8s.Update(e.Ctx, cur)
	}).WithTimeout(10*time.Second).Should(Succeed(), "updating SecretProviderClassPodStatus %s", ps.GetName())
}

// TestSecretsStoreCSI pins --enable-csi-integration: a rotation of a
// SecretProviderClass (new versions in its pods' SecretProviderClassPodStatuses)
// rolls each workload that mounts it and selects it, once; first sight and a
// change of anything but the versions roll nothing.
func TestSecretsStoreCSI(t *testing.T) {
	nt.InstallCRD(t, suite.K8s, nt.PodStatusCRD(t))
	v1 := [][2]string{{"secret/db-password", "1"}, {"secret/db-user", "7"}}
	v2 := [][2]string{{"secret/db-password", "2"}, {"secret/db-user", "7"}}
	rotate := func(u *unstructured.Unstructured) { nt.SetPodStatusObjects(u, v2...) }

	tests := map[string]struct {
		mutate      func(*options.Options)
		annotations map[string]string
		want        int64
	}{
		"reloader.stakater.com/auto rolls on a rotation": {
			mutate: csiOn, annotations: map[string]string{dialect.ReloaderAuto: "true"}, want: 1,
		},
		"secretproviderclass.reloader.stakater.com/auto rolls on a rotation": {
			mutate: csiOn, annotations: map[string]string{dialect.ReloaderSecretProviderClassAuto: "true"}, want: 1,
		},
		"secretproviderclass.reloader.stakater.com/reload naming the class rolls on a rotation": {
			mutate: csiOn, annotations: map[string]string{dialect.ReloaderSecretProviderClassReload: "vault-db"}, want: 1,
		},
		"a reload pattern matching the class rolls on a rotation": {
			mutate: csiOn, annotations: map[string]string{dialect.ReloaderSecretProviderClassReload: "vault-.*"}, want: 1,
		},
		"a renamed reload annotation rolls on a rotation": {
			mutate: func(o *options.Options) {
				csiOn(o)
				o.Reloader.Annotations.SecretProviderClassReload = "csi.example.com/reload"
			},
			annotations: map[string]string{"csi.example.com/reload": "vault-db"}, want: 1,
		},
		"the exclude annotation keeps the class out": {
			mutate: csiOn, annotations: map[string]string{dialect.ReloaderAuto: "true", dialect.ReloaderExcludeSecretProviderClasses: "vault-db"},
		},
		"the Secret annotations do not select the class": {
			mutate: csiOn, annotations: map[string]string{dialect.ReloaderSecretAuto: "true"},
		},
		"without --enable-csi-integration nothing rolls": {
			annotations: map[string]string{dialect.ReloaderAuto: "true"},
		},
	}
	for desc, tc := range tests {
		t.Run(desc, func(t *testing.T) {
			e := setup(t, true, tc.mutate)
			ps := nt.PodStatus(e.NS, "web-5d8f7-x2k9q", "vault-db", v1...)
			other := nt.PodStatus(e.NS, "api-7c9d-p4m2n", "azure-api", v1...)
			e.Create(ps, other,
				nt.Deployment(e.NS, "web", 1, tc.annotations, nt.CSIVolume("vault-db")),
				nt.Deployment(e.NS, "api", 1, map[string]string{dialect.ReloaderAuto: "true"}, nt.CSIVolume("azure-api")),
			)
			e.Baselined("web")
			e.Baselined("api")
			if tc.want > 0 {
				e.counted("web", "vault-db")
			}
			e.RolledTo("web", 0)

			// Not a change of versions: labels, another pod with the same versions.
			e.updatePodStatus(ps, func(u *unstructured.Unstructured) {
				u.SetLabels(map[string]string{"internal.secrets-store.csi.k8s.io/node-name": "node-2", "team": "shop"})
			})
			e.Create(nt.PodStatus(e.NS, "web-5d8f7-h7v3c", "vault-db", v1...))
			e.RolledTo("web", 0)

			e.updatePodStatus(ps, rotate)
			e.RolledTo("web", tc.want)
			e.G.Expect(e.Rollouts("api")()).To(BeZero(), "a workload mounting another class does not roll")
			if tc.want == 0 {
				e.G.Expect(e.Deployment("web").Annotations[workload.AppliedAnnotation]).NotTo(ContainSubstring(classEntry("vault-db")))
			}
		})
	}
}

// TestSecretsStoreCSIOnlyMounted: a workload that does not mount the
// SecretProviderClass does not roll on its rotation, even in auto mode; one
// that mounts it rolls once per rotation, and its first pod status (the
// first mount) is a baseline, not a rollout.
func TestSecretsStoreCSIOnlyMounted(t *testing.T) {
	nt.InstallCRD(t, suite.K8s, nt.PodStatusCRD(t))
	e := setup(t, true, csiOn)
	auto := map[string]string{dialect.ReloaderAuto: "true"}
	e.Create(
		nt.Deployment(e.NS, "web", 1, auto, nt.CSIVolume("vault-db")),
		nt.Deployment(e.NS, "plain", 1, auto, nt.EnvFrom("ConfigMap", "app")),
		nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
	)
	e.Baselined("web")
	e.Baselined("plain")
	e.G.Expect(e.Deployment("web").Annotations[workload.AppliedAnnotation]).NotTo(ContainSubstring("SecretProviderClass"),
		"no pod has mounted the class yet")

	ps := nt.PodStatus(e.NS, "web-5d8f7-x2k9q", "vault-db", [2]string{"secret/db", "1"})
	e.Create(ps)
	e.counted("web", "vault-db")
	e.RolledTo("web", 0)

	for i, v := range []string{"2", "3"} {
		e.updatePodStatus(ps, func(u *unstructured.Unstructured) { nt.SetPodStatusObjects(u, [2]string{"secret/db", v}) })
		e.RolledTo("web", int64(i+1))
	}
	e.G.Expect(e.Rollouts("plain")()).To(BeZero(), "a workload not mounting the class does not roll")
	applied := e.Deployment("plain").Annotations[workload.AppliedAnnotation]
	e.G.Expect(strings.Contains(applied, "SecretProviderClass")).To(BeFalse(), "applied %q", applied)
}

// Rules 3 and 4 for SecretProviderClasses: a restart over unchanged versions
// rolls nothing; a rotation made while nudge was down rolls once when it
// starts. A class whose pods are all gone leaves the fingerprint without a
// rollout, and its next mount, whatever its versions, is a baseline.
func TestSecretsStoreCSIAcrossRestarts(t *testing.T) {
	nt.InstallCRD(t, suite.K8s, nt.PodStatusCRD(t))
	e := setup(t, true, csiOn)
	ps := nt.PodStatus(e.NS, "web-5d8f7-x2k9q", "vault-db", [2]string{"secret/db", "1"})
	e.Create(ps, nt.Deployment(e.NS, "web", 1, map[string]string{dialect.ReloaderAuto: "true"}, nt.CSIVolume("vault-db")))
	e.counted("web", "vault-db")
	e.Nudge.Stop(t)

	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, csiOn)
	e.RolledTo("web", 0)
	e.Nudge.Stop(t)

	e.updatePodStatus(ps, func(u *unstructured.Unstructured) { nt.SetPodStatusObjects(u, [2]string{"secret/db", "2"}) })
	e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero(), "no rollout while nudge is down")
	e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, csiOn)
	e.RolledTo("web", 1)

	e.G.Expect(suite.K8s.Delete(e.Ctx, ps)).To(Succeed())
	e.G.Eventually(func() string {
		return e.Deployment("web").Annotations[workload.AppliedAnnotation]
	}).WithTimeout(20*time.Second).ShouldNot(ContainSubstring(classEntry("vault-db")), "the unmounted class to leave the fingerprint")
	e.Create(nt.PodStatus(e.NS, "web-5d8f7-n8b2w", "vault-db", [2]string{"secret/db", "3"}))
	e.counted("web", "vault-db")
	e.RolledTo("web", 1)
}
