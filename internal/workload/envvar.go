package workload

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"nudge.dev/nudge/internal/refs"
)

// EnvVarName returns the env var Reloader's env-vars strategy writes for a
// source: "STAKATER_", the source's name upper-cased with every run of
// characters other than A-Z and 0-9 turned into one "_" (a leading run
// dropped), then "_CONFIGMAP", "_SECRET" or "_SECRETPROVIDERCLASS". See
// https://github.com/stakater/Reloader#reload-strategies. A label
// selector's set (a name such as "app=dash", which Reloader has not) ends
// in "_CONFIGMAP_SELECTOR" or "_SECRET_SELECTOR", so that it never takes
// the variable of a source named like it ("app-dash").
func EnvVarName(src refs.Source) string {
	var b strings.Builder
	b.WriteString("STAKATER_")
	valid := false
	for _, c := range strings.ToUpper(src.Name) {
		if (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
			valid = true
			continue
		}
		if valid {
			b.WriteByte('_')
		}
		valid = false
	}
	switch src.Kind {
	case refs.Secret:
		b.WriteString("_SECRET")
	case refs.ConfigMapSelector:
		b.WriteString("_CONFIGMAP_SELECTOR")
	case refs.SecretSelector:
		b.WriteString("_SECRET_SELECTOR")
	case refs.SecretProviderClass:
		b.WriteString("_SECRETPROVIDERCLASS")
	default:
		b.WriteString("_CONFIGMAP")
	}
	return b.String()
}

// ContainerFor returns the index of the first container of pod that uses
// src, through env, envFrom or a volume it mounts; 0 when none does (a source
// named only by an annotation). For more than one source, Containers reads
// the pod spec once.
func ContainerFor(pod *corev1.PodSpec, src refs.Source) int {
	return Containers(src.Namespace, pod)[src]
}

// Containers returns, for each source pod reads in namespace, the index of
// the first container that uses it, through env, envFrom or a volume it
// mounts, as ContainerFor does for one; a source no container uses (read
// only by an init container, or by a volume none mounts) is absent, and
// ContainerFor's 0 stands for it. It reads the pod spec once, whatever the
// number of sources and volumes.
func Containers(namespace string, pod *corev1.PodSpec) map[refs.Source]int {
	byVolume := map[string][]refs.Source{}
	for _, v := range pod.Volumes {
		for _, r := range refs.FromPodSpec(namespace, &corev1.PodSpec{Volumes: []corev1.Volume{v}}) {
			byVolume[v.Name] = append(byVolume[v.Name], r.Source)
		}
	}
	first := map[refs.Source]int{}
	see := func(src refs.Source, i int) {
		if _, ok := first[src]; !ok {
			first[src] = i
		}
	}
	for i, c := range pod.Containers {
		for _, r := range refs.FromPodSpec(namespace, &corev1.PodSpec{Containers: []corev1.Container{{Env: c.Env, EnvFrom: c.EnvFrom}}}) {
			see(r.Source, i)
		}
		for _, m := range c.VolumeMounts {
			for _, src := range byVolume[m.Name] {
				see(src, i)
			}
		}
	}
	return first
}

// SetEnv returns a copy of containers with env var name set to value on
// container i, replacing an existing value.
func SetEnv(containers []corev1.Container, i int, name, value string) []corev1.Container {
	out := make([]corev1.Container, len(containers))
	for j := range containers {
		out[j] = *containers[j].DeepCopy()
	}
	if i < 0 || i >= len(out) {
		return out
	}
	for j := range out[i].Env {
		if out[i].Env[j].Name == name {
			out[i].Env[j] = corev1.EnvVar{Name: name, Value: value}
			return out
		}
	}
	out[i].Env = append(out[i].Env, corev1.EnvVar{Name: name, Value: value})
	return out
}
