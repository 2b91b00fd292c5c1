package binding_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
)

// The Harbor case end to end: the S3 access key in spec.imageChartStorage.s3
// follows the s3-credentials Secret, the fields Argo CD applied stay its own,
// and no value appears in nudge's logs, Events, status or metrics.
func TestHarborAccessKeyFollowsTheSecret(t *testing.T) {
	e := setup(t, true, nil)
	const first, second = "AKIAFIRSTVALUE0001", "AKIASECONDVALUE002"
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": first, "secretkey": "SK"}))
	e.argoApply(harbor(e.ns, "harbor"))
	e.create(valueBinding(e.ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))

	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30*time.Second).Should(Equal(first), "the access key applied")
	c := e.waitReason("harbor-s3", v1alpha1.ReasonApplied)
	e.g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
	fingerprint := func() string {
		var b v1alpha1.ValueBinding
		e.g.Expect(suite.K8s.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "harbor-s3"}, &b)).To(Succeed())
		return b.Status.AppliedFingerprint
	}
	before := fingerprint()
	e.g.Expect(before).NotTo(BeEmpty(), "the status records the applied fingerprint")

	e.updateSecret("s3-credentials", map[string]string{"accesskey": second})
	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30*time.Second).Should(Equal(second), "the rotated access key applied")
	// nudge writes the status in a reconcile after the apply's.
	e.g.Eventually(fingerprint).WithTimeout(30*time.Second).ShouldNot(Or(BeEmpty(), Equal(before)),
		"the status records the rotated Secret's fingerprint")

	h := e.getHarbor("harbor")
	e.g.Expect(e.managers("harbor", accessKey...)).To(ConsistOf("nudge"), "nudge owns the access key alone")
	for _, f := range []string{"bucket", "region", "secretkeyRef"} {
		e.g.Expect(e.managers("harbor", "spec", "imageChartStorage", "s3", f)).To(ConsistOf("argocd-controller"), "Argo CD keeps %s", f)
	}
	e.g.Expect(e.managers("harbor", "spec", "externalURL")).To(ConsistOf("argocd-controller"))
	s3 := h.Object["spec"].(map[string]any)["imageChartStorage"].(map[string]any)["s3"].(map[string]any)
	e.g.Expect(s3).To(HaveKeyWithValue("bucket", "images"))
	e.g.Expect(s3).To(HaveKeyWithValue("region", "eu-west-1"))
	for _, m := range h.GetManagedFields() {
		if m.Manager == "nudge" {
			e.g.Expect(string(m.FieldsV1.GetRawBytes())).To(MatchJSON(`{"f:spec":{"f:imageChartStorage":{"f:s3":{"f:accesskey":{}}}}}`),
				"nudge's apply holds the bound field alone")
		}
	}

	var applied []eventsv1.Event
	e.g.Eventually(func() int { applied = e.events(v1alpha1.ReasonApplied)(); return len(applied) }).
		WithTimeout(30*time.Second).Should(BeNumerically(">=", 2), "an Applied Event per change")
	for _, ev := range applied {
		e.g.Expect(ev.Note).To(ContainSubstring("key accesskey of Secret s3-credentials to spec.imageChartStorage.s3.accesskey"))
		e.g.Expect(ev.Regarding.Name).To(Equal("harbor-s3"))
	}

	e.expectSecret(first, second)
}

// expectSecret checks that no value (nor its base64) appears in nudge's
// logs, the namespace's Events, the bindings' status or nudge's metrics.
func (e *env) expectSecret(values ...string) {
	e.t.Helper()
	var forms []string
	for _, v := range values {
		forms = append(forms, v, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	var evs eventsv1.EventList
	e.g.Expect(suite.K8s.List(e.ctx, &evs, client.InNamespace(e.ns))).To(Succeed())
	events, err := json.Marshal(evs.Items)
	e.g.Expect(err).NotTo(HaveOccurred())
	var bindings v1alpha1.ValueBindingList
	e.g.Expect(suite.K8s.List(e.ctx, &bindings, client.InNamespace(e.ns))).To(Succeed())
	var status []byte
	for _, b := range bindings.Items {
		s, err := json.Marshal(b.Status)
		e.g.Expect(err).NotTo(HaveOccurred())
		status = append(status, s...)
	}
	families, err := metrics.Registry.Gather()
	e.g.Expect(err).NotTo(HaveOccurred())
	var m strings.Builder
	for _, f := range families {
		_, err := expfmt.MetricFamilyToText(&m, f)
		e.g.Expect(err).NotTo(HaveOccurred())
	}
	e.g.Expect(m.Len()).To(BeNumerically(">", 0), "the metrics were gathered")
	logs := e.nudge.Logs()
	e.g.Expect(logs).To(ContainSubstring("Applied ValueBinding"), "the logs were read")
	for where, text := range map[string]string{"logs": logs, "Events": string(events), "status": string(status), "metrics": m.String()} {
		for _, f := range forms {
			e.g.Expect(text).NotTo(ContainSubstring(f), "a value in nudge's %s", where)
		}
	}
}
