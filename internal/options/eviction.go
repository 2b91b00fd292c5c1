package options

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Eviction is what the flags say of restarts through the Eviction API
// (package eviction): the pods a pod-template change cannot reach, evicted
// one at a time after a rollout.
type Eviction struct {
	// EnableEviction lets a rollout evict pods: a workload opts in with
	// nudge.dev/rollout-strategy "evict", or by its kind (EvictPodsOf).
	// It needs the RBAC the chart grants with eviction.enabled (pods list,
	// pods/eviction create, get of StatefulSets and DaemonSets); without
	// it the annotation is refused with a Warning.
	EnableEviction bool
	// EvictPodsOf are the kinds whose workloads restart by eviction without
	// the annotation, each "Kind.group" (schema.ParseGroupKind's form:
	// "Cluster.postgresql.cnpg.io", "StatefulSet.apps"); it needs
	// EnableEviction.
	EvictPodsOf []string
}

// bindEvictionFlags registers the Eviction options on fs.
func (e *Eviction) bindEvictionFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&e.EnableEviction, "enable-eviction", e.EnableEviction, `Let a rollout restart, through the Eviction API and one pod at a time, the pods its template change cannot reach (annotation nudge.dev/rollout-strategy: "evict" on a workload); never around a PodDisruptionBudget.`)
	fs.StringSliceVar(&e.EvictPodsOf, "evict-pods-of", e.EvictPodsOf, `Comma-separated workload kinds, as "Kind.group" ("Cluster.postgresql.cnpg.io", "StatefulSet.apps"), whose pods are restarted by eviction without the annotation; needs --enable-eviction.`)
}

// EvictKinds returns EvictPodsOf parsed as group kinds; an error names each
// entry that is not "Kind.group" with a kind that starts with an upper-case
// letter and a group that is a DNS subdomain ("" for a core kind, which
// has no pods of its own to restart, is refused too).
func (e *Eviction) EvictKinds() ([]schema.GroupKind, error) {
	var errs []string
	gks := make([]schema.GroupKind, 0, len(e.EvictPodsOf))
	for _, t := range e.EvictPodsOf {
		gk := schema.ParseGroupKind(strings.TrimSpace(t))
		switch {
		case gk.Kind == "" || !kindName.MatchString(gk.Kind) || gk.Group == "":
			errs = append(errs, fmt.Sprintf(`%q is not "Kind.group"`, t))
		case len(validation.IsDNS1123Subdomain(gk.Group)) > 0:
			errs = append(errs, fmt.Sprintf("%q: the group is not a DNS subdomain", t))
		default:
			gks = append(gks, gk)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("--evict-pods-of: %s", strings.Join(errs, "; "))
	}
	return gks, nil
}

// validateEviction returns the problems with the Eviction options.
func (e *Eviction) validateEviction() []error {
	var errs []error
	if _, err := e.EvictKinds(); err != nil {
		errs = append(errs, err)
	}
	if len(e.EvictPodsOf) > 0 && !e.EnableEviction {
		errs = append(errs, fmt.Errorf("--evict-pods-of needs --enable-eviction (and its RBAC: the chart's eviction.enabled)"))
	}
	return errs
}
