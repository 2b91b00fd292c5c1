package metrics

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"nudge.dev/nudge/internal/version"
)

func TestBuildInfo(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	g.Expect(RegisterBuildInfo(reg)).To(Succeed())
	g.Expect(RegisterBuildInfo(reg)).To(Succeed(), "a second nudge in one process reuses the gauge")
	g.Expect(testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP nudge_build_info Always 1; its labels name the running build: version (git describe at build time) and goversion.
# TYPE nudge_build_info gauge
nudge_build_info{goversion="`+version.GoVersion()+`",version="`+version.Get()+`"} 1
`), "nudge_build_info")).To(Succeed())
}
