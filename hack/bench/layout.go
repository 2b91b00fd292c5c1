package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// Namespaces of the run besides the population's.
const (
	fanoutNamespace = "bench-fanout" // the fan-out ConfigMap and its Deployments
	probeNamespace  = "bench-probe"  // the probe that tells when the controller is synced
	systemNamespace = "nudge-system" // nudge's own (its key Secret)
	fanoutSource    = "fan"
	probeName       = "probe"
)

// Kinds of source.
const (
	secretKind    = "Secret"
	configMapKind = "ConfigMap"
)

// Source names one ConfigMap or Secret.
type Source struct {
	Kind      string
	Namespace string
	Name      string
}

func (s Source) String() string { return s.Kind + " " + s.Namespace + "/" + s.Name }

// Way is how a pod template uses a source.
type Way int

// The four ways a pod template uses a source. Every Deployment of the
// population uses each way once, for a different source in turn.
const (
	EnvFrom   Way = iota // envFrom: every key
	Volume               // a volume of the whole source
	EnvKey               // env valueFrom of dataKey
	Projected            // a projected volume of the whole source
	ways
)

func (w Way) String() string {
	return [...]string{"envFrom", "volume", "env valueFrom", "projected"}[w]
}

// Use is one source a Deployment uses, and how.
type Use struct {
	Source Source
	Way    Way
}

// Layout names the objects of a run and says which Deployment uses which
// source. Deployment g (0 ≤ g < Deployments) lives in namespace g mod
// Namespaces, so that consecutive Deployments, and the scenarios that take
// consecutive ranges of them, spread over every namespace. Its local index
// l = g div Namespaces picks Secrets 2l and 2l+1 and ConfigMaps 2l and 2l+1
// of its namespace (modulo their counts): with the defaults every source is
// used by exactly one Deployment.
type Layout struct {
	cfg   Config
	users map[Source][]string // Deployments (namespace/name) using each source
}

func newLayout(cfg Config) Layout {
	l := Layout{cfg: cfg, users: map[Source][]string{}}
	for g := range cfg.Deployments {
		for _, u := range l.Uses(g) {
			l.users[u.Source] = append(l.users[u.Source], l.Deployment(g).String())
		}
	}
	return l
}

// Users returns the Deployments of the population that use s.
func (l Layout) Users(s Source) []string { return l.users[s] }

// Shared returns the largest number of Deployments that use one source: 1
// when the population has at least two Secrets and two ConfigMaps per
// Deployment in each namespace.
func (l Layout) Shared() int {
	n := 0
	for _, us := range l.users {
		n = max(n, len(us))
	}
	return n
}

// Namespace returns the name of population namespace i.
func (l Layout) Namespace(i int) string { return fmt.Sprintf("bench-%03d", i) }

// Deployment returns the namespace and name of Deployment g.
func (l Layout) Deployment(g int) types.NamespacedName {
	return types.NamespacedName{Namespace: l.Namespace(g % l.cfg.Namespaces), Name: fmt.Sprintf("d-%05d", g)}
}

// SecretName and ConfigMapName return the name of source i of a namespace.
func (l Layout) SecretName(i int) string    { return fmt.Sprintf("s-%05d", i) }
func (l Layout) ConfigMapName(i int) string { return fmt.Sprintf("c-%05d", i) }

// Uses returns the four sources of Deployment g, Secret, ConfigMap, Secret,
// ConfigMap, and the way each is used: rotated with g, so that each kind is
// used every way across the population.
func (l Layout) Uses(g int) [4]Use {
	ns := l.Namespace(g % l.cfg.Namespaces)
	local := g / l.cfg.Namespaces
	srcs := [4]Source{
		{secretKind, ns, l.SecretName((2 * local) % l.cfg.Secrets)},
		{configMapKind, ns, l.ConfigMapName((2 * local) % l.cfg.ConfigMaps)},
		{secretKind, ns, l.SecretName((2*local + 1) % l.cfg.Secrets)},
		{configMapKind, ns, l.ConfigMapName((2*local + 1) % l.cfg.ConfigMaps)},
	}
	var uses [4]Use
	for j, s := range srcs {
		uses[j] = Use{Source: s, Way: Way((g + j) % int(ways))}
	}
	return uses
}

// FanOutDeployment returns the namespace and name of fan-out Deployment i.
func (l Layout) FanOutDeployment(i int) types.NamespacedName {
	return types.NamespacedName{Namespace: fanoutNamespace, Name: fmt.Sprintf("f-%04d", i)}
}

// FanOutUse returns how fan-out Deployment i uses the fan-out ConfigMap.
func (l Layout) FanOutUse(i int) Use {
	return Use{Source: Source{configMapKind, fanoutNamespace, fanoutSource}, Way: Way(i % int(ways))}
}

// ProbeUse is how the probe Deployment uses the probe ConfigMap.
func (l Layout) ProbeUse() Use {
	return Use{Source: Source{configMapKind, probeNamespace, probeName}, Way: EnvFrom}
}

// allocator hands out ranges of Deployments to the scenarios, so that no
// Deployment changes in two scenarios (a second change within the
// controller's rollout window would be folded into a trailing rollout, which
// is what the coalescing scenario measures, not the others).
type allocator struct {
	total, next int
	wrapped     bool
}

// take returns the next n Deployment indices; when the population is too
// small it wraps around and notes it.
func (a *allocator) take(n int) []int {
	out := make([]int, n)
	for i := range out {
		if a.next == a.total {
			a.next, a.wrapped = 0, true
		}
		out[i] = a.next
		a.next++
	}
	return out
}
