package admission

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"

	"nudge.dev/nudge/internal/workload"
)

// obj builds a Deployment-like object: its metadata annotations and labels,
// and a pod template with annotations and one container with env.
func obj(meta, labels, template map[string]any, image string, env ...any) map[string]any {
	c := map[string]any{"name": "app", "image": image}
	if len(env) > 0 {
		c["env"] = env
	}
	t := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "spec": map[string]any{"containers": []any{c}}}
	if template != nil {
		t["metadata"].(map[string]any)["annotations"] = template
	}
	m := map[string]any{"name": "web"}
	if meta != nil {
		m["annotations"] = meta
	}
	if labels != nil {
		m["labels"] = labels
	}
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": m, "spec": map[string]any{"replicas": 1.0, "template": t}}
}

func env(name, value string) any { return map[string]any{"name": name, "value": value} }

var (
	trigger  = map[string]any{workload.RestartedAtAnnotation: "2026-01-01T00:00:00Z", workload.RestartedForAnnotation: "ConfigMap ns/app"}
	state    = map[string]any{"nudge.dev/auto": "true", workload.AppliedAnnotation: "v1.abc ConfigMap/app=x", workload.LastRolloutAnnotation: "2026-01-01T00:00:00Z"}
	sealed   = map[string]any{"app": "web", workload.SealLabel: "s"}
	manifest = map[string]any{"nudge.dev/auto": "true"}
	plain    = map[string]any{"app": "web"}
)

func TestKeep(t *testing.T) {
	tests := map[string]struct {
		in   Input
		want map[string]any // nil: admitted as it is
		why  Reason
	}{
		"a replace from the manifest gets the template and nudge's state back": {
			in:   Input{Old: obj(state, sealed, trigger, "app:1"), New: obj(manifest, plain, nil, "app:1")},
			want: obj(state, sealed, trigger, "app:1"),
			why:  Kept,
		},
		"a write that keeps nudge's state but drops the trigger gets the trigger back": {
			in:   Input{Old: obj(state, sealed, trigger, "app:1"), New: obj(state, sealed, nil, "app:1")},
			want: obj(state, sealed, trigger, "app:1"),
			why:  Kept,
		},
		"the owner's other metadata stays the owner's": {
			in: Input{Old: obj(state, sealed, trigger, "app:1"),
				New: obj(map[string]any{"team": "blue"}, map[string]any{"tier": "2"}, nil, "app:1")},
			want: obj(map[string]any{"team": "blue", workload.AppliedAnnotation: state[workload.AppliedAnnotation], workload.LastRolloutAnnotation: state[workload.LastRolloutAnnotation]},
				map[string]any{"tier": "2", workload.SealLabel: "s"}, trigger, "app:1"),
			why: Kept,
		},
		"the other template annotations are compared too": {
			in:  Input{Old: obj(state, sealed, merge(trigger, map[string]any{"a": "1"}), "app:1"), New: obj(manifest, plain, map[string]any{"a": "2"}, "app:1")},
			why: TemplateChanged,
		},
		"a template annotation of the owner's kept beside the trigger": {
			in:   Input{Old: obj(state, sealed, merge(trigger, map[string]any{"a": "1"}), "app:1"), New: obj(manifest, plain, map[string]any{"a": "1"}, "app:1")},
			want: obj(state, sealed, merge(trigger, map[string]any{"a": "1"}), "app:1"),
			why:  Kept,
		},
		"a new image is the owner's rollout": {
			in:  Input{Old: obj(state, sealed, trigger, "app:1"), New: obj(manifest, plain, nil, "app:2")},
			why: TemplateChanged,
		},
		"a workload never rolled is left alone": {
			in:  Input{Old: obj(state, sealed, nil, "app:1"), New: obj(manifest, plain, nil, "app:1")},
			why: NoTrigger,
		},
		"a write that sets a trigger of its own is left alone": {
			in: Input{Old: obj(state, sealed, trigger, "app:1"),
				New: obj(manifest, plain, map[string]any{workload.RestartedAtAnnotation: "2025-01-01T00:00:00Z"}, "app:1")},
			why: TriggerWritten,
		},
		"a write that drops part of the trigger is left alone": {
			in: Input{Old: obj(state, sealed, trigger, "app:1"),
				New: obj(manifest, plain, map[string]any{workload.RestartedForAnnotation: "ConfigMap ns/app"}, "app:1")},
			why: TriggerWritten,
		},
		"a write-back of another applied state is left to the reconciler": {
			in: Input{Old: obj(state, sealed, trigger, "app:1"),
				New: obj(map[string]any{workload.AppliedAnnotation: "v1.abc ConfigMap/app=old"}, sealed, nil, "app:1")},
			why: StateWritten,
		},
		"a write-back of another seal is left to the reconciler": {
			in:  Input{Old: obj(state, sealed, trigger, "app:1"), New: obj(manifest, map[string]any{workload.SealLabel: "old"}, nil, "app:1")},
			why: StateWritten,
		},
		"the kind's trigger annotation is part of the trigger": {
			in: Input{Old: obj(state, sealed, merge(trigger, map[string]any{"reconcile.fluxcd.io/requestedAt": "t"}), "app:1"), New: obj(manifest, plain, nil, "app:1"),
				Trigger: []string{workload.RestartedAtAnnotation, workload.RestartedForAnnotation, "reconcile.fluxcd.io/requestedAt"}},
			want: obj(state, sealed, merge(trigger, map[string]any{"reconcile.fluxcd.io/requestedAt": "t"}), "app:1"),
			why:  Kept,
		},
		"a trigger outside the template is not handled": {
			in:  Input{Old: obj(state, sealed, trigger, "app:1"), New: obj(manifest, plain, nil, "app:1"), TriggerPath: []string{"metadata", "annotations"}},
			why: NoTemplate,
		},
		"an object without a template is not handled": {
			in:  Input{Old: map[string]any{"spec": map[string]any{"workloadRef": map[string]any{}}}, New: map[string]any{"spec": map[string]any{}}},
			why: NoTemplate,
		},
		"with env-vars, Reloader's env var is the trigger": {
			in: Input{Old: obj(state, sealed, nil, "app:1", env("A", "1"), env("STAKATER_APP_CONFIGMAP", "d")), New: obj(manifest, plain, nil, "app:1", env("A", "1")),
				EnvVars: true},
			want: obj(state, sealed, nil, "app:1", env("A", "1"), env("STAKATER_APP_CONFIGMAP", "d")),
			why:  Kept,
		},
		"with env-vars, a write that changes another env var is the owner's": {
			in: Input{Old: obj(state, sealed, nil, "app:1", env("A", "1"), env("STAKATER_APP_SECRET", "d")), New: obj(manifest, plain, nil, "app:1", env("A", "2")),
				EnvVars: true},
			why: TemplateChanged,
		},
		"a Rollout's replace that drops nudge's spec.restartAt gets it and nudge's state back": {
			in:   Input{Old: restarted(obj(restartState, sealed, nil, "app:1"), restartAt), New: obj(restartManifest, plain, nil, "app:1"), RestartAt: true},
			want: restarted(obj(restartState, sealed, nil, "app:1"), restartAt),
			why:  KeptRestartAt,
		},
		"a Rollout's write that keeps nudge's state but drops spec.restartAt gets it back": {
			in:   Input{Old: restarted(obj(restartState, sealed, nil, "app:1"), restartAt), New: obj(restartState, sealed, nil, "app:1"), RestartAt: true},
			want: restarted(obj(restartState, sealed, nil, "app:1"), restartAt),
			why:  KeptRestartAt,
		},
		"a spec.restartAt that is not nudge's last rollout is the owner's": {
			in:  Input{Old: restarted(obj(restartState, sealed, nil, "app:1"), "2026-01-02T00:00:00Z"), New: obj(restartManifest, plain, nil, "app:1"), RestartAt: true},
			why: NoTrigger,
		},
		"a dropped spec.restartAt with a template change is the owner's rollout": {
			in:  Input{Old: restarted(obj(restartState, sealed, nil, "app:1"), restartAt), New: obj(restartManifest, plain, nil, "app:2"), RestartAt: true},
			why: NoTrigger,
		},
		"a write that sets spec.restartAt is the owner's": {
			in: Input{Old: restarted(obj(restartState, sealed, nil, "app:1"), restartAt),
				New: restarted(obj(restartManifest, plain, nil, "app:1"), "2026-01-03T00:00:00Z"), RestartAt: true},
			why: NoTrigger,
		},
		"a dropped spec.restartAt with a write-back of another state is left to the reconciler": {
			in: Input{Old: restarted(obj(restartState, sealed, nil, "app:1"), restartAt),
				New: obj(map[string]any{workload.AppliedAnnotation: "v1.abc ConfigMap/app=old"}, sealed, nil, "app:1"), RestartAt: true},
			why: StateWritten,
		},
		"a Rollout with a workloadRef (no template) gets nudge's spec.restartAt and state back": {
			in:   Input{Old: restarted(workloadRef(refState, sealed), restartAt), New: workloadRef(manifest, plain), RestartAt: true},
			want: restarted(workloadRef(refState, sealed), restartAt),
			why:  KeptRestartAt,
		},
		"spec.restartAt counts only for a Rollout": {
			in:  Input{Old: restarted(obj(restartState, sealed, nil, "app:1"), restartAt), New: obj(restartManifest, plain, nil, "app:1")},
			why: NoTrigger,
		},
		"without env-vars, a STAKATER_ env var is the owner's": {
			in:  Input{Old: obj(state, sealed, nil, "app:1", env("STAKATER_APP_CONFIGMAP", "d")), New: obj(manifest, plain, nil, "app:1")},
			why: NoTrigger,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			in := tc.in
			if in.TemplatePath == nil {
				in.TemplatePath = workload.Deployment.TemplatePath()
			}
			if in.TriggerPath == nil {
				in.TriggerPath = workload.Deployment.TriggerPath()
			}
			if in.Trigger == nil {
				in.Trigger = []string{workload.RestartedAtAnnotation, workload.RestartedForAnnotation}
			}
			old, cur := runtime.DeepCopyJSON(in.Old), runtime.DeepCopyJSON(in.New)
			got, why := Keep(in)
			g.Expect(why).To(Equal(tc.why))
			if tc.want == nil {
				g.Expect(got).To(BeNil())
			} else {
				g.Expect(got).To(Equal(tc.want))
			}
			g.Expect(in.Old).To(Equal(old), "the old object untouched")
			g.Expect(in.New).To(Equal(cur), "the new object untouched")
		})
	}
}

// refState is nudge's state on a Rollout with a workloadRef, rolled by
// spec.restartAt without Reloader's rollout-strategy.
var refState = merge(manifest, map[string]any{
	workload.AppliedAnnotation: "v1.abc ConfigMap/app=x", workload.LastRolloutAnnotation: "2026-01-01T00:00:00.123456Z"})

// workloadRef builds an Argo Rollout that takes its pod template from a
// Deployment: its metadata annotations and labels, and a spec.workloadRef.
func workloadRef(meta, labels map[string]any) map[string]any {
	return map[string]any{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
		"metadata": map[string]any{"name": "web", "annotations": meta, "labels": labels},
		"spec":     map[string]any{"workloadRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web-pods"}}}
}

// restartAt is the spec.restartAt nudge writes with the last rollout of
// restartState (its time, to the second).
const restartAt = "2026-01-01T00:00:00Z"

var (
	restartManifest = map[string]any{"nudge.dev/auto": "true", "reloader.stakater.com/rollout-strategy": "restart"}
	restartState    = merge(restartManifest, map[string]any{
		workload.AppliedAnnotation: "v1.abc ConfigMap/app=x", workload.LastRolloutAnnotation: "2026-01-01T00:00:00.123456Z"})
)

// restarted returns o with spec.restartAt set to at.
func restarted(o map[string]any, at string) map[string]any {
	o["spec"].(map[string]any)["restartAt"] = at
	return o
}

// merge returns a's entries with b's over them.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
