package chart

import (
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"nudge.dev/nudge/test/chart/charttest"
)

// checkInvariants checks what holds for every rendering: least privilege,
// restricted pod security, leader election with a Lease named after the
// release and a PodDisruptionBudget with several replicas, Argo Rollouts
// handled unless isArgoRollouts=false, the ServiceMonitor, the PrometheusRule
// and the dashboard only when asked for.
// values are the values given, Reloader's included (reloader.deployment...).
func checkInvariants(t *testing.T, r rendered, values charttest.Values) {
	t.Helper()
	g := NewWithT(t)
	reloader, _ := values["reloader"].(map[string]any)
	global := reloader["watchGlobally"] != false
	bindings, _ := values["valueBindings"].(map[string]any)
	valueBindings := bindings["enabled"] == true
	targets := valueBindingTargets(values)

	webhook := nested(values, "admissionWebhook", "enabled") == true
	home := ownNamespace(values)
	for _, o := range r.m {
		if o.GetKind() == "MutatingWebhookConfiguration" {
			g.Expect(webhook).To(BeTrue(), "%s: the admission webhook when enabled only", o.GetName())
			g.Expect(o.GetNamespace()).To(BeEmpty(), "%s is cluster-scoped", o.GetName())
			continue
		}
		if slices.Contains(admissionKinds, o.GetKind()) {
			g.Expect(valueBindings).To(BeTrue(), "%s %s: the admission policy with value bindings only", o.GetKind(), o.GetName())
			g.Expect(o.GetNamespace()).To(BeEmpty(), "%s %s is cluster-scoped", o.GetKind(), o.GetName())
			continue
		}
		if monitor, _ := nested(values, "reloader", lowerFirst(o.GetKind()), "namespace").(string); monitor != "" {
			g.Expect(o.GetNamespace()).To(Equal(monitor), "%s %s in the namespace asked for", o.GetKind(), o.GetName())
			continue
		}
		if key := monitoringKey(o); key != "" {
			if ns, _ := nested(values, key, "namespace").(string); ns != "" {
				g.Expect(o.GetNamespace()).To(Equal(ns), "%s %s in the namespace asked for", o.GetKind(), o.GetName())
				continue
			}
		}
		if !slices.Contains([]string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, o.GetKind()) {
			g.Expect(o.GetNamespace()).To(Equal(home), "%s %s in nudge's namespace", o.GetKind(), o.GetName())
		}
		if o.GetKind() == "Role" && global {
			g.Expect(o.GetNamespace()).To(Equal(home), "Role %s in nudge's namespace", o.GetName())
		}
		if !global {
			g.Expect(o.GetKind()).NotTo(BeElementOf("ClusterRole", "ClusterRoleBinding"))
			if slices.Contains([]string{"Role", "RoleBinding"}, o.GetKind()) {
				g.Expect(o.GetNamespace()).To(BeElementOf(append(r.opts.Namespaces, home)), "%s %s in a watched namespace", o.GetKind(), o.GetName())
			} else {
				g.Expect(o.GetNamespace()).To(Equal(home), "%s %s", o.GetKind(), o.GetName())
			}
		}
	}
	if valueBindings {
		g.Expect(r.m.OfKind("ValidatingAdmissionPolicy")).To(HaveLen(1), "value bindings never without their admission policy")
		g.Expect(r.m.OfKind("ValidatingAdmissionPolicyBinding")).To(HaveLen(1))
	}
	g.Expect(r.opts.ValueBindings).To(Equal(valueBindings), "--value-bindings")
	for _, gr := range r.grants {
		rule := gr.rule
		for _, field := range [][]string{rule.Verbs, rule.APIGroups, rule.Resources} {
			g.Expect(field).NotTo(ContainElement("*"), "%s: no wildcard", gr.holder)
		}
		g.Expect(rule.NonResourceURLs).To(BeEmpty())
		for _, group := range []string{"apiextensions.k8s.io", "apiregistration.k8s.io"} {
			if slices.Contains(rule.APIGroups, group) {
				g.Expect(gr.holder).To(And(HavePrefix("ClusterRole/"), HaveSuffix("-cluster")), "%s: %s in the cluster-scoped role alone", gr.holder, group)
				g.Expect(gr.scope).To(BeEmpty(), "%s: bound cluster-wide", gr.holder)
				g.Expect(rule.Verbs).To(ConsistOf("list", "watch"), "%s: the names of what serves new kinds, read alone", gr.holder)
				g.Expect(rule.Resources).To(ConsistOf(BeElementOf("customresourcedefinitions", "apiservices")), gr.holder)
			}
		}
		if slices.Contains(rule.Resources, "leases") && !slices.Equal(rule.Verbs, []string{"create"}) {
			g.Expect(r.opts.LeaderElect).To(BeTrue(), "%s: Leases with leader election only", gr.holder)
			g.Expect(gr.scope).To(Equal(home), gr.holder)
			g.Expect(rule.ResourceNames).To(ConsistOf(r.opts.LeaderElectionID), "%s: its own Lease alone", gr.holder)
		}
		for _, group := range rule.APIGroups {
			if !slices.Contains(builtInGroups, group) || (group == "" && !slices.Contains(coreResources, rule.Resources[0])) {
				g.Expect(rule.Resources).To(HaveLen(1), gr.holder)
				g.Expect(append(targets, customKindResources(values)...)).To(ContainElement(group+"/"+rule.Resources[0]),
					"%s: only the kinds of valueBindings.targets and customKinds", gr.holder)
				g.Expect(rule.Verbs).To(ConsistOf("get", "list", "watch", "patch"), "%s: a target or custom kind, exactly", gr.holder)
			}
		}
		if slices.Contains(rule.APIGroups, "external-secrets.io") || slices.Contains(rule.APIGroups, "cert-manager.io") {
			g.Expect(rule.Resources).To(ConsistOf(BeElementOf("externalsecrets", "certificates")), "%s: the producers of Secrets alone", gr.holder)
			g.Expect(rule.Verbs).To(ConsistOf("list", "watch"), "%s: the producers' status, read from a watch", gr.holder)
		}
		if slices.Contains(rule.APIGroups, "nudge.dev") {
			g.Expect(valueBindings).To(BeTrue(), "%s: no permission on ValueBindings unless enabled", gr.holder)
			g.Expect(rule.Verbs).NotTo(ContainElement(BeElementOf("create", "delete")), "%s: nudge never creates or deletes a ValueBinding", gr.holder)
		}
		if slices.Contains(rule.APIGroups, "argoproj.io") {
			g.Expect(r.opts.Ignores("rollouts")).To(BeFalse(), "%s: no permission on Rollouts nudge ignores", gr.holder)
			g.Expect(rule.Resources).To(ConsistOf("rollouts"), gr.holder)
			g.Expect(rule.Verbs).To(ConsistOf("list", "watch", "patch"), gr.holder)
		}
		g.Expect(rule.Verbs).NotTo(ContainElement(BeElementOf("escalate", "bind", "impersonate", "deletecollection")), gr.holder)
		for _, res := range rule.Resources {
			switch {
			case res == "pods":
				g.Expect(r.opts.EnableEviction).To(BeTrue(), "%s: no Pods but with eviction.enabled", gr.holder)
				g.Expect(rule.Verbs).To(ConsistOf("list"), "%s: the pods of a workload restarted, listed, never watched nor deleted", gr.holder)
			case res == "pods/eviction":
				g.Expect(r.opts.EnableEviction).To(BeTrue(), "%s: no evictions but with eviction.enabled", gr.holder)
				g.Expect(rule.Verbs).To(ConsistOf("create"), gr.holder)
			default:
				g.Expect(res).NotTo(HavePrefix("pods/"), "%s: no other subresource of Pods", gr.holder)
			}
			if res == "configmaps" && gr.scope == home && (slices.Equal(rule.Verbs, []string{"create"}) || slices.Contains(rule.Verbs, "update")) {
				// nudge's own settings ConfigMap, in its namespace alone.
				if slices.Contains(rule.Verbs, "update") {
					g.Expect(rule.Verbs).To(Equal([]string{"get", "update"}), gr.holder)
					g.Expect(rule.ResourceNames).To(ConsistOf(r.opts.SettingsConfigMap), "%s: update its settings ConfigMap alone", gr.holder)
				}
				continue
			}
			if res == "configmaps" {
				g.Expect(rule.Verbs).To(Or(ConsistOf("list", "watch"), ConsistOf("get")), "%s: ConfigMaps are never written but nudge's settings", gr.holder)
				if slices.Contains(rule.Verbs, "get") {
					g.Expect(valueBindings).To(BeTrue(), "%s: a ConfigMap got for a value binding alone", gr.holder)
				}
			}
			if res == "secrets" && !slices.Equal(rule.Verbs, []string{"list", "watch"}) {
				g.Expect(rule.Verbs).NotTo(ContainElement("create"), "%s: no Secret created: the chart creates the key's and the Job journal's", gr.holder)
				if slices.Contains(rule.Verbs, "update") {
					own := []string{r.opts.KeySecret}
					if r.opts.RecreateJobs {
						own = append(own, r.opts.JobJournalSecret())
					}
					g.Expect(gr.scope).To(Equal(home), gr.holder)
					g.Expect(rule.Verbs).To(Equal([]string{"get", "update"}), gr.holder)
					g.Expect(rule.ResourceNames).To(ConsistOf(BeElementOf(own)), "%s: update the key and the Job journal alone", gr.holder)
					g.Expect(rule.ResourceNames).To(HaveLen(1), gr.holder)
					g.Expect(r.m.Get("Secret", rule.ResourceNames[0])).NotTo(BeNil(), "%s: the chart creates Secret %s", gr.holder, rule.ResourceNames[0])
					continue
				}
				g.Expect(rule.Verbs).To(Equal([]string{"get"}), "%s: Secrets are never written but the key and the Job journal", gr.holder)
				g.Expect(rule.ResourceNames).To(BeEmpty(), "%s: a named Secret is got and updated", gr.holder)
				g.Expect(valueBindings).To(BeTrue(), "%s: any Secret got for a value binding alone", gr.holder)
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
	volumes, _ := nested(values, "reloader", "deployment", "volumes").([]any)
	want := len(volumes)
	if customKindsGiven(values) {
		want++
		g.Expect(spec.Volumes).To(ContainElement(And(HaveField("Name", "custom-kinds"), HaveField("ConfigMap", Not(BeNil())))),
			"the custom kinds' ConfigMap")
	}
	if webhook {
		want++
		g.Expect(spec.Volumes).To(ContainElement(And(HaveField("Name", "webhook-certs"), HaveField("Secret", Not(BeNil())))),
			"the admission webhook's certificate")
	}
	g.Expect(spec.Volumes).To(HaveLen(want), "the volumes asked for, the custom kinds' ConfigMap and the webhook's certificate alone")
	g.Expect(r.m.OfKind("MutatingWebhookConfiguration")).To(HaveLen(map[bool]int{true: 1}[webhook]), "the admission webhook registered when enabled, else not")
	g.Expect(r.opts.AdmissionWebhook).To(Equal(webhook), "--admission-webhook")

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
		id, _ := nested(values, "reloader", "leaderElection", "id").(string)
		if id == "" {
			id = r.deploy.Name
		}
		g.Expect(r.opts.LeaderElectionID).To(Equal(id), "the Lease named after the release's full name, or reloader.leaderElection.id")
	}
	g.Expect(r.opts.Ignores("rollouts")).To(Equal(reloader["isArgoRollouts"] == false), "Argo Rollouts handled unless isArgoRollouts=false")
	if replicas > 1 || nested(values, "reloader", "podDisruptionBudget", "enabled") == true {
		g.Expect(r.m.OfKind("PodDisruptionBudget")).To(HaveLen(1))
	} else {
		g.Expect(r.m.OfKind("PodDisruptionBudget")).To(BeEmpty())
	}
	if nested(values, "metrics", "serviceMonitor", "enabled") == true || nested(values, "reloader", "serviceMonitor", "enabled") == true {
		g.Expect(r.m.OfKind("ServiceMonitor")).To(HaveLen(1))
	} else {
		g.Expect(r.m.OfKind("ServiceMonitor")).To(BeEmpty())
	}
	var rules, dashboards int
	for _, o := range r.m {
		switch monitoringKey(o) {
		case "prometheusRule":
			rules++
		case "dashboard":
			dashboards++
		}
	}
	g.Expect(rules == 1).To(Equal(nested(values, "prometheusRule", "enabled") == true), "a PrometheusRule when asked for, else none")
	g.Expect(dashboards == 1).To(Equal(nested(values, "dashboard", "enabled") == true), "a dashboard when asked for, else none")
	g.Expect(rules).To(BeNumerically("<=", 1))
	g.Expect(dashboards).To(BeNumerically("<=", 1))
}

// monitoringKey returns the values key of o when it is the PrometheusRule
// ("prometheusRule") or the dashboard's ConfigMap ("dashboard"), else "".
func monitoringKey(o *unstructured.Unstructured) string {
	switch {
	case o.GetKind() == "PrometheusRule":
		return "prometheusRule"
	case o.GetKind() == "ConfigMap" && strings.HasSuffix(o.GetName(), "-dashboard"):
		return "dashboard"
	}
	return ""
}

// admissionKinds are the kinds of the value bindings' admission policy.
var admissionKinds = []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}

// builtInGroups are the API groups nudge's own rules name (Secrets Store
// CSI's with reloader.enableCSIIntegration, the producers of Secrets with
// producerReadyTimeout); a rule on any other group is a value binding
// target's.
var builtInGroups = []string{"", "apps", "batch", "argoproj.io", "events.k8s.io", "coordination.k8s.io", "nudge.dev", "secrets-store.csi.x-k8s.io",
	"apiextensions.k8s.io", "apiregistration.k8s.io", "external-secrets.io", "cert-manager.io"}

// coreResources are the core-group resources nudge's own rules name (pods
// and their eviction with eviction.enabled).
var coreResources = []string{"configmaps", "secrets", "events", "namespaces", "pods", "pods/eviction"}

// valueBindingTargets returns valueBindings.targets as group/resource.
func valueBindingTargets(values charttest.Values) []string {
	bindings, _ := values["valueBindings"].(map[string]any)
	targets, _ := bindings["targets"].([]map[string]any)
	out := make([]string, len(targets))
	for i, t := range targets {
		out[i] = t["apiGroup"].(string) + "/" + t["resource"].(string)
	}
	return out
}

// ownNamespace returns the namespace values place the chart's namespaced
// objects in: the top-level namespace (Reloader's chart's), else the
// release's.
func ownNamespace(values charttest.Values) string {
	if ns, _ := values["namespace"].(string); ns != "" {
		return ns
	}
	return namespace
}

// grant is one rule as it applies: in one namespace, or cluster-wide
// (scope ""), through a binding to the chart's ServiceAccount.
type grant struct {
	holder string // kind/name of the role
	scope  string
	rule   rbacv1.PolicyRule
}

// grants returns every rule of the roles in m as bound by the bindings in
// m, failing t on a binding to another subject than the chart's
// ServiceAccount, in namespace, or to a role not in m.
func grants(t *testing.T, m charttest.Manifest, namespace string) []grant {
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
			var role *unstructured.Unstructured
			for _, o := range m.OfKind(b.RoleRef.Kind) {
				if o.GetName() == b.RoleRef.Name && (b.RoleRef.Kind == "ClusterRole" || o.GetNamespace() == b.Namespace) {
					role = o
				}
			}
			if role == nil {
				t.Fatalf("%s %s/%s refers to %s %s, not rendered there", kind, b.Namespace, b.Name, b.RoleRef.Kind, b.RoleRef.Name)
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

// nested returns values[keys[0]][keys[1]]..., or nil where a key is missing.
func nested(values map[string]any, keys ...string) any {
	var v any = values
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// lowerFirst returns s with its first letter lower case: a kind's name as
// in values (ServiceMonitor: serviceMonitor).
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// customKindsGiven reports whether values set a non-empty customKinds.
func customKindsGiven(values charttest.Values) bool { return len(customKindResources(values)) > 0 }

// customKindResources returns the customKinds of values as group/resource.
func customKindResources(values charttest.Values) []string {
	var kinds []map[string]any
	switch ck := values["customKinds"].(type) {
	case []any:
		for _, k := range ck {
			if m, ok := k.(map[string]any); ok {
				kinds = append(kinds, m)
			}
		}
	case []map[string]any:
		kinds = ck
	}
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		apiVersion, _ := k["apiVersion"].(string)
		group, _, found := strings.Cut(apiVersion, "/")
		if !found {
			group = ""
		}
		resource, _ := k["resource"].(string)
		out = append(out, group+"/"+resource)
	}
	return out
}
