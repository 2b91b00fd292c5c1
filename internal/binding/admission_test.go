package binding_test

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/api/v1alpha1"
)

// The CRD's schema and CEL rules refuse a malformed binding at admission.
func TestCRDRefusesMalformedBindings(t *testing.T) {
	e := setup(t, false, nil)
	ak := fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")
	both := ak
	both.ValueFrom.ConfigMapKeyRef = &v1alpha1.KeySelector{Name: "s3-settings", Key: "accesskey"}
	neither := ak
	neither.ValueFrom = v1alpha1.ValueSource{}
	blank := ak
	blank.FieldPath = "  "
	float := ak
	float.Type = "float"
	many := make([]v1alpha1.BoundValue, 65)
	for i := range many {
		many[i] = fromSecret(fmt.Sprintf("spec.a%d", i), "s3-credentials", "accesskey")
	}
	tests := map[string]struct {
		values []v1alpha1.BoundValue
		policy v1alpha1.DeletionPolicy
		want   string
	}{
		"both a Secret and a ConfigMap":    {values: []v1alpha1.BoundValue{both}, want: "exactly one of secretKeyRef and configMapKeyRef must be set"},
		"neither a Secret nor a ConfigMap": {values: []v1alpha1.BoundValue{neither}, want: "exactly one of secretKeyRef and configMapKeyRef must be set"},
		"a blank field path":               {values: []v1alpha1.BoundValue{blank}, want: "fieldPath must not be empty"},
		"a type that is not one of three":  {values: []v1alpha1.BoundValue{float}, want: `Unsupported value: "float"`},
		"more than 64 values":              {values: many, want: "must have at most 64 items"},
		"no value":                         {values: []v1alpha1.BoundValue{}, want: "should have at least 1 items"},
		"an unknown deletion policy":       {values: []v1alpha1.BoundValue{ak}, policy: "Keep", want: `Unsupported value: "Keep"`},
	}
	i := 0
	for name, tc := range tests {
		i++
		b := valueBinding(e.ns, fmt.Sprintf("bad-%d", i), "harbor", tc.values...)
		b.Spec.DeletionPolicy = tc.policy
		e.g.Expect(suite.K8s.Create(e.ctx, b)).To(MatchError(ContainSubstring(tc.want)), name)
	}
	good := valueBinding(e.ns, "good", "harbor", ak)
	e.g.Expect(suite.K8s.Create(e.ctx, good)).To(Succeed())
	e.g.Expect(good.Spec.DeletionPolicy).To(Equal(v1alpha1.DeletionOrphan), "Orphan is the default")
	e.g.Expect(good.Spec.Values[0].Type).To(Equal(v1alpha1.TypeString), "string is the default type")
}
