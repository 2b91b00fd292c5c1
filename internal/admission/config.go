package admission

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/workload"
)

// TimeoutSeconds is how long the API server waits for the webhook before it
// admits the write as it is (failurePolicy Ignore): the webhook reads
// nothing but the request.
const TimeoutSeconds = 5

// Webhooks returns the webhooks of a MutatingWebhookConfiguration that
// registers the webhook at cc (whose path must be Path) for every built-in
// kind nudge rolls and Argo Rollouts, on UPDATE only, as the chart renders
// them: failurePolicy Ignore (a webhook down or slow admits the write as it
// is), no side effects, never reinvoked, and matchConditions that send only
// the writes that may drop the trigger (the stored template carries it and,
// but under Reloader's env-vars strategy, the written one lacks it; for an
// Argo Rollout, likewise spec.restartAt), so that the API server calls the
// webhook for nothing else.
//
// Each custom kind (custom, as --custom-kinds-file lists them) whose
// trigger lies in its pod template and whose resource is given gets a
// webhook of its own, named "<resource>.<group>.keep-trigger.nudge.dev", in
// their order; the others (no template, a trigger outside it: Keep's
// NoTemplate) get none.
func Webhooks(cc admissionregistrationv1.WebhookClientConfig, envVars bool, custom []workload.CustomKind) []admissionregistrationv1.MutatingWebhook {
	update := []admissionregistrationv1.OperationType{admissionregistrationv1.Update}
	rule := func(group, version string, resources ...string) admissionregistrationv1.RuleWithOperations {
		return admissionregistrationv1.RuleWithOperations{Operations: update, Rule: admissionregistrationv1.Rule{
			APIGroups: []string{group}, APIVersions: []string{version}, Resources: resources, Scope: ptr.To(admissionregistrationv1.NamespacedScope),
		}}
	}
	hook := func(name, template, trigger string, restartAt bool, rules ...admissionregistrationv1.RuleWithOperations) admissionregistrationv1.MutatingWebhook {
		return admissionregistrationv1.MutatingWebhook{
			Name:                    name,
			ClientConfig:            cc,
			Rules:                   rules,
			FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To[int32](TimeoutSeconds),
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
			MatchConditions:         matchConditions(template, trigger, envVars, restartAt),
		}
	}
	const annotations = ".metadata.annotations"
	hooks := []admissionregistrationv1.MutatingWebhook{
		hook("templates.keep-trigger.nudge.dev", "spec.template", "spec.template"+annotations, false,
			rule("apps", "v1", "deployments", "statefulsets", "daemonsets"), rule("batch", "v1", "jobs")),
		hook("cronjobs.keep-trigger.nudge.dev", "spec.jobTemplate.spec.template", "spec.jobTemplate.spec.template"+annotations, false,
			rule("batch", "v1", "cronjobs")),
		hook("rollouts.keep-trigger.nudge.dev", "spec.template", "spec.template"+annotations, true, rule("argoproj.io", "v1alpha1", "rollouts")),
	}
	for _, c := range custom {
		trigger := c.TriggerPath
		if trigger == "" {
			trigger = c.TemplatePath + annotations
		}
		if c.TemplatePath == "" || c.Resource == "" || !strings.HasPrefix(trigger, c.TemplatePath+".") {
			continue
		}
		gv := c.GroupVersionKind()
		name := strings.TrimSuffix(c.Resource+"."+gv.Group, ".") + ".keep-trigger.nudge.dev"
		hooks = append(hooks, hook(name, c.TemplatePath, trigger, false, rule(gv.Group, gv.Version, c.Resource)))
	}
	return hooks
}

// NamespaceSelector returns the namespaceSelector of nudge's webhooks, as
// the chart renders it: the namespaces nudge acts in, as its flags name
// them, so that the API server sends it no write of another. They are the
// namespaces of namespaces (--namespaces; any when empty), but those of
// ignored (--namespaces-to-ignore), whose labels selector matches
// (--namespace-selector, in labels.Parse syntax, as options.ParseSelector
// returns it; any when empty): one matchExpression on the label
// kubernetes.io/metadata.name for each list, then selector's, each
// equality written as In and each inequality as NotIn. It returns nil for
// every namespace, and an error when selector does not parse or uses an
// operator a LabelSelector has not (> and <).
func NamespaceSelector(namespaces, ignored []string, selector string) (*metav1.LabelSelector, error) {
	var exprs []metav1.LabelSelectorRequirement
	if len(namespaces) > 0 {
		exprs = append(exprs, metav1.LabelSelectorRequirement{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: namespaces})
	}
	if len(ignored) > 0 {
		exprs = append(exprs, metav1.LabelSelectorRequirement{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: ignored})
	}
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("the namespace selector %q: %w", selector, err)
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		var op metav1.LabelSelectorOperator
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			op = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			op = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			op = metav1.LabelSelectorOpExists
		case selection.DoesNotExist:
			op = metav1.LabelSelectorOpDoesNotExist
		default:
			return nil, fmt.Errorf("the namespace selector %q: a webhook's namespaceSelector has no operator %s", selector, r.Operator())
		}
		exprs = append(exprs, metav1.LabelSelectorRequirement{Key: r.Key(), Operator: op, Values: r.ValuesUnsorted()})
	}
	if len(exprs) == 0 {
		return nil, nil
	}
	return &metav1.LabelSelector{MatchExpressions: exprs}, nil
}

// matchConditions returns the CEL conditions that send a write of a
// workload whose pod template is at template and trigger annotations at
// trigger (both dotted) to the webhook; with restartAt (Argo Rollouts),
// also one that drops spec.restartAt (Input.RestartAt).
func matchConditions(template, trigger string, envVars, restartAt bool) []admissionregistrationv1.MatchCondition {
	carries := func(obj string) string {
		path := obj + "." + trigger
		return fmt.Sprintf("%s && '%s' in %s", has(path), workload.RestartedAtAnnotation, path)
	}
	restarts := func(obj string) string { return "(" + has(obj+".spec.restartAt") + ")" }
	if envVars {
		path := "oldObject." + template
		env := fmt.Sprintf("(%s && %s.spec.containers.exists(c, has(c.env) && c.env.exists(e, e.name.startsWith('STAKATER_'))))", has(path+".spec.containers"), path)
		expr := "(" + carries("oldObject") + ") || " + env
		if restartAt {
			expr += " || " + restarts("oldObject")
		}
		return []admissionregistrationv1.MatchCondition{{Name: "carries-the-trigger", Expression: expr}}
	}
	if restartAt {
		return []admissionregistrationv1.MatchCondition{
			{Name: "carries-the-trigger", Expression: "(" + carries("oldObject") + ") || " + restarts("oldObject")},
			{Name: "drops-the-trigger", Expression: fmt.Sprintf("((%s) && !(%s)) || (%s && !%s)",
				carries("oldObject"), carries("object"), restarts("oldObject"), restarts("object"))},
		}
	}
	return []admissionregistrationv1.MatchCondition{
		{Name: "carries-the-trigger", Expression: carries("oldObject")},
		{Name: "drops-the-trigger", Expression: "!(" + carries("object") + ")"},
	}
}

// has returns a CEL test that every field of path (dotted, from a root
// variable) is set: has(a.b) && has(a.b.c) ...
func has(path string) string {
	parts := strings.Split(path, ".")
	var tests []string
	for i := 2; i <= len(parts); i++ {
		tests = append(tests, "has("+strings.Join(parts[:i], ".")+")")
	}
	return strings.Join(tests, " && ")
}
