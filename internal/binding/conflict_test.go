package binding_test

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/api/v1alpha1"
	nt "nudge.dev/nudge/internal/nudgetest"
)

// Another field manager that sets a bound field back is corrected, twice; the
// third overwrite stops the binding (Conflict, naming the manager) until a
// source changes.
func TestConflictStopsAndResumes(t *testing.T) {
	e := setup(t, true, nil)
	e.create(nt.Secret(e.ns, "s3-credentials", map[string]string{"accesskey": "AK1"}))
	e.argoApply(harbor(e.ns, "harbor"))
	e.create(valueBinding(e.ns, "harbor-s3", "harbor", fromSecret("spec.imageChartStorage.s3.accesskey", "s3-credentials", "accesskey")))
	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30*time.Second).Should(Equal("AK1"), "the access key applied")
	e.waitReason("harbor-s3", v1alpha1.ReasonApplied)

	overwrite := func(i int) string {
		h := harbor(e.ns, "harbor")
		v := fmt.Sprintf("ARGO-%d", i)
		h.Object["spec"].(map[string]any)["imageChartStorage"].(map[string]any)["s3"].(map[string]any)["accesskey"] = v
		e.argoApply(h)
		return v
	}
	for i := 1; i <= 2; i++ {
		overwrite(i)
		e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30*time.Second).Should(Equal("AK1"), "overwrite %d corrected", i)
	}
	last := overwrite(3)
	c := e.waitReason("harbor-s3", v1alpha1.ReasonConflict)
	e.g.Expect(c.Message).To(ContainSubstring(`field manager "argocd-controller" overwrote spec.imageChartStorage.s3.accesskey 3 times`))
	e.g.Eventually(e.events(v1alpha1.ReasonConflict)).WithTimeout(30*time.Second).ShouldNot(BeEmpty(), "a Warning Event")
	e.g.Consistently(e.field("harbor", accessKey...)).WithTimeout(3*time.Second).Should(Equal(last), "nudge stopped applying")

	e.updateSecret("s3-credentials", map[string]string{"accesskey": "AK2"})
	e.g.Eventually(e.field("harbor", accessKey...)).WithTimeout(30*time.Second).Should(Equal("AK2"), "a source change resumes the binding")
	e.waitReason("harbor-s3", v1alpha1.ReasonApplied)
}
