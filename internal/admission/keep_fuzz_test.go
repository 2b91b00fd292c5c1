package admission

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"nudge.dev/nudge/internal/workload"
)

// FuzzKeep decides any UPDATE of any JSON objects, as any kind nudge rolls,
// with or without Argo Rollouts' spec.restartAt and Reloader's env-vars
// strategy: Keep never panics and never changes its inputs; it returns an
// object exactly when it says Kept or KeptRestartAt; that object encodes as
// JSON (the webhook's patch), holds the stored template when Kept, and is
// admitted as it is when written again (a reinvocation changes nothing).
func FuzzKeep(f *testing.F) {
	add := func(old, cur map[string]any, restartAt, envVars bool, kind uint8) {
		o, err := json.Marshal(old)
		if err != nil {
			f.Fatal(err)
		}
		c, err := json.Marshal(cur)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(o), string(c), restartAt, envVars, kind)
	}
	add(obj(state, sealed, trigger, "app:1"), obj(manifest, plain, nil, "app:1"), false, false, 0)
	add(obj(state, sealed, trigger, "app:1"), obj(manifest, plain, nil, "app:2"), false, false, 0)
	add(obj(state, sealed, nil, "app:1", env("A", "1"), env("STAKATER_APP_CONFIGMAP", "d")), obj(manifest, plain, nil, "app:1", env("A", "1")), false, true, 0)
	add(restarted(obj(state, sealed, nil, "app:1"), "2026-01-01T00:00:00Z"), obj(manifest, plain, nil, "app:1"), true, false, 2)
	cron := map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": obj(nil, nil, trigger, "app:1")["spec"].(map[string]any)["template"]}}}}
	add(cron, map[string]any{"spec": map[string]any{"jobTemplate": map[string]any{"spec": map[string]any{"template": map[string]any{}}}}}, false, false, 1)
	f.Fuzz(func(t *testing.T, oldJSON, newJSON string, restartAt, envVars bool, kind uint8) {
		var old, cur map[string]any
		if json.Unmarshal([]byte(oldJSON), &old) != nil || json.Unmarshal([]byte(newJSON), &cur) != nil {
			return
		}
		kinds := []workload.Kind{workload.Deployment, workload.CronJob, workload.Rollout}
		k := kinds[int(kind)%len(kinds)]
		in := Input{Old: old, New: cur, TemplatePath: k.TemplatePath(), TriggerPath: k.TriggerPath(),
			Trigger: []string{workload.RestartedAtAnnotation, workload.RestartedForAnnotation}, RestartAt: restartAt, EnvVars: envVars}
		oldCopy, curCopy := runtime.DeepCopyJSON(old), runtime.DeepCopyJSON(cur)

		out, why := Keep(in)
		if !reflect.DeepEqual(old, oldCopy) || !reflect.DeepEqual(cur, curCopy) {
			t.Fatalf("Keep changed its inputs: %s -> %s", oldJSON, newJSON)
		}
		if kept := why == Kept || why == KeptRestartAt; kept != (out != nil) {
			t.Fatalf("Keep returned %v with reason %q", out, why)
		}
		if out == nil {
			return
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("Keep's object does not encode: %v", err)
		}
		if why == Kept {
			stored, _ := mapAt(old, in.TemplatePath)
			kept, _ := mapAt(out, in.TemplatePath)
			if !reflect.DeepEqual(stored, kept) {
				t.Fatalf("Kept, but the template is %v, not the stored %v", kept, stored)
			}
		}
		in.New = out
		if again, why := Keep(in); again != nil {
			t.Fatalf("Keep's own object kept again (%s): %v", why, again)
		}
	})
}
