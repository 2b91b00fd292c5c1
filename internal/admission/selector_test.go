package admission

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNamespaceSelector(t *testing.T) {
	name := func(op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: op, Values: values}
	}
	tests := map[string]struct {
		namespaces, ignored []string
		selector            string
		want                []metav1.LabelSelectorRequirement // nil: every namespace
		wantErr             string
	}{
		"no flag: every namespace": {},
		"--namespaces: those alone": {namespaces: []string{"shop", "billing"},
			want: []metav1.LabelSelectorRequirement{name(metav1.LabelSelectorOpIn, "shop", "billing")}},
		"--namespaces-to-ignore: all but those": {ignored: []string{"kube-system"},
			want: []metav1.LabelSelectorRequirement{name(metav1.LabelSelectorOpNotIn, "kube-system")}},
		"--namespace-selector: each term, equalities as In and inequalities as NotIn": {
			selector: "team=a,tier!=batch,env in (prod,staging),zone notin (eu),legacy,!old",
			want: []metav1.LabelSelectorRequirement{
				{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "staging"}},
				{Key: "legacy", Operator: metav1.LabelSelectorOpExists, Values: []string{}},
				{Key: "old", Operator: metav1.LabelSelectorOpDoesNotExist, Values: []string{}},
				{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}},
				{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"batch"}},
				{Key: "zone", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"eu"}},
			}},
		"all three: the names first, then the selector's terms": {namespaces: []string{"shop"}, ignored: []string{"billing"}, selector: "team==a",
			want: []metav1.LabelSelectorRequirement{name(metav1.LabelSelectorOpIn, "shop"), name(metav1.LabelSelectorOpNotIn, "billing"),
				{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: []string{"a"}}}},
		"a selector that does not parse":                     {selector: "a in (b", wantErr: `the namespace selector "a in (b"`},
		"a numeric comparison, which no LabelSelector holds": {selector: "tier>2", wantErr: "a webhook's namespaceSelector has no operator gt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := NamespaceSelector(tc.namespaces, tc.ignored, tc.selector)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tc.want == nil {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).To(Equal(&metav1.LabelSelector{MatchExpressions: tc.want}))
		})
	}
}
