package sources

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestPackedLabels: packed labels read as the labels they pack, for a
// label selector, and equal sets pack alike.
func TestPackedLabels(t *testing.T) {
	tests := map[string]struct {
		labels   map[string]string
		selector string
		want     bool
	}{
		"no labels match a negation":             {selector: "!app", want: true},
		"no labels match no requirement":         {selector: "app=dash"},
		"a label matches its equality":           {labels: map[string]string{"app": "dash"}, selector: "app=dash", want: true},
		"a prefixed key matches":                 {labels: map[string]string{"app.kubernetes.io/name": "grafana", "b": ""}, selector: "app.kubernetes.io/name in (grafana,loki)", want: true},
		"an empty value is a value":              {labels: map[string]string{"a": "", "b": "x"}, selector: "a,b=x", want: true},
		"a key is not a prefix of another":       {labels: map[string]string{"apps": "dash"}, selector: "app"},
		"a value is not taken for another's key": {labels: map[string]string{"x": "app"}, selector: "app"},
		"an inequality reads the value":          {labels: map[string]string{"app": "dash", "tier": "web"}, selector: "app=dash,tier!=web"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			sel, err := labels.Parse(tt.selector)
			g.Expect(err).NotTo(HaveOccurred())
			packed := PackLabels(tt.labels)
			g.Expect(sel.Matches(packed)).To(Equal(tt.want))
			g.Expect(sel.Matches(labels.Set(tt.labels))).To(Equal(tt.want), "as the labels themselves")
			for k, v := range tt.labels {
				got, ok := packed.Lookup(k)
				g.Expect(ok).To(BeTrue())
				g.Expect(got).To(Equal(v))
			}
		})
	}
	g := NewWithT(t)
	g.Expect(PackLabels(map[string]string{"b": "2", "a": "1"})).To(Equal(PackedLabels("a=1\nb=2")), "sorted by key")
	cm := cached(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "a=1"}})
	g.Expect(Labels(cm).Get("a")).To(Equal("1"), "a cached source's labels are packed")
	api := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "a=1", Labels: map[string]string{"b": "2"}}}
	g.Expect(Labels(api).Has("a")).To(BeFalse(), "an object of the API has its own")
	g.Expect(Labels(api).Get("b")).To(Equal("2"))
}

// cached returns obj marked digested, as nudge's cache holds it (see
// DigestedSelfLink), its content empty.
func cached[T client.Object](obj T) T {
	obj.SetSelfLink(digestedMark)
	return obj
}
