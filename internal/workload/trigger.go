package workload

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/refs"
)

// Trigger is what a rollout writes to make a workload's controller roll:
// Argo Rollouts' spec.restartAt, Reloader's env var, or the pod-template
// annotations.
type Trigger struct {
	// Changed are the sources the rollout is for, in order; Digest returns
	// the keyed digest of each.
	Changed []refs.Source
	Digest  func(refs.Source) string
	// Now is the rollout's time.
	Now time.Time
	// RestartAt writes an Argo Rollout's spec.restartAt: Reloader's
	// rollout-strategy "restart", or a spec.workloadRef (the referenced
	// Deployment is never written).
	RestartAt bool
	// EnvVars is Reloader's env-vars strategy: an env var per source,
	// written over the containers as the API server holds them (see Live).
	EnvVars bool
	// Stakater says Reloader's annotations select the workload: the
	// pod-template annotations also carry Reloader's last-reloaded-from
	// (LastReloadedFromAnnotation).
	Stakater bool
}

// Live reports whether Set, for a workload of kind k, needs the workload as
// the API server holds it: the cache trims containers, and the env vars are
// written over the whole list.
func (t Trigger) Live(k Kind) bool {
	return !t.RestartAt && t.EnvVars && len(k.TemplatePath()) > 0
}

// Set sets in c the trigger of obj, of kind k, as the cache holds it; live
// is obj as the API server holds it when Live says so, and is otherwise
// not read.
func (t Trigger) Set(c *Change, k Kind, obj, live client.Object) {
	stamp := t.Now.UTC().Format(time.RFC3339Nano)
	switch {
	case t.RestartAt:
		c.Spec = map[string]any{"restartAt": t.Now.UTC().Format(time.RFC3339)}
	case t.Live(k):
		spec := &k.Template(live).Spec
		containers := spec.Containers
		for _, src := range t.Changed {
			containers = SetEnv(containers, ContainerFor(spec, src), EnvVarName(src), t.Digest(src))
		}
		c.Containers = containers
	default:
		c.TemplateAnnotations = map[string]string{RestartedAtAnnotation: stamp, RestartedForAnnotation: refs.Names(t.Changed)}
		if a := k.TriggerAnnotation(); a != "" {
			c.TemplateAnnotations[a] = stamp
		}
		if t.Stakater && len(k.TemplatePath()) > 0 && len(t.Changed) > 0 {
			c.TemplateAnnotations[LastReloadedFromAnnotation] = t.lastReloadedFrom(k, obj)
		}
	}
}

// lastReloadedFrom returns Reloader's last-reloaded-from (see
// ReloadSource): of the sources changed, the last, as Reloader keeps only
// the last; its keyed digest, never an unkeyed one; the container that uses
// it, found in obj's pod template as the cache keeps it (see trim.Workload),
// so at no cost of a request.
func (t Trigger) lastReloadedFrom(k Kind, obj client.Object) string {
	src := t.Changed[len(t.Changed)-1]
	var container string
	if tmpl := k.Template(obj); tmpl != nil && len(tmpl.Spec.Containers) > 0 {
		container = tmpl.Spec.Containers[ContainerFor(&tmpl.Spec, src)].Name
	}
	return NewReloadSource(src, t.Digest(src), container, t.Now).String()
}
