package binding_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
)

// An admission policy that refuses the apply and echoes the value it
// refused, as the target kind decoded it (the integer 73915028461, bound
// from the Secret's "073915028461"): the binding's status, its Warning
// Event and nudge's log say the apply was refused, with the value taken
// out.
func TestRefusalEchoingTheConvertedValueIsRedacted(t *testing.T) {
	e := setup(t, true, nil)
	const raw, echoed = "073915028461", "73915028461"
	name := "echo-" + e.ns
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"goharbor.io"}, APIVersions: []string{"*"}, Resources: []string{"harbors"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression:        "!has(object.spec.imageChartStorage.s3.chunksize)",
				MessageExpression: "'chunk size ' + string(object.spec.imageChartStorage.s3.chunksize) + ' is not allowed'",
				Reason:            ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: e.ns},
			}},
		},
	}
	e.create(policy, binding)
	t.Cleanup(func() {
		_ = suite.K8s.Delete(context.Background(), binding) // not e.ctx: it ends before the cleanup
		_ = suite.K8s.Delete(context.Background(), policy)
	})
	e.argoApply(harbor(e.ns, "harbor"))
	e.g.Eventually(func() error {
		h := e.getHarbor("harbor")
		return suite.K8s.Patch(e.ctx, h, client.RawPatch("application/merge-patch+json",
			[]byte(`{"spec":{"imageChartStorage":{"s3":{"chunksize":`+echoed+`}}}}`)), client.DryRunAll)
	}).WithTimeout(20*time.Second).Should(MatchError(ContainSubstring("chunk size "+echoed+" is not allowed")),
		"the API server to enforce the policy, echoing the value")

	e.create(nt.Secret(e.ns, "s3-tuning", map[string]string{"chunk": raw}))
	chunk := fromSecret("spec.imageChartStorage.s3.chunksize", "s3-tuning", "chunk")
	chunk.Type = v1alpha1.TypeInteger
	e.create(valueBinding(e.ns, "chunk", "harbor", chunk))
	c := e.waitReason("chunk", v1alpha1.ReasonRefused)
	e.g.Expect(c.Message).To(ContainSubstring("chunk size [redacted] is not allowed"), "the refusal, kept")
	e.g.Expect(c.Message).NotTo(ContainSubstring(echoed), "the status")
	e.g.Eventually(e.events(v1alpha1.ReasonRefused)).WithTimeout(30*time.Second).Should(ContainElement(
		HaveField("Note", ContainSubstring("[redacted]"))), "a Warning Event")
	for _, ev := range e.events(v1alpha1.ReasonRefused)() {
		e.g.Expect(ev.Note).NotTo(ContainSubstring(echoed), "the Event")
	}
	e.g.Expect(e.nudge.Logs()).To(ContainSubstring("[redacted]"), "the log says why")
	for _, line := range strings.Split(e.nudge.Logs(), "\n") {
		e.g.Expect(line).NotTo(ContainSubstring(echoed), "the log")
	}
}
