// Command dashboard writes nudge's Grafana dashboard, built with the Grafana
// Foundation SDK (https://github.com/grafana/grafana-foundation-sdk), as
// JSON: to the file -o (charts/nudge/files/dashboard.json, which the chart
// ships when dashboard.enabled), or to stdout. `make dashboard` runs it;
// test/monitoring checks that the committed file is what it writes, and that
// every metric its queries name is one nudge serves.
package main

// The SDK marks its dashboard (v1) builder deprecated in favour of
// dashboardv2, Grafana 12's v2 schema behind its new dashboards API. Grafana's
// file provisioning, which the dashboard sidecar feeds from the ConfigMap,
// reads the classic JSON model that v1 builds: keep it.
//
//lint:file-ignore SA1019 the classic dashboard model is what provisioning loads

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

func main() {
	out := flag.String("o", "", "write the dashboard JSON to this file instead of stdout")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	d, err := build().Build()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}

// datasource is the dashboard's Prometheus: its variable ${datasource}.
var datasource = common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${datasource}")}

// sel is the selector every query puts on nudge's series: the jobs chosen
// in the variable $job (by default every job that serves nudge_build_info).
const sel = `job=~"$job"`

func build() *dashboard.DashboardBuilder {
	ids := &panelIDs{}
	row := func(title string) *dashboard.RowBuilder { return dashboard.NewRowBuilder(title).Id(ids.next()) }
	panel := func(title, description, unit string, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
		return newPanel(title, description, unit, queries...).Id(ids.next())
	}
	return dashboard.NewDashboardBuilder("nudge").
		Uid("nudge").
		Description("nudge: rollouts, fleet safety, value bindings, health and cost, per release (job). See docs/operations.md.").
		Tags([]string{"nudge", "kubernetes"}).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("job").
			Label("Job").
			Description("The Prometheus jobs of nudge's releases (with a ServiceMonitor: <release>-metrics); each shard is one.").
			Datasource(datasource).
			Query(dashboard.StringOrMap{String: cog.ToPtr("label_values(nudge_build_info, job)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Sort(dashboard.VariableSortAlphabeticalAsc).
			Multi(true).
			IncludeAll(true).
			AllValue(".*")).
		WithRow(row("Rollouts")).
		WithPanel(panel("Rollouts by kind", "Workloads nudge rolled, per minute, by kind (nudge_rollouts_total).", "short",
			query(`sum by (kind) (rate(nudge_rollouts_total{`+sel+`}[$__rate_interval])) * 60`, "{{kind}}"))).
		WithPanel(panel("Decisions by kind and action", "Reconcile decisions per minute: None, Baseline, Roll, Wait, Hold (nudge_decisions_total).", "short",
			query(`sum by (kind, action) (rate(nudge_decisions_total{`+sel+`}[$__rate_interval])) * 60`, "{{kind}} {{action}}"))).
		WithPanel(panel("Warnings by reason", "Warning Events nudge recorded, per minute, by reason: SourceMissing, RolloutFailed, RolloutHalted, ... (nudge_warnings_total).", "short",
			query(`sum by (reason) (rate(nudge_warnings_total{`+sel+`}[$__rate_interval])) * 60`, "{{reason}}"))).
		WithPanel(panel("Change → rollout latency", "Seconds from nudge seeing a source change to its rollout write (nudge_rollout_latency_seconds): quantiles over every kind.", "s",
			query(`histogram_quantile(0.5, sum by (le) (rate(nudge_rollout_latency_seconds_bucket{`+sel+`}[$__rate_interval])))`, "p50"),
			query(`histogram_quantile(0.9, sum by (le) (rate(nudge_rollout_latency_seconds_bucket{`+sel+`}[$__rate_interval])))`, "p90"),
			query(`histogram_quantile(0.99, sum by (le) (rate(nudge_rollout_latency_seconds_bucket{`+sel+`}[$__rate_interval])))`, "p99"))).
		WithPanel(panel("Change → rollout latency by kind (p90)", "The 90th percentile of nudge_rollout_latency_seconds by workload kind.", "s",
			query(`histogram_quantile(0.9, sum by (kind, le) (rate(nudge_rollout_latency_seconds_bucket{`+sel+`}[$__rate_interval])))`, "{{kind}}"))).
		WithPanel(panel("Rollout writes (Reloader's counter)", "Rollout writes per minute, succeeded or failed, as Reloader counts them (reloader_reload_executed_total).", "short",
			query(`sum by (success) (rate(reloader_reload_executed_total{`+sel+`}[$__rate_interval])) * 60`, "success={{success}}"))).
		WithRow(row("Fleet safety and value bindings")).
		WithPanel(panel("Waves: pending and halted workloads", "With --max-concurrent-rollouts: workloads waiting for a rollout slot (nudge_pending_rollouts) and workloads halted after a failed rollout of their change (nudge_halted_workloads).", "short",
			query(`sum by (job) (nudge_pending_rollouts{`+sel+`})`, "pending {{job}}"),
			query(`sum by (job) (nudge_halted_workloads{`+sel+`})`, "halted {{job}}"))).
		WithPanel(stacked(panel("Value bindings by Ready reason", "ValueBindings by the status and reason of their Ready condition (nudge_value_bindings).", "short",
			query(`sum by (ready, reason) (nudge_value_bindings{`+sel+`})`, "{{ready}} {{reason}}")))).
		WithPanel(panel("Leader per Lease", "1 when some replica leads the leader-election Lease (leader_election_master_status; with leader election on). 0 for minutes: a shard without a leader.", "short",
			query(`max by (namespace, job, name) (leader_election_master_status{`+sel+`})`, "{{namespace}}/{{name}}"))).
		WithRow(row("Health")).
		WithPanel(panel("Events dropped", "Events nudge dropped instead of writing them, per minute (nudge_events_dropped_total).", "short",
			query(`sum by (job) (rate(nudge_events_dropped_total{`+sel+`}[$__rate_interval])) * 60`, "{{job}}"))).
		WithPanel(panel("Reconcile errors by controller", "Reconciles that returned an error, per second, by controller (controller_runtime_reconcile_errors_total).", "ops",
			query(`sum by (controller) (rate(controller_runtime_reconcile_errors_total{`+sel+`}[$__rate_interval]))`, "{{controller}}"))).
		WithPanel(panel("Work queue depth", "Requests waiting in each controller's work queue (workqueue_depth).", "short",
			query(`sum by (name) (workqueue_depth{`+sel+`})`, "{{name}}"))).
		WithRow(row("Cost per shard")).
		WithPanel(panel("Cache objects by resource", "Objects in nudge's informer caches, by release and resource (nudge_cache_objects).", "short",
			query(`sum by (job, resource) (nudge_cache_objects{`+sel+`})`, "{{job}} {{resource}}"))).
		WithPanel(panel("Memory per pod", "Resident memory (process_resident_memory_bytes) and Go heap in use (go_memstats_heap_inuse_bytes) of each nudge pod.", "bytes",
			query(`sum by (namespace, pod) (process_resident_memory_bytes{`+sel+`})`, "RSS {{namespace}}/{{pod}}"),
			query(`sum by (namespace, pod) (go_memstats_heap_inuse_bytes{`+sel+`})`, "heap {{namespace}}/{{pod}}"))).
		WithPanel(panel("CPU per pod", "CPU seconds a second of each nudge pod (process_cpu_seconds_total).", "short",
			query(`sum by (namespace, pod) (rate(process_cpu_seconds_total{`+sel+`}[$__rate_interval]))`, "{{namespace}}/{{pod}}")))
}

// panelIDs numbers the panels and rows from 1, in order.
type panelIDs struct{ last uint32 }

func (p *panelIDs) next() uint32 {
	p.last++
	return p.last
}

// newPanel is a time series panel of the queries, a third of the width.
func newPanel(title, description, unit string, queries ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Datasource(datasource).
		Unit(unit).
		Min(0).
		Height(8).
		Span(8).
		FillOpacity(10).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeList).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true))
	for i, q := range queries {
		p.WithTarget(q.RefId(string(rune('A' + i))))
	}
	return p
}

// stacked stacks the panel's series.
func stacked(p *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	return p.Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// query is a range query of expr, its series named by legend.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource).
		Expr(expr).
		LegendFormat(legend).
		Range()
}
