// Module dashboard generates the Grafana dashboard the chart ships
// (charts/nudge/files/dashboard.json) with the Grafana Foundation SDK, pinned
// apart from nudge's own dependencies.
module nudge.dev/hack/dashboard

go 1.26.0

require github.com/grafana/grafana-foundation-sdk/go v0.0.22
