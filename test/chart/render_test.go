// Package chart tests nudge's Helm chart: helm lint, what every notable
// combination of values renders (checked on the parsed objects, and the
// flags parsed by nudge's own options), and that config/ is the chart
// rendered. The end-to-end tests are in test/chart/e2e.
package chart

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/test/chart/charttest"
)

const (
	release   = "nudge"
	namespace = "nudge-system"
	keySecret = "nudge-fingerprint-key"
)

func TestLint(t *testing.T) {
	for name, set := range map[string][]string{
		"default values":             nil,
		"namespaced":                 {"reloader.watchGlobally=false"},
		"replicated, with a monitor": {"replicas=2", "metrics.serviceMonitor.enabled=true"},
	} {
		t.Run(name, func(t *testing.T) {
			args := []string{"lint", "--strict", charttest.Chart(t)}
			for _, s := range set {
				args = append(args, "--set", s)
			}
			out, err := exec.Command(charttest.Helm(t), args...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

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
				g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "ClusterRole", "ClusterRoleBinding",
					"Role", "RoleBinding", "Service", "Deployment"))
				g.Expect(r.opts.Namespaces).To(BeEmpty())
				g.Expect(r.opts.SystemNamespace).To(Equal(namespace))
				g.Expect(r.opts.KeySecret).To(Equal(keySecret))
				g.Expect(r.opts.MetricsAddr).To(Equal(":9090"))
				g.Expect(r.opts.ProbeAddr).To(Equal(":8081"))
				g.Expect(r.opts.IgnoredWorkloadTypes).To(BeEmpty(), "Argo Rollouts handled")
				g.Expect(r.deploy.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
				g.Expect(r.can("list", "apiextensions.k8s.io", "customresourcedefinitions", "")).To(BeFalse(), "Argo Rollouts found by discovery")
				g.Expect(r.can("patch", "argoproj.io", "rollouts", "shop")).To(BeTrue())
				g.Expect(r.can("list", "", "secrets", "shop")).To(BeTrue())
				g.Expect(r.can("list", "", "namespaces", "")).To(BeFalse(), "no namespaces without a selector")
				g.Expect(r.can("create", "batch", "jobs", "shop")).To(BeFalse(), "Job handling is opt-in")
				g.Expect(r.can("list", "batch", "jobs", "shop")).To(BeFalse())
				g.Expect(r.can("get", "coordination.k8s.io", "leases", namespace)).To(BeFalse(), "no leader election")
				g.Expect(r.canNamed("get", "coordination.k8s.io", "leases", namespace, release)).To(BeFalse())
				g.Expect(r.canNamed("get", "", "secrets", namespace, keySecret)).To(BeTrue())
				g.Expect(r.canNamed("get", "", "secrets", "shop", keySecret)).To(BeFalse())
				g.Expect(r.can("create", "", "secrets", namespace)).To(BeTrue(), "the key, at first start")
				g.Expect(r.can("create", "", "secrets", "shop")).To(BeFalse())
			},
		},
		"watchGlobally=false: Roles in the release namespace only, no ClusterRole of any kind": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false}},
			check: func(g Gomega, r rendered) {
				g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "Role", "Role", "RoleBinding", "RoleBinding", "Service", "Deployment"))
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
				g.Expect(r.m.Get("ClusterRole", release+"-cluster")).NotTo(BeNil(), "the cluster-scoped role, for namespaces alone")
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
		"recreateJobs and cronJobStartJob: Jobs deleted and created, nothing more": {
			values: charttest.Values{"recreateJobs": true, "cronJobStartJob": true},
			check: func(g Gomega, r rendered) {
				g.Expect(r.opts.RecreateJobs && r.opts.CronJobStartJob).To(BeTrue())
				g.Expect(r.can("delete", "batch", "jobs", "shop")).To(BeTrue())
				g.Expect(r.can("create", "batch", "jobs", "shop")).To(BeTrue())
				g.Expect(r.can("update", "batch", "jobs", "shop")).To(BeFalse())
				g.Expect(r.can("delete", "batch", "cronjobs", "shop")).To(BeFalse())
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
				g.Expect(r.m.OfKind("ClusterRole")).To(HaveLen(1))
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
				g.Expect(r.m.Kinds()).To(ConsistOf("ServiceAccount", "Service", "Deployment"))
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

func TestRenderRefuses(t *testing.T) {
	tests := map[string]struct {
		values charttest.Values
		want   string
	}{
		"ignoring both kinds of source": {
			values: charttest.Values{"reloader": map[string]any{"ignoreSecrets": true, "ignoreConfigMaps": true}},
			want:   "cannot both be true",
		},
		"namespaces without watchGlobally": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "namespaces": "shop"}},
			want:   "reloader.namespaces needs reloader.watchGlobally=true",
		},
		"a namespace selector without watchGlobally": {
			values: charttest.Values{"reloader": map[string]any{"watchGlobally": false, "namespaceSelector": "team=a"}},
			want:   "reloader.namespaceSelector needs reloader.watchGlobally=true",
		},
		"a Reloader value nudge does not take": {
			values: charttest.Values{"reloader": map[string]any{"deployment": map[string]any{"replicas": 2}}},
			want:   "additional properties 'deployment' not allowed",
		},
		"a misspelt value": {
			values: charttest.Values{"replica": 2},
			want:   "additional properties 'replica' not allowed",
		},
		"an unknown strategy": {
			values: charttest.Values{"reloader": map[string]any{"reloadStrategy": "rolling"}},
			want:   "reloadStrategy",
		},
		"a ServiceMonitor without metrics": {
			values: charttest.Values{"metrics": map[string]any{"enabled": false, "serviceMonitor": map[string]any{"enabled": true}}},
			want:   "metrics.serviceMonitor.enabled needs metrics.enabled",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, out, err := charttest.TryRender(t, release, namespace, tc.values)
			if err == nil {
				t.Fatalf("helm template succeeded; want an error containing %q", tc.want)
			}
			NewWithT(t).Expect(string(out)).To(ContainSubstring(tc.want))
		})
	}
}

func render(t *testing.T, values charttest.Values) rendered {
	t.Helper()
	return renderAs(t, release, values)
}

// renderAs is render of the release named name.
func renderAs(t *testing.T, name string, values charttest.Values) rendered {
	t.Helper()
	r := rendered{m: charttest.Render(t, name, namespace, values)}
	deploys := r.m.OfKind("Deployment")
	if len(deploys) != 1 {
		t.Fatalf("Rendered %d Deployments, want 1", len(deploys))
	}
	r.deploy = &appsv1.Deployment{}
	charttest.Into(t, deploys[0], r.deploy)
	r.opts = parseArgs(t, r.deploy.Spec.Template.Spec.Containers[0].Args, namespace)
	r.grants = grants(t, r.m)
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

// checkInvariants checks what holds for every rendering: least privilege,
// restricted pod security, leader election with a Lease named after the
// release and a PodDisruptionBudget with several replicas, Argo Rollouts
// handled unless isArgoRollouts=false, the ServiceMonitor only when asked for.
func checkInvariants(t *testing.T, r rendered, values charttest.Values) {
	t.Helper()
	g := NewWithT(t)
	reloader, _ := values["reloader"].(map[string]any)
	global := reloader["watchGlobally"] != false

	for _, o := range r.m {
		if !slices.Contains([]string{"ClusterRole", "ClusterRoleBinding", "RoleBinding"}, o.GetKind()) {
			g.Expect(o.GetNamespace()).To(Equal(namespace), "%s %s in the release namespace", o.GetKind(), o.GetName())
		}
		if !global {
			g.Expect(o.GetKind()).NotTo(BeElementOf("ClusterRole", "ClusterRoleBinding"))
			g.Expect(o.GetNamespace()).To(Equal(namespace), "%s %s", o.GetKind(), o.GetName())
		}
	}
	for _, gr := range r.grants {
		rule := gr.rule
		for _, field := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources} {
			g.Expect(field).NotTo(ContainElement("*"), "%s: no wildcard", gr.holder)
		}
		g.Expect(rule.NonResourceURLs).To(BeEmpty())
		g.Expect(rule.APIGroups).NotTo(ContainElement("apiextensions.k8s.io"), "%s: Argo Rollouts is found by discovery", gr.holder)
		if slices.Contains(rule.Resources, "leases") && !slices.Equal(rule.Verbs, []string{"create"}) {
			g.Expect(r.opts.LeaderElect).To(BeTrue(), "%s: Leases with leader election only", gr.holder)
			g.Expect(gr.scope).To(Equal(namespace), gr.holder)
			g.Expect(rule.ResourceNames).To(ConsistOf(r.opts.LeaderElectionID), "%s: its own Lease alone", gr.holder)
		}
		if slices.Contains(rule.APIGroups, "argoproj.io") {
			g.Expect(r.opts.Ignores("rollouts")).To(BeFalse(), "%s: no permission on Rollouts nudge ignores", gr.holder)
			g.Expect(rule.Resources).To(ConsistOf("rollouts"), gr.holder)
			g.Expect(rule.Verbs).To(ConsistOf("list", "watch", "patch"), gr.holder)
		}
		g.Expect(rule.Verbs).NotTo(ContainElement(BeElementOf("escalate", "bind", "impersonate", "deletecollection")), gr.holder)
		for _, res := range rule.Resources {
			g.Expect(res).NotTo(Or(Equal("pods"), HavePrefix("pods/")), "%s: no Pods", gr.holder)
			if res == "configmaps" {
				g.Expect(rule.Verbs).To(ConsistOf("list", "watch"), "%s: ConfigMaps are never written", gr.holder)
			}
			if res == "secrets" && !slices.Equal(rule.Verbs, []string{"list", "watch"}) {
				g.Expect(gr.scope).To(Equal(namespace), "%s: no Secret written or got outside the release namespace", gr.holder)
				g.Expect(rule.Verbs).To(Or(Equal([]string{"create"}), Equal([]string{"get"})), gr.holder)
				if slices.Contains(rule.Verbs, "get") {
					g.Expect(rule.ResourceNames).To(ConsistOf(r.opts.KeySecret), "%s: get the key Secret alone", gr.holder)
				}
			}
		}
	}

	spec := r.deploy.Spec.Template.Spec
	g.Expect(spec.Containers).To(HaveLen(1))
	c := spec.Containers[0]
	pod := spec.SecurityContext
	g.Expect(pod).NotTo(BeNil())
	g.Expect(pod.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.SeccompProfile).To(HaveValue(HaveField("Type", corev1.SeccompProfileTypeRuntimeDefault)))
	g.Expect(c.SecurityContext).NotTo(BeNil())
	g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(c.SecurityContext.Privileged).To(HaveValue(BeFalse()))
	g.Expect(c.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(c.SecurityContext.Capabilities).To(HaveValue(HaveField("Drop", Equal([]corev1.Capability{"ALL"}))))
	g.Expect(c.SecurityContext.Capabilities.Add).To(BeEmpty())
	g.Expect(spec.HostNetwork || spec.HostPID || spec.HostIPC).To(BeFalse())
	g.Expect(spec.Volumes).To(BeEmpty())

	g.Expect(c.Env).To(ContainElement(And(HaveField("Name", "POD_NAMESPACE"),
		HaveField("ValueFrom.FieldRef.FieldPath", "metadata.namespace"))))
	g.Expect(c.LivenessProbe).To(HaveValue(HaveField("HTTPGet.Path", "/healthz")))
	g.Expect(c.ReadinessProbe).To(HaveValue(HaveField("HTTPGet.Path", "/readyz")))
	g.Expect(c.Ports).To(ContainElement(And(HaveField("Name", "probes"), HaveField("ContainerPort", BeEquivalentTo(8081)))))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceCPU))
	g.Expect(c.Resources.Requests).To(HaveKey(corev1.ResourceMemory))
	g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))

	replicas := int32(1)
	if r.deploy.Spec.Replicas != nil {
		replicas = *r.deploy.Spec.Replicas
	}
	g.Expect(r.opts.LeaderElect).To(Equal(replicas > 1 || reloader["enableHA"] == true), "leader election")
	if r.opts.LeaderElect {
		g.Expect(r.opts.LeaderElectionID).To(Equal(r.deploy.Name), "the Lease named after the release's full name")
	}
	g.Expect(r.opts.Ignores("rollouts")).To(Equal(reloader["isArgoRollouts"] == false), "Argo Rollouts handled unless isArgoRollouts=false")
	if replicas > 1 {
		g.Expect(r.m.OfKind("PodDisruptionBudget")).To(HaveLen(1))
	} else {
		g.Expect(r.m.OfKind("PodDisruptionBudget")).To(BeEmpty())
	}
	metrics, _ := values["metrics"].(map[string]any)
	monitor, _ := metrics["serviceMonitor"].(map[string]any)
	if monitor["enabled"] == true {
		g.Expect(r.m.OfKind("ServiceMonitor")).To(HaveLen(1))
	} else {
		g.Expect(r.m.OfKind("ServiceMonitor")).To(BeEmpty())
	}
}

// grant is one rule as it applies: in one namespace, or cluster-wide
// (scope ""), through a binding to the chart's ServiceAccount.
type grant struct {
	holder string // kind/name of the role
	scope  string
	rule   rbacv1.PolicyRule
}

// grants returns every rule of the roles in m as bound by the bindings in
// m, failing t on a binding to another subject or to a role not in m.
func grants(t *testing.T, m charttest.Manifest) []grant {
	t.Helper()
	var out []grant
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, o := range m.OfKind(kind) {
			var b rbacv1.RoleBinding // a ClusterRoleBinding has the same fields
			charttest.Into(t, o, &b)
			for _, s := range b.Subjects {
				if s.Kind != "ServiceAccount" || s.Namespace != namespace {
					t.Errorf("%s %s binds %s %s/%s, not the chart's ServiceAccount", kind, b.Name, s.Kind, s.Namespace, s.Name)
				}
			}
			role := m.Get(b.RoleRef.Kind, b.RoleRef.Name)
			if role == nil {
				t.Fatalf("%s %s refers to %s %s, not rendered", kind, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
			}
			if b.RoleRef.Kind == "Role" && role.GetNamespace() != b.Namespace {
				t.Fatalf("RoleBinding %s/%s refers to a Role of namespace %s", b.Namespace, b.Name, role.GetNamespace())
			}
			var rules rbacv1.ClusterRole // a Role has the same fields
			charttest.Into(t, role, &rules)
			scope := b.Namespace // "" for a ClusterRoleBinding
			for _, rule := range rules.Rules {
				out = append(out, grant{holder: b.RoleRef.Kind + "/" + b.RoleRef.Name, scope: scope, rule: rule})
			}
		}
	}
	return out
}

// can reports whether the chart's ServiceAccount may do verb on resource of
// group in namespace ns ("" means cluster-wide, for a cluster-scoped
// resource or across all namespaces), whatever the object's name.
func (r rendered) can(verb, group, resource, ns string) bool {
	return r.canNamed(verb, group, resource, ns, "")
}

// canNamed is can for the object named name; "" means any name.
func (r rendered) canNamed(verb, group, resource, ns, name string) bool {
	for _, gr := range r.grants {
		if gr.scope != "" && gr.scope != ns {
			continue
		}
		rule := gr.rule
		named := len(rule.ResourceNames) == 0 || (name != "" && slices.Contains(rule.ResourceNames, name))
		if named && slices.Contains(rule.Verbs, verb) &&
			slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) {
			return true
		}
	}
	return false
}

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
