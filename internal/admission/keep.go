package admission

import (
	"reflect"
	"regexp"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"nudge.dev/nudge/internal/fleet"
	"nudge.dev/nudge/internal/workload"
)

// Input is one UPDATE of a workload, as Keep reads it.
type Input struct {
	// Old is the object as stored, New as the write would store it, both
	// decoded from JSON (defaulted by the API server alike).
	Old, New map[string]any
	// TemplatePath is the path of the kind's pod template, e.g. ["spec",
	// "template"] (workload.Kind.TemplatePath).
	TemplatePath []string
	// TriggerPath is the path of the annotations map nudge writes its
	// trigger into (workload.Kind.TriggerPath); it must lie in the template.
	TriggerPath []string
	// Trigger are the annotations of the trigger: nudge's
	// workload.RestartedAtAnnotation and RestartedForAnnotation, and the
	// kind's TriggerAnnotation when it has one.
	Trigger []string
	// RestartAt is true for an Argo Rollout: with Reloader's annotation
	// reloader.stakater.com/rollout-strategy "restart", nudge's trigger is
	// spec.restartAt, the time of the rollout in RFC 3339 (seconds), which
	// nudge writes with its nudge.dev/last-rollout
	// (https://argo-rollouts.readthedocs.io/en/stable/features/restart/).
	RestartAt bool
	// EnvVars is Reloader's env-vars strategy (--reload-strategy=env-vars):
	// the trigger is also any STAKATER_*_CONFIGMAP, _SECRET or
	// _SECRETPROVIDERCLASS env var of the template's containers
	// (workload.EnvVarName).
	EnvVars bool
}

// Reason says why Keep decided as it did, for the log.
type Reason string

// Keep's reasons.
const (
	// Kept: the write dropped the trigger and changed nothing else of the
	// template; the old template and nudge's state are put back.
	Kept Reason = "the write only dropped nudge's trigger"
	// KeptRestartAt: the write dropped nudge's spec.restartAt of an Argo
	// Rollout (Input.RestartAt) and left the template as it was; it and
	// nudge's state are put back.
	KeptRestartAt Reason = "the write only dropped nudge's spec.restartAt"
	// NoTemplate: the kind has no pod template here (a Rollout with a
	// workloadRef, a custom kind whose trigger is outside its template).
	NoTemplate Reason = "no pod template"
	// NoTrigger: the stored template carries no trigger of nudge's: it was
	// never rolled, or its trigger is gone already.
	NoTrigger Reason = "the stored template carries no trigger"
	// TriggerWritten: the write sets a trigger itself (an exported manifest
	// with an older one): its own business.
	TriggerWritten Reason = "the write sets a trigger"
	// TemplateChanged: the write changes the template beyond the trigger;
	// its rollout is the owner's.
	TemplateChanged Reason = "the write changes the pod template"
	// StateWritten: the write sets another applied state (a write-back of
	// an exported one, rule 6's StateRestored): left to the reconciler.
	StateWritten Reason = "the write sets another state of nudge's"
)

// stateAnnotations and stateLabels are what nudge keeps of a rollout on the
// workload's metadata; Keep puts back those the write drops. Not
// fleet.HaltedAnnotation: removing it is how a user lifts a hold.
var (
	stateAnnotations = []string{workload.AppliedAnnotation, workload.LastRolloutAnnotation, fleet.RolledForAnnotation}
	stateLabels      = []string{workload.SealLabel}
)

// envVar is the name Reloader's env-vars strategy gives its trigger
// (workload.EnvVarName).
var envVar = regexp.MustCompile(`^STAKATER_[A-Z0-9_]*_(CONFIGMAP|SECRET|SECRETPROVIDERCLASS)$`)

// Keep decides one UPDATE of a workload. It returns the object to admit in
// place of in.New and Kept when the write changes the pod template only by
// dropping nudge's whole trigger and sets no other value of nudge's state:
// in.New with the old template and, where the write dropped them, the old
// state keys (a replace from a manifest strips the metadata too; the state
// kept describes what the pods run, so a change nudge has not rolled yet is
// still rolled). Likewise, with in.RestartAt, for a write that drops
// nudge's spec.restartAt (the value of its last rollout) and leaves the
// template as it was: in.New with the old spec.restartAt and state keys,
// and KeptRestartAt. Otherwise it returns nil and why. Its inputs are not
// modified.
func Keep(in Input) (map[string]any, Reason) {
	if in.RestartAt {
		if out, why, ok := in.keepRestartAt(); ok {
			return out, why
		}
	}
	if len(in.TemplatePath) == 0 || !hasPrefix(in.TriggerPath, in.TemplatePath) {
		return nil, NoTemplate
	}
	oldT, ok := mapAt(in.Old, in.TemplatePath)
	if !ok {
		return nil, NoTemplate
	}
	newT, ok := mapAt(in.New, in.TemplatePath)
	if !ok {
		return nil, NoTemplate
	}
	rel := in.TriggerPath[len(in.TemplatePath):]
	bareOld, oldHas := in.strip(oldT, rel)
	bareNew, newHas := in.strip(newT, rel)
	switch {
	case !oldHas:
		return nil, NoTrigger
	case newHas:
		return nil, TriggerWritten
	case !reflect.DeepEqual(bareOld, bareNew):
		return nil, TemplateChanged
	}
	out, ok := in.keepState()
	if !ok {
		return nil, StateWritten
	}
	setAt(out, in.TemplatePath, runtime.DeepCopyJSONValue(oldT))
	return out, Kept
}

// restartAtPath is where an Argo Rollout's restart time is.
var restartAtPath = []string{"spec", "restartAt"}

// keepRestartAt is Keep for nudge's spec.restartAt: ok is false when the
// write does not drop it (or it is not nudge's), and Keep goes on with the
// template.
func (in Input) keepRestartAt() (map[string]any, Reason, bool) {
	at, isString := valueAt(in.Old, restartAtPath).(string)
	if !isString || valueAt(in.New, restartAtPath) != nil {
		return nil, "", false
	}
	last, _ := valueAt(in.Old, []string{"metadata", "annotations", workload.LastRolloutAnnotation}).(string)
	t, err := time.Parse(time.RFC3339Nano, last)
	if err != nil || t.UTC().Format(time.RFC3339) != at {
		return nil, "", false // a restart of someone else's
	}
	if !reflect.DeepEqual(valueAt(in.Old, in.TemplatePath), valueAt(in.New, in.TemplatePath)) {
		return nil, "", false // the template's rollout restarts every pod
	}
	out, ok := in.keepState()
	if !ok {
		return nil, StateWritten, true
	}
	setAt(out, restartAtPath, at)
	return out, KeptRestartAt, true
}

// keepState returns a copy of in.New with the state keys of in.Old the
// write dropped put back; ok is false when the write sets a value of its
// own for one of them.
func (in Input) keepState() (out map[string]any, ok bool) {
	out = runtime.DeepCopyJSON(in.New)
	for _, f := range []struct {
		field string
		keys  []string
	}{{"annotations", stateAnnotations}, {"labels", stateLabels}} {
		oldM, _ := mapAt(in.Old, []string{"metadata", f.field})
		newM, _ := mapAt(in.New, []string{"metadata", f.field})
		for _, k := range f.keys {
			nv, inNew := newM[k]
			ov, inOld := oldM[k]
			switch {
			case inNew && (!inOld || !reflect.DeepEqual(nv, ov)):
				return nil, false
			case inOld && !inNew:
				setAt(out, []string{"metadata", f.field, k}, ov)
			}
		}
	}
	return out, true
}

// strip returns a copy of template without the trigger (the annotations of
// in.Trigger at rel, an annotations map left empty, and under EnvVars the
// STAKATER_ env vars of its containers), and whether it had any.
func (in Input) strip(template map[string]any, rel []string) (map[string]any, bool) {
	t := runtime.DeepCopyJSON(template)
	had := false
	if ann, ok := mapAt(t, rel); ok {
		for _, k := range in.Trigger {
			if _, ok := ann[k]; ok {
				delete(ann, k)
				had = true
			}
		}
		if len(ann) == 0 {
			parent, _ := mapAt(t, rel[:len(rel)-1])
			delete(parent, rel[len(rel)-1])
		}
	}
	if in.EnvVars {
		containers, _ := valueAt(t, []string{"spec", "containers"}).([]any)
		for _, c := range containers {
			c, ok := c.(map[string]any)
			if !ok {
				continue
			}
			env, _ := c["env"].([]any)
			kept := slices.DeleteFunc(slices.Clone(env), func(e any) bool {
				m, _ := e.(map[string]any)
				name, _ := m["name"].(string)
				return envVar.MatchString(name)
			})
			if len(kept) == len(env) {
				continue
			}
			had = true
			if len(kept) == 0 {
				delete(c, "env")
			} else {
				c["env"] = kept
			}
		}
	}
	return t, had
}

// hasPrefix reports whether path starts with prefix and is longer.
func hasPrefix(path, prefix []string) bool {
	return len(path) > len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// valueAt returns the value at path in obj, nil when absent.
func valueAt(obj map[string]any, path []string) any {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// mapAt returns the map at path in obj, and whether there is one.
func mapAt(obj map[string]any, path []string) (map[string]any, bool) {
	m, ok := valueAt(obj, path).(map[string]any)
	return m, ok
}

// setAt sets the value at path in obj, creating the maps on the way.
func setAt(obj map[string]any, path []string, v any) {
	m := obj
	for _, p := range path[:len(path)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}
