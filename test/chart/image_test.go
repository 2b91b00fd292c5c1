package chart

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/test/chart/charttest"
)

// TestImageRunsAsTheChartsUser checks that the Dockerfile builds a static
// binary on a nonroot base and runs it as the user the chart sets.
func TestImageRunsAsTheChartsUser(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(charttest.Root(t), "Dockerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	dockerfile := string(b)
	g.Expect(dockerfile).To(ContainSubstring("CGO_ENABLED=0"))
	g.Expect(dockerfile).To(MatchRegexp(`(?m)^FROM gcr\.io/distroless/static[-a-z0-9]*:nonroot$`))
	g.Expect(dockerfile).To(MatchRegexp(`(?m)^USER 65532:65532$`))
	r := render(t, nil)
	g.Expect(r.deploy.Spec.Template.Spec.SecurityContext.RunAsUser).To(HaveValue(BeEquivalentTo(65532)))
	g.Expect(r.deploy.Spec.Template.Spec.SecurityContext.RunAsGroup).To(HaveValue(BeEquivalentTo(65532)))
}
