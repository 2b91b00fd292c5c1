package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"nudge.dev/nudge/internal/version"
)

// RegisterBuildInfo registers the gauge nudge_build_info{version,goversion},
// always 1, with reg: the usual way to tell which build runs (see
// https://prometheus.io/docs/instrumenting/writing_exporters/#target-labels-not-static-scraped-labels).
// A gauge already registered (nudge run twice in one process, as in tests) is
// kept; any other registration error is returned.
func RegisterBuildInfo(reg prometheus.Registerer) error {
	g, err := Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "nudge_build_info",
		Help: "Always 1; its labels name the running build: version (git describe at build time) and goversion.",
	}, []string{"version", "goversion"}))
	if err != nil {
		return err
	}
	g.WithLabelValues(version.Get(), version.GoVersion()).Set(1)
	return nil
}
