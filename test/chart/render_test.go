// Package chart tests nudge's Helm chart: helm lint, what every notable
// combination of values renders (checked on the parsed objects, and the
// flags parsed by nudge's own options), and that config/ is the chart
// rendered. The end-to-end tests are in test/chart/e2e.
package chart

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
	"nudge.dev/nudge/test/chart/charttest"
)

const (
	release   = "nudge"
	namespace = "nudge-system"
	keySecret = "nudge-fingerprint-key"
)

// rendered is what the checks see of one rendering.
type rendered struct {
	m      charttest.Manifest
	deploy *appsv1.Deployment
	opts   options.Options // nudge's options, parsed from the container's args
	grants []grant
}

func TestRender(t *testing.T) {
	tests := map[string]struct {
		values charttest.Values
		check  func(g Gomega, r rendered)
	}{
		"default values: a ClusterRole bound cluster-wide, one replica without leader election": {
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ClusterRole", "ClusterRoleBinding",
					"Role", "RoleBinding", "Service", "Deployment", "Secret"), "the workload rules, the cluster-scoped reads, the key Secret")
				g.Expect(r.opts.Namespaces).To(BeEmpty())
				g.Expect(r.opts.SystemNamespace).To(Equal(namespace))
				g.Expect(r.opts.KeySecret).To(Equal(keySecret))
				g.Expect(r.opts.MetricsAddr).To(Equal(":9090"))
				g.Expect(r.opts.ProbeAddr).To(Equal(":8081"))
				g.Expect(r.opts.IgnoredWorkloadTypes).To(BeEmpty(), "Argo Rollouts handled")
				g.Expect(r.opts.EnableHTTP2).To(BeFalse(), "HTTP/2 off (CVE-2023-44487)")
				g.Expect(r.deploy.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
				for _, verb := range []string{"list", "watch"} {
					g.Expect(r.can(verb, "apiextensions.k8s.io", "customresourcedefinitions", "")).To(BeTrue(), "%s CRDs: Argo Rollouts found once its CRD is added", verb)
					g.Expect(r.can(verb, "apiregistration.k8s.io", "apiservices", "")).To(BeTrue(), "%s APIServices: a custom kind may be aggregated", verb)
				}
				g.Expect(r.can("get", "apiextensions.k8s.io", "customresourcedefinitions", "")).To(BeFalse(), "names alone, from the watch")
				g.Expect(r.can("list", "", "namespaces", "")).To(BeTrue(), "namespaces' metadata: their maintenance windows")
				g.Expect(r.can("get", "", "namespaces", "")).To(BeFalse(), "from the watch alone")
				g.Expect(r.can("patch", "argoproj.io", "rollouts", "shop")).To(BeTrue())
				g.Expect(r.can("list", "", "secrets", "shop")).To(BeTrue())
				g.Expect(r.can("create", "batch", "jobs", "shop")).To(BeFalse(), "Job handling is opt-in")
				g.Expect(r.can("list", "batch", "jobs", "shop")).To(BeFalse())
				g.Expect(r.can("get", "coordination.k8s.io", "leases", namespace)).To(BeFalse(), "no leader election")
				g.Expect(r.canNamed("get", "coordination.k8s.io", "leases", namespace, release)).To(BeFalse())
				g.Expect(r.canNamed("get", "", "secrets", namespace, keySecret)).To(BeTrue())
				g.Expect(r.canNamed("get", "", "secrets", "shop", keySecret)).To(BeFalse())
				g.Expect(r.canNamed("update", "", "secrets", namespace, keySecret)).To(BeTrue(), "the key, written at first start")
				g.Expect(r.can("create", "", "secrets", namespace)).To(BeFalse(), "no Secret created: the chart creates the key's")
				g.Expect(r.can("create", "", "secrets", "shop")).To(BeFalse())
				key := r.m.Get("Secret", keySecret)
				g.Expect(key).NotTo(BeNil(), "the key Secret, created by the chart")
				g.Expect(key.Object).NotTo(HaveKey("data"), "without data: nudge writes the key")
				g.Expect(key.GetAnnotations()).To(HaveKeyWithValue("helm.sh/resource-policy", "keep"), "kept on uninstall")
				g.Expect(r.m.Get("Secret", keySecret+"-jobs")).To(BeNil(), "no Job journal without recreateJobs")
				g.Expect(r.can("list", "", "pods", "shop")).To(BeFalse(), "no pods read without eviction.enabled")
				g.Expect(r.can("create", "", "pods/eviction", "shop")).To(BeFalse(), "no eviction without eviction.enabled")
				g.Expect(r.opts.EnableEviction).To(BeFalse())
			},
		},
		"watchGlobally=false: Roles in the release namespace only, no ClusterRole of any kind": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "Deployment", "Secret"))
				g.Expect(r.opts.Namespaces).To(Equal([]string{namespace}), "$(POD_NAMESPACE) expanded")
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--namespaces=$(POD_NAMESPACE)"))
				for _, gr := range r.grants {
					g.Expect(gr.scope).To(Equal(namespace), "%s %s", gr.holder, gr.rule)
				}
				g.Expect(r.can("patch", "apps", "deployments", namespace)).To(BeTrue())
				g.Expect(r.can("list", "", "configmaps", namespace)).To(BeTrue())
				g.Expect(r.opts.Ignores("rollouts")).To(BeFalse(), "Argo Rollouts handled by default, found by discovery")
				for _, verb := range []string{"list", "watch", "patch"} {
					g.Expect(r.can(verb, "argoproj.io", "rollouts", namespace)).To(BeTrue(), verb)
				}
				g.Expect(r.can("list", "argoproj.io", "rollouts", "shop")).To(BeFalse())
			},
		},
		"watchGlobally=false with isArgoRollouts null: Rollouts handled as with true": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "isArgoRollouts": nil}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Ignores("rollouts")).To(BeFalse())
				g.Expect(r.can("patch", "argoproj.io", "rollouts", namespace)).To(BeTrue())
			},
		},
		"watchGlobally=false with isArgoRollouts=false: no Rollouts, no permission on them": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "isArgoRollouts": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Ignores("rollouts")).To(BeTrue())
				g.Expect(r.can("list", "argoproj.io", "rollouts", namespace)).To(BeFalse())
			},
		},
		"reloader.namespaces: the workload ClusterRole bound in those namespaces only": {
			values: charttest.Values{"reloader": map[string]any{"namespaces": "shop, billing"}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Namespaces).To(Equal([]string{"shop", "billing"}))
				g.Expect(r.can("patch", "apps", "deployments", "shop")).To(BeTrue())
				g.Expect(r.can("patch", "apps", "deployments", "billing")).To(BeTrue())
				g.Expect(r.can("patch", "apps", "deployments", "other")).To(BeFalse())
				g.Expect(r.can("list", "", "secrets", "other")).To(BeFalse())
				g.Expect(r.can("list", "", "secrets", "")).To(BeFalse(), "no cluster-wide read of Secrets")
				g.Expect(r.m.Get("RoleBinding", "nudge").GetNamespace()).To(BeElementOf("shop", "billing"))
				g.Expect(r.can("patch", "argoproj.io", "rollouts", "shop")).To(BeTrue())
				g.Expect(r.can("list", "argoproj.io", "rollouts", "other")).To(BeFalse())
				g.Expect(r.m.OfKind("ClusterRoleBinding")).To(BeEmpty(), "nothing bound cluster-wide")
				g.Expect(r.can("watch", "apiextensions.k8s.io", "customresourcedefinitions", "")).To(BeFalse(), "nudge asks discovery every --discovery-interval instead")
			},
		},
		"customKinds: a ConfigMap nudge reads, and their resources granted in their groups alone": {
			values: charttest.Values{"customKinds": customKinds},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.CustomKindsFile).To(Equal("/etc/nudge/custom-kinds/custom-kinds.yaml"))
				cm := &corev1.ConfigMap{}
				charttest.Into(t, r.m.Get("ConfigMap", "nudge-custom-kinds"), cm)
				kinds, err := workload.ParseCustomKinds([]byte(cm.Data["custom-kinds.yaml"]))
				g.Expect(err).NotTo(HaveOccurred(), "nudge reads the file the chart renders")
				g.Expect(kinds).To(HaveLen(2))
				g.Expect(kinds[1]).To(Equal(workload.CustomKind{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus",
					Resource: "prometheuses", TriggerPath: "spec.podMetadata.annotations"}))
				pod := r.deploy.Spec.Template.Spec
				g.Expect(pod.Volumes).To(ContainElement(HaveField("ConfigMap.Name", "nudge-custom-kinds")))
				g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/etc/nudge/custom-kinds")))
				g.Expect(r.deploy.Spec.Template.Annotations).To(HaveKey("checksum/custom-kinds"), "a change of the kinds restarts nudge")
				for _, verb := range []string{"get", "list", "watch", "patch"} {
					g.Expect(r.can(verb, "serving.knative.dev", "services", "shop")).To(BeTrue(), verb)
					g.Expect(r.can(verb, "monitoring.coreos.com", "prometheuses", "shop")).To(BeTrue(), verb)
				}
				g.Expect(r.can("patch", "", "services", "shop")).To(BeFalse(), "not the core group's Services")
				g.Expect(r.can("create", "serving.knative.dev", "services", "shop")).To(BeFalse())
			},
		},
		"customKinds with watchGlobally=false: granted in the release namespace only": {
			values: charttest.Values{"customKinds": customKinds, "reloader": map[string]any{"watchGlobally": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.can("patch", "serving.knative.dev", "services", namespace)).To(BeTrue())
				g.Expect(r.can("patch", "serving.knative.dev", "services", "shop")).To(BeFalse())
			},
		},
		"no customKinds: no ConfigMap, no flag, no volume": {
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.CustomKindsFile).To(BeEmpty())
				g.Expect(r.m.OfKind("ConfigMap")).To(BeEmpty())
				g.Expect(r.deploy.Spec.Template.Spec.Volumes).To(BeEmpty())
			},
		},
		"reloader.namespaces as a list, as Reloader's chart also takes it": {
			values: charttest.Values{"reloader": map[string]any{"namespaces": []string{"shop"}}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Namespaces).To(Equal([]string{"shop"}))
				g.Expect(r.m.OfKind("RoleBinding")).To(HaveLen(2), "shop, and the release namespace's own")
			},
		},
		"namespaceSelector: list and watch of namespaces, only then": {
			values: charttest.Values{"reloader": map[string]any{"namespaceSelector": "team=shop,env!=dev"}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.NamespaceSelector).To(Equal("team=shop,env!=dev"))
				g.Expect(r.can("watch", "", "namespaces", "")).To(BeTrue())
				g.Expect(r.can("get", "", "namespaces", "")).To(BeFalse())
				g.Expect(r.m.Get("ClusterRole", release+"-cluster")).NotTo(BeNil(), "the cluster-scoped role")
			},
		},
		"replicas 3: leader election with its Lease named after the release, a PodDisruptionBudget, rolling updates": {
			values: charttest.Values{"replicas": 3},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.LeaderElect).To(BeTrue())
				g.Expect(r.opts.LeaderElectionID).To(Equal(release))
				g.Expect(r.m.OfKind("PodDisruptionBudget")).To(HaveLen(1))
				g.Expect(r.deploy.Spec.Strategy.Type).NotTo(Equal(appsv1.RecreateDeploymentStrategyType))
				g.Expect(r.canNamed("get", "coordination.k8s.io", "leases", namespace, release)).To(BeTrue())
				g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", namespace, release)).To(BeTrue())
				g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", namespace, "nudge.dev")).To(BeFalse(), "not nudge's default Lease")
				g.Expect(r.can("update", "coordination.k8s.io", "leases", namespace)).To(BeFalse(), "its own Lease alone")
				g.Expect(r.can("create", "coordination.k8s.io", "leases", namespace)).To(BeTrue())
				g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", "shop", release)).To(BeFalse())
			},
		},
		"fullnameOverride with leader election: the Lease takes that name": {
			values: charttest.Values{"reloader": map[string]any{"enableHA": true}, "fullnameOverride": "platform-nudge"},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.LeaderElectionID).To(Equal("platform-nudge"))
				g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", namespace, "platform-nudge")).To(BeTrue())
				g.Expect(r.canNamed("update", "coordination.k8s.io", "leases", namespace, release)).To(BeFalse())
			},
		},
		"enableHA with one replica: leader election without a PodDisruptionBudget": {
			values: charttest.Values{"reloader": map[string]any{"enableHA": true}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.LeaderElect).To(BeTrue())
				g.Expect(r.m.OfKind("PodDisruptionBudget")).To(BeEmpty())
			},
		},
		"ignoreSecrets: no read of Secrets but nudge's own key": {
			values: charttest.Values{"reloader": map[string]any{"ignoreSecrets": true}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.IgnoresSources("Secret")).To(BeTrue())
				g.Expect(r.can("list", "", "secrets", "shop")).To(BeFalse())
				g.Expect(r.can("list", "", "secrets", namespace)).To(BeFalse())
				g.Expect(r.can("list", "", "configmaps", "shop")).To(BeTrue())
			},
		},
		"ignoreConfigMaps: no read of ConfigMaps": {
			values: charttest.Values{"reloader": map[string]any{"ignoreConfigMaps": true}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.IgnoresSources("ConfigMap")).To(BeTrue())
				g.Expect(r.can("list", "", "configmaps", "shop")).To(BeFalse())
			},
		},
		"ignoreJobs and ignoreCronJobs: no permission on either, even with Job handling asked for": {
			values: charttest.Values{"reloader": map[string]any{"ignoreJobs": true, "ignoreCronJobs": true},
				"recreateJobs": true, "cronJobStartJob": true},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.IgnoredWorkloadTypes).To(ConsistOf("jobs", "cronjobs"))
				g.Expect(r.opts.RecreateJobs || r.opts.CronJobStartJob).To(BeFalse())
				for _, gr := range r.grants {
					g.Expect(gr.rule.APIGroups).NotTo(ContainElement("batch"))
				}
			},
		},
		"recreateJobs and cronJobStartJob: Jobs patched, read, deleted and created, nothing more": {
			values: charttest.Values{"recreateJobs": true, "cronJobStartJob": true},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.RecreateJobs && r.opts.CronJobStartJob).To(BeTrue())
				for _, verb := range []string{"get", "list", "watch", "patch", "create", "delete"} {
					g.Expect(r.can(verb, "batch", "jobs", "shop")).To(BeTrue(), verb)
				}
				g.Expect(r.can("update", "batch", "jobs", "shop")).To(BeFalse())
				g.Expect(r.can("delete", "batch", "cronjobs", "shop")).To(BeFalse())
				for _, verb := range []string{"get", "update"} {
					g.Expect(r.canNamed(verb, "", "secrets", namespace, "nudge-fingerprint-key-jobs")).To(BeTrue(), "the Job journal: %s", verb)
				}
				journal := r.m.Get("Secret", "nudge-fingerprint-key-jobs")
				g.Expect(journal).NotTo(BeNil(), "the Job journal, created by the chart")
				g.Expect(journal.Object).NotTo(HaveKey("data"), "without data: nudge writes the entries")
			},
		},
		"eviction.enabled: pods listed and evicted, never deleted nor watched; owners read": {
			values: charttest.Values{"eviction": map[string]any{"enabled": true, "kinds": []any{"Cluster.postgresql.cnpg.io"}}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.EnableEviction).To(BeTrue())
				g.Expect(r.opts.EvictPodsOf).To(Equal([]string{"Cluster.postgresql.cnpg.io"}))
				g.Expect(r.can("list", "", "pods", "shop")).To(BeTrue())
				g.Expect(r.can("create", "", "pods/eviction", "shop")).To(BeTrue())
				for _, verb := range []string{"watch", "get", "delete", "patch"} {
					g.Expect(r.can(verb, "", "pods", "shop")).To(BeFalse(), verb)
				}
				g.Expect(r.can("get", "apps", "statefulsets", "shop")).To(BeTrue())
				g.Expect(r.can("get", "apps", "daemonsets", "shop")).To(BeTrue())
			},
		},
		"cronJobStartJob alone: Jobs created, never deleted or read": {
			values: charttest.Values{"cronJobStartJob": true},
			check: func(g Gomega, r rendered) {
				g.Expect(r.can("create", "batch", "jobs", "shop")).To(BeTrue())
				g.Expect(r.can("delete", "batch", "jobs", "shop")).To(BeFalse())
				g.Expect(r.can("list", "batch", "jobs", "shop")).To(BeFalse())
			},
		},
		"isArgoRollouts=false: no Rollouts, no permission on them": {
			values: charttest.Values{"reloader": map[string]any{"isArgoRollouts": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Ignores("rollouts")).To(BeTrue())
				g.Expect(r.can("list", "argoproj.io", "rollouts", "shop")).To(BeFalse())
				g.Expect(r.m.OfKind("ClusterRole")).To(HaveLen(2), "the workload rules, and the cluster-scoped reads")
			},
		},
		"isArgoRollouts null: Rollouts handled as with true": {
			values: charttest.Values{"reloader": map[string]any{"isArgoRollouts": nil}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.Ignores("rollouts")).To(BeFalse())
				g.Expect(r.can("patch", "argoproj.io", "rollouts", "shop")).To(BeTrue())
			},
		},
		"Reloader's values become Reloader's flags": {
			values: charttest.Values{"reloader": map[string]any{
				"autoReloadAll": true, "reloadStrategy": "env-vars", "reloadOnCreate": true, "reloadOnDelete": true,
				"ignoreNamespaces": []string{"kube-system", "kube-public"}, "resourceLabelSelector": "reload=yes",
				"logFormat": "json", "logLevel": "debug", "webhookUrl": "https://hooks.example/nudge",
				"syncAfterRestart": true,
			}},
			check: func(g Gomega, r rendered) {
				o := r.opts
				g.Expect(o.AutoReloadAll && o.ReloadOnCreate && o.ReloadOnDelete).To(BeTrue())
				g.Expect(o.ReloadStrategy).To(Equal("env-vars"))
				g.Expect(o.NamespacesToIgnore).To(Equal([]string{"kube-system", "kube-public"}))
				g.Expect(o.ResourceLabelSelector).To(Equal("reload=yes"))
				g.Expect(o.LogFormat).To(Equal("json"))
				g.Expect(o.LogLevel).To(Equal("debug"))
				g.Expect(o.WebhookURL).To(Equal("https://hooks.example/nudge"))
			},
		},
		"nudge's own values become its flags": {
			values: charttest.Values{"rolloutWindow": "30s", "workers": 4, "kubeAPI": map[string]any{"qps": 50, "burst": 100},
				"keySecret": "other-key", "extraArgs": []string{"--log-level=warning"}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.RolloutWindow.String()).To(Equal("30s"))
				g.Expect(r.opts.Workers).To(Equal(4))
				g.Expect(r.opts.QPS).To(BeEquivalentTo(50))
				g.Expect(r.opts.Burst).To(Equal(100))
				g.Expect(r.opts.KeySecret).To(Equal("other-key"))
				g.Expect(r.opts.LogLevel).To(Equal("warning"), "extraArgs come last")
				g.Expect(r.canNamed("get", "", "secrets", namespace, "other-key")).To(BeTrue())
				g.Expect(r.can("get", "", "secrets", namespace)).To(BeFalse(), "only the key by name")
			},
		},
		"enableHTTP2 becomes --enable-http2": {
			values: charttest.Values{"enableHTTP2": true, "admissionWebhook": map[string]any{"enabled": true}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.EnableHTTP2).To(BeTrue())
			},
		},
		"waves: maxConcurrentRollouts and rolloutTimeout become their flags": {
			values: charttest.Values{"maxConcurrentRollouts": 10, "rolloutTimeout": "3m"},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.MaxConcurrentRollouts).To(Equal(10))
				g.Expect(r.opts.RolloutTimeout.String()).To(Equal("3m0s"))
			},
		},
		"the storm brake, the producer gate and no maintenance window by default": {
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.MaxRolloutsPerHour).To(Equal(30))
				g.Expect(r.opts.ProducerReadyTimeout).To(Equal(2 * time.Minute))
				g.Expect(r.opts.MaintenanceWindow).To(BeEmpty())
			},
		},
		"maxRolloutsPerHour, maintenanceWindow and producerReadyTimeout become their flags": {
			values: charttest.Values{"maxRolloutsPerHour": 0, "maintenanceWindow": "0 2 * * 1-5 2h Europe/Berlin", "producerReadyTimeout": "0"},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.MaxRolloutsPerHour).To(BeZero())
				g.Expect(r.opts.ProducerReadyTimeout).To(BeZero())
				w, err := r.opts.Maintenance()
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(w.String()).To(Equal("0 2 * * 1-5 2h Europe/Berlin"))
			},
		},
		"cross-namespace references allowed by default, as Wave reads them; deny becomes the flag": {
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.DenyCrossNamespace()).To(BeFalse())
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--cross-namespace-references")),
					"the default is not written: config/ stays as it was")
			},
		},
		"crossNamespaceReferences: deny becomes its flag": {
			values: charttest.Values{"crossNamespaceReferences": "deny"},
			check:  func(g Gomega, r rendered) { g.Expect(r.opts.DenyCrossNamespace()).To(BeTrue()) },
		},
		"annotations may only tighten the limits by default; allowWorkloadOverrides becomes its flag": {
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.AllowWorkloadOverrides).To(BeFalse())
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--allow-workload-overrides")))
			},
		},
		"allowWorkloadOverrides: true becomes its flag": {
			values: charttest.Values{"allowWorkloadOverrides": true},
			check:  func(g Gomega, r rendered) { g.Expect(r.opts.AllowWorkloadOverrides).To(BeTrue()) },
		},
		"a memory limit also bounds Go's heap (GOMEMLIMIT)": {
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Env).To(ContainElement(And(HaveField("Name", "GOMEMLIMIT"),
					HaveField("ValueFrom.ResourceFieldRef.Resource", "limits.memory"))))
			},
		},
		"a ServiceMonitor when asked for": {
			values: charttest.Values{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "interval": "30s"}}},
			check: func(g Gomega, r rendered) {
				sm := r.m.Get("ServiceMonitor", release)
				g.Expect(sm).NotTo(BeNil())
				g.Expect(sm.GetNamespace()).To(Equal(namespace))
				g.Expect(sm.Object["spec"]).To(HaveKeyWithValue("endpoints", ConsistOf(HaveKeyWithValue("port", "metrics"))))
			},
		},
		"alerts and a dashboard when asked for, in the namespaces and with the labels asked for": {
			values: charttest.Values{
				"prometheusRule": map[string]any{"enabled": true, "namespace": "monitoring", "labels": map[string]any{"release": "kube-prometheus-stack"}},
				"dashboard":      map[string]any{"enabled": true, "namespace": "grafana"},
			},
			check: func(g Gomega, r rendered) {
				rule := r.m.Get("PrometheusRule", release)
				g.Expect(rule).NotTo(BeNil())
				g.Expect(rule.GetNamespace()).To(Equal("monitoring"))
				g.Expect(rule.GetLabels()).To(HaveKeyWithValue("release", "kube-prometheus-stack"))
				g.Expect(rule.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/instance", release))
				groups, _ := rule.Object["spec"].(map[string]any)["groups"].([]any)
				g.Expect(groups).To(HaveLen(1), "files/alerts.yaml's group")
				g.Expect(groups[0]).To(HaveKeyWithValue("rules", HaveLen(9)))

				cm := r.m.Get("ConfigMap", release+"-dashboard")
				g.Expect(cm).NotTo(BeNil())
				g.Expect(cm.GetNamespace()).To(Equal("grafana"))
				g.Expect(cm.GetLabels()).To(HaveKeyWithValue("grafana_dashboard", "1"), "the label Grafana's sidecar looks for, by default")
				data, _ := cm.Object["data"].(map[string]any)
				file, err := os.ReadFile(filepath.Join(charttest.Chart(t), "files", "dashboard.json"))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(data).To(HaveKeyWithValue("nudge.json", MatchJSON(file)), "files/dashboard.json as it is")
			},
		},
		"a dashboard with the sidecar's label of another Grafana": {
			values: charttest.Values{"dashboard": map[string]any{"enabled": true, "labels": map[string]any{"grafana_dashboard": nil, "team-grafana/dashboard": "nudge"}}},
			check: func(g Gomega, r rendered) {
				cm := r.m.Get("ConfigMap", release+"-dashboard")
				g.Expect(cm).NotTo(BeNil())
				g.Expect(cm.GetNamespace()).To(Equal(namespace))
				g.Expect(cm.GetLabels()).To(HaveKeyWithValue("team-grafana/dashboard", "nudge"))
				g.Expect(cm.GetLabels()).NotTo(HaveKey("grafana_dashboard"), "a null label removes the default")
				g.Expect(r.m.OfKind("PrometheusRule")).To(BeEmpty())
			},
		},
		"metrics off: no Service, no endpoint": {
			values: charttest.Values{"metrics": map[string]any{"enabled": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.OfKind("Service")).To(BeEmpty())
				g.Expect(r.opts.MetricsAddr).To(Equal("0"))
			},
		},
		"rbac.create=false: no role or binding of any kind": {
			values: charttest.Values{"rbac": map[string]any{"create": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "Service", "Deployment", "Secret"), "and the key Secret, whoever grants nudge its rights")
			},
		},
		"an existing ServiceAccount": {
			values: charttest.Values{"serviceAccount": map[string]any{"create": false, "name": "platform-nudge"}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.OfKind("ServiceAccount")).To(BeEmpty())
				g.Expect(r.deploy.Spec.Template.Spec.ServiceAccountName).To(Equal("platform-nudge"))
			},
		},
		"OpenShift: no fixed UID, still restricted": {
			values: charttest.Values{"podSecurityContext": map[string]any{"runAsUser": nil, "runAsGroup": nil}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Template.Spec.SecurityContext.RunAsUser).To(BeNil())
			},
		},
		"a securityContext that would weaken the restricted settings does not": {
			values: charttest.Values{
				"securityContext":    map[string]any{"allowPrivilegeEscalation": true, "readOnlyRootFilesystem": false, "privileged": true},
				"podSecurityContext": map[string]any{"runAsNonRoot": false},
			},
		},
		"value bindings off (the default): no permission on ValueBindings or any target, no policy": {
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.ValueBindings).To(BeFalse())
				g.Expect(r.can("watch", "nudge.dev", "valuebindings", "")).To(BeFalse())
				g.Expect(r.can("get", "", "secrets", "shop")).To(BeFalse())
				g.Expect(r.can("get", "", "configmaps", "shop")).To(BeFalse())
				g.Expect(r.m.OfKind("ValidatingAdmissionPolicy")).To(BeEmpty())
			},
		},
		"value bindings for Harbor: exactly get, list, watch and patch on the listed kinds, the bindings read, their status written": {
			values: harborValues,
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.ValueBindings).To(BeTrue())
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--value-bindings",
					"--value-binding-targets=Harbor.goharbor.io,HarborCluster.goharbor.io"))
				for _, res := range []string{"harbors", "harborclusters"} {
					for _, verb := range []string{"get", "list", "watch", "patch"} {
						g.Expect(r.can(verb, "goharbor.io", res, "shop")).To(BeTrue(), "%s %s", verb, res)
					}
					for _, verb := range []string{"create", "update", "delete"} {
						g.Expect(r.can(verb, "goharbor.io", res, "shop")).To(BeFalse(), "%s %s", verb, res)
					}
				}
				g.Expect(r.can("patch", "goharbor.io", "registries", "shop")).To(BeFalse(), "a kind not listed")
				for _, verb := range []string{"get", "list", "watch"} {
					g.Expect(r.can(verb, "nudge.dev", "valuebindings", "shop")).To(BeTrue(), verb)
				}
				g.Expect(r.can("patch", "nudge.dev", "valuebindings", "shop")).To(BeTrue(), "its finalizer, for deletionPolicy Delete")
				g.Expect(r.can("update", "nudge.dev", "valuebindings", "shop")).To(BeFalse())
				g.Expect(r.can("patch", "nudge.dev", "valuebindings/status", "shop")).To(BeTrue())
				g.Expect(r.can("get", "", "secrets", "shop")).To(BeTrue(), "one GET of a bound Secret per apply")
				g.Expect(r.can("get", "", "configmaps", "shop")).To(BeTrue())
				g.Expect(r.can("watch", "apiextensions.k8s.io", "customresourcedefinitions", "")).To(BeTrue(), "target kinds found once their CRD is added")

				policy := policyOf(g, r)
				g.Expect(policy.Spec.FailurePolicy).To(HaveValue(Equal(admissionregistrationv1.Fail)))
				g.Expect(policy.Spec.MatchConstraints.ResourceRules).To(ConsistOf(HaveField("ResourceNames", BeEmpty())))
				rule := policy.Spec.MatchConstraints.ResourceRules[0]
				g.Expect(rule.APIGroups).To(Equal([]string{"nudge.dev"}))
				g.Expect(rule.Resources).To(Equal([]string{"valuebindings"}), "not the status nudge writes")
				g.Expect(rule.Operations).To(ConsistOf(admissionregistrationv1.Create, admissionregistrationv1.Update))
				g.Expect(policy.Spec.Variables).To(ContainElement(And(HaveField("Name", "resources"),
					HaveField("Expression", "{'Harbor.goharbor.io': 'harbors', 'HarborCluster.goharbor.io': 'harborclusters'}"))))
				binding := bindingOf(g, r)
				g.Expect(binding.Spec.PolicyName).To(Equal(policy.Name))
				g.Expect(binding.Spec.ValidationActions).To(Equal([]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}))
				g.Expect(binding.Spec.MatchResources).To(BeNil(), "every namespace")
				g.Expect(policy.Spec.Variables).To(ContainElement(And(HaveField("Name", "inScope"), HaveField("Expression", "true"))),
					"a kind not listed refused in every namespace, as nudge acts in every one")
			},
		},
		"value bindings with watchGlobally=false: Roles only, the policy bound everywhere, kinds refused in the release namespace": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false}, "valueBindings": harborValues["valueBindings"]},
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.OfKind("ClusterRole")).To(BeEmpty())
				g.Expect(r.can("patch", "goharbor.io", "harbors", namespace)).To(BeTrue())
				g.Expect(r.can("patch", "goharbor.io", "harbors", "shop")).To(BeFalse())
				g.Expect(r.can("get", "", "secrets", "shop")).To(BeFalse())
				g.Expect(r.can("watch", "nudge.dev", "valuebindings", namespace)).To(BeTrue())
				g.Expect(bindingOf(g, r).Spec.MatchResources).To(BeNil(), "the author's access checked in every namespace")
				g.Expect(policyOf(g, r).Spec.Variables).To(ContainElement(And(HaveField("Name", "inScope"),
					HaveField("Expression", "request.namespace in ['"+namespace+"']"))))
			},
		},
		"value bindings with reloader.namespaces: targets patched there, the policy bound everywhere, kinds refused there": {
			values: charttest.Values{"reloader": map[string]any{"namespaces": "shop,billing"}, "valueBindings": harborValues["valueBindings"]},
			check: func(g Gomega, r rendered) {
				g.Expect(r.can("patch", "goharbor.io", "harbors", "shop")).To(BeTrue())
				g.Expect(r.can("patch", "goharbor.io", "harbors", "other")).To(BeFalse())
				g.Expect(r.can("get", "", "secrets", "other")).To(BeFalse())
				g.Expect(bindingOf(g, r).Spec.MatchResources).To(BeNil(), "the author's access checked in every namespace")
				g.Expect(policyOf(g, r).Spec.Variables).To(ContainElement(And(HaveField("Name", "inScope"),
					HaveField("Expression", "request.namespace in ['shop','billing']"))))
			},
		},
		"value bindings without targets: no target kind patched, and the policy refuses every kind": {
			values: charttest.Values{"valueBindings": map[string]any{"enabled": true}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.ValueBindings).To(BeTrue())
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--value-binding-targets")))
				g.Expect(policyOf(g, r).Spec.Variables).To(ContainElement(And(HaveField("Name", "resources"), HaveField("Expression", "{}"))))
			},
		},
		"value bindings with workers: --value-binding-workers, only when set": {
			values: charttest.Values{"valueBindings": map[string]any{"enabled": true, "workers": 8}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.ValueBindingWorkers).To(Equal(8))
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--value-binding-workers=8"))
			},
		},
		"value bindings without workers: nudge's default number of workers, no flag": {
			values: charttest.Values{"valueBindings": map[string]any{"enabled": true}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.ValueBindingWorkers).To(Equal(options.Default().ValueBindingWorkers))
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--value-binding-workers")))
			},
		},
		"ignoreSecrets with value bindings: Secrets still listed and watched, as the bindings read them": {
			values: charttest.Values{"reloader": map[string]any{"ignoreSecrets": true}, "valueBindings": harborValues["valueBindings"]},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.IgnoresSources("Secret")).To(BeTrue(), "no rollout for Secrets")
				g.Expect(r.can("watch", "", "secrets", "shop")).To(BeTrue())
				g.Expect(r.can("list", "", "secrets", "shop")).To(BeTrue())
			},
		},
		"a value binding target of the core group is named by its kind alone": {
			values: charttest.Values{"valueBindings": map[string]any{"enabled": true,
				"targets": []map[string]any{{"apiGroup": "", "kind": "Service", "resource": "services"}}}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--value-binding-targets=Service"))
				g.Expect(r.can("patch", "", "services", "shop")).To(BeTrue())
				g.Expect(policyOf(g, r).Spec.Variables).To(ContainElement(HaveField("Expression", "{'Service': 'services'}")))
			},
		},
		"an image digest wins over the tag": {
			values: charttest.Values{"image": map[string]any{"repository": "registry.example/nudge", "tag": "v9",
				"digest": "sha256:" + strings.Repeat("ab", 32)}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.deploy.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/nudge@sha256:" + strings.Repeat("ab", 32)))
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r := render(t, tc.values)
			checkInvariants(t, r, tc.values)
			if tc.check != nil {
				tc.check(g, r)
			}
		})
	}
}

// TestTwoReleasesNeverShareALease renders two releases with leader election
// in one namespace: each elects with its own Lease, and may take only that.
func TestTwoReleasesNeverShareALease(t *testing.T) {
	g := NewWithT(t)
	values := charttest.Values{"replicas": 2}
	a, b := renderAs(t, "nudge", values), renderAs(t, "canary", values)
	g.Expect(a.opts.LeaderElectionID).To(Equal("nudge"))
	g.Expect(b.opts.LeaderElectionID).To(Equal("canary-nudge"))
	g.Expect(a.canNamed("update", "coordination.k8s.io", "leases", namespace, b.opts.LeaderElectionID)).To(BeFalse())
	g.Expect(b.canNamed("update", "coordination.k8s.io", "leases", namespace, a.opts.LeaderElectionID)).To(BeFalse())
}

// harborValues turn value bindings on for harbor-operator's two kinds.
var harborValues = charttest.Values{"valueBindings": map[string]any{
	"enabled": true,
	"targets": []map[string]any{
		{"apiGroup": "goharbor.io", "kind": "Harbor", "resource": "harbors"},
		{"apiGroup": "goharbor.io", "kind": "HarborCluster", "resource": "harborclusters"},
	},
}}

// policyOf returns the one ValidatingAdmissionPolicy r holds.
func policyOf(g Gomega, r rendered) *admissionregistrationv1.ValidatingAdmissionPolicy {
	objs := r.m.OfKind("ValidatingAdmissionPolicy")
	g.Expect(objs).To(HaveLen(1))
	var p admissionregistrationv1.ValidatingAdmissionPolicy
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, &p, true)).To(Succeed())
	return &p
}

// bindingOf returns the one ValidatingAdmissionPolicyBinding r holds.
func bindingOf(g Gomega, r rendered) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	objs := r.m.OfKind("ValidatingAdmissionPolicyBinding")
	g.Expect(objs).To(HaveLen(1))
	var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[0].Object, &b, true)).To(Succeed())
	return &b
}

// customKinds is a customKinds value: one kind with a pod template, one
// without.
var customKinds = []any{
	map[string]any{"apiVersion": "serving.knative.dev/v1", "kind": "Service", "resource": "services", "templatePath": "spec.template"},
	map[string]any{"apiVersion": "monitoring.coreos.com/v1", "kind": "Prometheus", "resource": "prometheuses",
		"triggerPath": "spec.podMetadata.annotations"},
}

func render(t *testing.T, values charttest.Values) rendered {
	t.Helper()
	return renderAs(t, release, values)
}

// renderAs is render of the release named name.
func renderAs(t *testing.T, name string, values charttest.Values) rendered {
	t.Helper()
	return renderedOf(t, charttest.Render(t, name, namespace, values))
}

// renderedOf reads the Deployment, nudge's options and the grants of m,
// one release rendered in namespace.
func renderedOf(t *testing.T, m charttest.Manifest) rendered {
	t.Helper()
	r := rendered{m: m}
	deploys := r.m.OfKind("Deployment")
	if len(deploys) != 1 {
		t.Fatalf("Rendered %d Deployments, want 1", len(deploys))
	}
	r.deploy = &appsv1.Deployment{}
	charttest.Into(t, deploys[0], r.deploy)
	r.opts = parseArgs(t, r.deploy.Spec.Template.Spec.Containers[0].Args, r.deploy.Namespace)
	r.grants = grants(t, r.m, r.deploy.Namespace)
	return r
}

// parseArgs returns nudge's options from args, as nudge in namespace would
// parse them: $(POD_NAMESPACE) expanded as the kubelet does, and the
// system namespace from $POD_NAMESPACE. It fails t when nudge would refuse
// them.
func parseArgs(t *testing.T, args []string, namespace string) options.Options {
	t.Helper()
	o := options.Default()
	o.SystemNamespace = namespace
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)
	expanded := make([]string, len(args))
	for i, a := range args {
		expanded[i] = strings.ReplaceAll(a, "$(POD_NAMESPACE)", namespace)
	}
	if err := fs.Parse(expanded); err != nil {
		t.Fatalf("nudge refuses the chart's args %q: %v", args, err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("nudge refuses the chart's args %q: %v", args, err)
	}
	return o
}
