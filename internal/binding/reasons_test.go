package binding_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
)

// Every reason a binding is not applied, each with a message that names what
// is wrong and never the value.
func TestReadyFalseReasons(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.ValueBindingTargets = []string{harborKind, "Namespace"} })
	const value = "AKIA-NOT-A-NUMBER-7"
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": value}))
	e.argoApply(harbor(e.ns, "harbor"))
	const ak = "spec.imageChartStorage.s3.accesskey"

	chunk := fromSecret("spec.imageChartStorage.s3.chunksize", "s3-credentials", "accesskey")
	chunkInt := chunk
	chunkInt.Type = v1alpha1.TypeInteger
	configMap := valueBinding(e.ns, "configmap", "x", fromSecret("data.x", "s3-credentials", "accesskey"))
	configMap.Spec.Target = v1alpha1.TargetReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}
	namespace := valueBinding(e.ns, "namespace", e.ns, fromSecret("metadata.annotations['x.io/y']", "s3-credentials", "accesskey"))
	namespace.Spec.Target = v1alpha1.TargetReference{APIVersion: "v1", Kind: "Namespace", Name: e.ns}
	tests := map[string]struct {
		binding *v1alpha1.ValueBinding
		reason  string
		message string
	}{
		"a Secret that does not exist": {
			binding: valueBinding(e.ns, "no-secret", "harbor", fromSecret(ak, "missing", "accesskey")),
			reason:  v1alpha1.ReasonSourceNotFound, message: "Secret missing does not exist",
		},
		"a ConfigMap that does not exist": {
			binding: valueBinding(e.ns, "no-configmap", "harbor", fromConfigMap("spec.imageChartStorage.s3.region", "missing", "region")),
			reason:  v1alpha1.ReasonSourceNotFound, message: "ConfigMap missing does not exist",
		},
		"a key the Secret does not have": {
			binding: valueBinding(e.ns, "no-key", "harbor", fromSecret(ak, "s3-credentials", "nokey")),
			reason:  v1alpha1.ReasonKeyNotFound, message: "Secret s3-credentials has no key nokey",
		},
		"a target that does not exist": {
			binding: valueBinding(e.ns, "no-target", "absent", fromSecret(ak, "s3-credentials", "accesskey")),
			reason:  v1alpha1.ReasonTargetNotFound, message: "Harbor absent does not exist",
		},
		"a field path that does not parse": {
			binding: valueBinding(e.ns, "bad-path", "harbor", fromSecret("spec.imageChartStorage..s3", "s3-credentials", "accesskey")),
			reason:  v1alpha1.ReasonInvalidFieldPath, message: "values[0].fieldPath: invalid field path",
		},
		"a value that is not an integer": {
			binding: valueBinding(e.ns, "bad-value", "harbor", chunkInt),
			reason:  v1alpha1.ReasonInvalidValue, message: "key accesskey of Secret s3-credentials for spec.imageChartStorage.s3.chunksize: invalid value: not a base-10 64-bit integer",
		},
		"a value the API server refuses": {
			binding: valueBinding(e.ns, "refused-value", "harbor", chunk),
			reason:  v1alpha1.ReasonRefused, message: "the API server refused the apply to Harbor harbor: ",
		},
		"a value the target's schema refuses": {
			binding: valueBinding(e.ns, "invalid-value", "harbor", fromSecret("spec.imageChartStorage.s3.storageclass", "s3-credentials", "accesskey")),
			reason:  v1alpha1.ReasonRefused, message: "the API server refused the apply to Harbor harbor as invalid: spec.imageChartStorage.s3.storageclass (FieldValueNotSupported)",
		},
		"a kind not in --value-binding-targets": {
			binding: configMap,
			reason:  v1alpha1.ReasonRefused, message: "kind ConfigMap is not in nudge's --value-binding-targets",
		},
		"a cluster-scoped target": {
			binding: namespace,
			reason:  v1alpha1.ReasonRefused, message: "v1 Namespace is cluster-scoped",
		},
	}
	for _, tc := range tests {
		e.create(tc.binding)
	}
	for name, tc := range tests {
		c := e.waitReason(tc.binding.Name, tc.reason)
		e.g.Expect(c.Status).To(Equal(metav1.ConditionFalse), name)
		e.g.Expect(c.Message).To(ContainSubstring(tc.message), name)
		e.g.Expect(c.Message).NotTo(ContainSubstring(value), name)
		e.g.Eventually(e.events(tc.reason)).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "a Warning Event for %s", name)
	}
	// An optional source or key that is missing is no error: that field
	// alone is left out.
	e.create(valueBinding(e.ns, "optional", "harbor",
		optional(fromSecret("spec.imageChartStorage.s3.keyid", "missing", "keyid")),
		optional(fromSecret("spec.imageChartStorage.s3.regionendpoint", "s3-credentials", "nokey")),
		fromSecret(ak, "s3-credentials", "accesskey")))
	e.waitReason("optional", v1alpha1.ReasonApplied)
	e.g.Expect(e.field("harbor", accessKey...)()).To(Equal(value))
	e.g.Expect(e.field("harbor", "spec", "imageChartStorage", "s3", "keyid")()).To(BeNil())
	e.g.Expect(e.field("harbor", "spec", "imageChartStorage", "s3", "regionendpoint")()).To(BeNil())
}

// A target created later is applied then; until then nothing is written, and
// nudge never creates it.
func TestTargetAppliedOnceCreated(t *testing.T) {
	e := setup(t, true, nil)
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	e.create(valueBinding(e.ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))
	e.waitReason("harbor-s3", v1alpha1.ReasonTargetNotFound)
	e.g.Consistently(e.harborExists("harbor")).WithTimeout(3*time.Second).Should(BeFalse(), "nudge never creates the target")

	e.argoApply(harbor(e.ns, "harbor"))
	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30*time.Second).Should(Equal("AK1"), "the access key applied once the Harbor exists")
	e.waitReason("harbor-s3", v1alpha1.ReasonApplied)

	// Deleted and created again: applied to the new Harbor.
	e.g.Expect(suite.K8s.Delete(e.ctx, e.getHarbor("harbor"))).To(Succeed())
	e.waitReason("harbor-s3", v1alpha1.ReasonTargetNotFound)
	e.argoApply(harbor(e.ns, "harbor"))
	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30*time.Second).Should(Equal("AK1"), "the access key applied to the new Harbor")
}

// With no --value-binding-targets every binding is refused, with a message
// naming the flag.
func TestNoTargetsRefusesEveryBinding(t *testing.T) {
	e := setup(t, true, func(o *options.Options) { o.ValueBindingTargets = nil })
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	e.argoApply(harbor(e.ns, "harbor"))
	e.create(valueBinding(e.ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))
	c := e.waitReason("harbor-s3", v1alpha1.ReasonRefused)
	e.g.Expect(c.Message).To(ContainSubstring("--value-binding-targets is empty"))
	e.g.Expect(e.field("harbor", accessKey...)()).To(BeNil())
}

func (e *env) harborExists(name string) func() bool {
	return func() bool {
		u := harbor(e.ns, name)
		return suite.K8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, u) == nil
	}
}
