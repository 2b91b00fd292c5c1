package admission

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"nudge.dev/nudge/internal/workload"
)

// Path is where the webhook is served; a MutatingWebhookConfiguration names
// it in its clientConfig (the chart's, or a test's URL).
const Path = "/keep-trigger"

// Handler serves Keep for the kinds it knows. It fails open: it admits
// every request it cannot read or does not handle as it is.
type Handler struct {
	// Kinds are the kinds handled, by group and kind (see Kinds).
	Kinds map[schema.GroupKind]workload.Kind
	// EnvVars is --reload-strategy=env-vars (Input.EnvVars).
	EnvVars bool
}

var _ admission.Handler = (*Handler)(nil)

// Kinds returns every kind nudge rolls by a template write, by group and
// kind: the built-in ones, Argo Rollouts and custom.
func Kinds(custom []workload.CustomKind) map[schema.GroupKind]workload.Kind {
	m := map[schema.GroupKind]workload.Kind{
		{Group: "apps", Kind: "Deployment"}:  workload.Deployment,
		{Group: "apps", Kind: "StatefulSet"}: workload.StatefulSet,
		{Group: "apps", Kind: "DaemonSet"}:   workload.DaemonSet,
		{Group: "batch", Kind: "CronJob"}:    workload.CronJob,
		{Group: "batch", Kind: "Job"}:        workload.Job,
		workload.RolloutGVK.GroupKind():      workload.Rollout,
	}
	for _, c := range custom {
		m[c.GroupVersionKind().GroupKind()] = c.Adapter("")
	}
	return m
}

// Webhook returns h as a webhook a webhook.Server registers at Path; a panic
// in it is an error answer, which the configuration's failurePolicy Ignore
// admits.
func (h *Handler) Webhook() *webhook.Admission {
	return (&webhook.Admission{Handler: h}).WithRecoverPanic(true)
}

// Handle answers one admission request: a patch that keeps nudge's trigger
// when Keep says so, otherwise an admission unchanged.
func (h *Handler) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Update {
		return admission.Allowed("not an update")
	}
	k, ok := h.Kinds[schema.GroupKind{Group: req.Kind.Group, Kind: req.Kind.Kind}]
	if !ok {
		return admission.Allowed("not a kind nudge rolls")
	}
	var old, cur map[string]any
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return admission.Allowed("unreadable old object")
	}
	if err := json.Unmarshal(req.Object.Raw, &cur); err != nil {
		return admission.Allowed("unreadable object")
	}
	trigger := []string{workload.RestartedAtAnnotation, workload.RestartedForAnnotation}
	if a := k.TriggerAnnotation(); a != "" {
		trigger = append(trigger, a)
	}
	kept, why := Keep(Input{Old: old, New: cur, TemplatePath: k.TemplatePath(), TriggerPath: k.TriggerPath(), Trigger: trigger,
		RestartAt: k == workload.Rollout, EnvVars: h.EnvVars})
	log := ctrl.LoggerFrom(ctx).WithValues("kind", req.Kind.Kind, "namespace", req.Namespace, "name", req.Name, "user", req.UserInfo.Username)
	if kept == nil {
		log.V(1).Info("Admitted workload update as it is", "reason", string(why))
		return admission.Allowed(string(why))
	}
	body, err := json.Marshal(kept)
	if err != nil {
		return admission.Allowed("unwritable object")
	}
	log.Info("Kept nudge's trigger on a workload update that only dropped it")
	return admission.PatchResponseFromRaw(req.Object.Raw, body)
}
