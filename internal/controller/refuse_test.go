package controller_test

import (
	"context"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// refuse makes the API server refuse, in e's namespace only, the operations
// of rule on objects for which expression (CEL) is false, with message, by a
// ValidatingAdmissionPolicy named name; it returns once probe, a dry-run
// write, fails with message. The func it returns lifts the refusal and
// returns once probe succeeds again; the policy is removed at the test's end
// in any case.
func (e *env) refuse(name string, rule admissionregistrationv1.RuleWithOperations, expression, message string, probe func() error) (allow func()) {
	e.t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: rule,
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: expression, Message: message}},
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
	e.g.Expect(k8s.Create(e.ctx, policy)).To(Succeed())
	e.g.Expect(k8s.Create(e.ctx, binding)).To(Succeed())
	remove := func() {
		for _, o := range []client.Object{binding, policy} {
			// Not e.ctx: it ends before the test's cleanup runs.
			if err := k8s.Delete(context.Background(), o); err != nil && !apierrors.IsNotFound(err) {
				e.t.Errorf("Deleting %s: %v", o.GetName(), err)
			}
		}
	}
	e.t.Cleanup(remove)
	e.g.Eventually(probe).WithTimeout(20*time.Second).Should(MatchError(ContainSubstring(message)),
		"the API server to enforce the policy %s", name)
	return func() {
		e.t.Helper()
		remove()
		e.g.Eventually(probe).WithTimeout(20*time.Second).Should(Succeed(), "the API server to accept again what %s refused", name)
	}
}
