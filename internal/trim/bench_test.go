package trim

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"nudge.dev/nudge/internal/dialect"
	"nudge.dev/nudge/internal/workload"
)

// wire is an object as an informer decodes it from the API server's
// protobuf.
type wire interface {
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

// BenchmarkRetained reports the Go heap one object holds once nudge's cache
// transform has trimmed it (B/object, after a garbage collection): a
// ConfigMap and a Secret of 8 KiB in 4 keys, and a Deployment reading 2 of
// each, baselined, as `make bench` creates them, each decoded from protobuf
// as an informer decodes it. The informer's store and indexes are not
// counted. `go test -run - -bench Retained ./internal/trim`.
func BenchmarkRetained(b *testing.B) {
	value := strings.Repeat("v", 2048)
	meta := func(i int) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "bench-001", Name: fmt.Sprintf("s-%06d", i), UID: "6f1c2f0e-7a55-4a8e-9d0b-6f5a3c1d2e4f",
			ResourceVersion: fmt.Sprint(100000 + i), Labels: map[string]string{"app.kubernetes.io/part-of": "bench"}}
	}
	digest := Sources(false, dialect.Parser{}.SourceAnnotations(), nil)
	cases := map[string]struct {
		wire      func(i int) wire
		empty     func() wire
		transform func(any) (any, error)
	}{
		"ConfigMap": {
			wire: func(i int) wire {
				cm := &corev1.ConfigMap{ObjectMeta: meta(i), Data: map[string]string{}}
				for k := range 4 {
					cm.Data[fmt.Sprintf("key-%d", k)] = fmt.Sprint(i) + value
				}
				return cm
			},
			empty:     func() wire { return &corev1.ConfigMap{} },
			transform: digest,
		},
		"Secret": {
			wire: func(i int) wire {
				s := &corev1.Secret{ObjectMeta: meta(i), Data: map[string][]byte{}, Type: corev1.SecretTypeOpaque}
				for k := range 4 {
					s.Data[fmt.Sprintf("key-%d", k)] = []byte(fmt.Sprint(i) + value)
				}
				return s
			},
			empty:     func() wire { return &corev1.Secret{} },
			transform: digest,
		},
		"Deployment": {
			wire: func(i int) wire {
				d := &appsv1.Deployment{ObjectMeta: meta(i)}
				d.Annotations = map[string]string{"reloader.stakater.com/auto": "true",
					workload.AppliedAnnotation: "k1.cm=" + strings.Repeat("x", 43) + ",s=" + strings.Repeat("y", 43)}
				d.Labels[workload.SealLabel] = strings.Repeat("z", 43)
				d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": d.Name}}
				ref := func(n int) corev1.LocalObjectReference {
					return corev1.LocalObjectReference{Name: fmt.Sprintf("s-%06d", n)}
				}
				d.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": d.Name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1",
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref(1)}}},
						Env: []corev1.EnvVar{{Name: "V1", ValueFrom: &corev1.EnvVarSource{
							SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref(2), Key: "key-0"}}}},
						VolumeMounts: []corev1.VolumeMount{{Name: "v2", MountPath: "/etc/v2"}, {Name: "v3", MountPath: "/etc/v3"}},
					}}, Volumes: []corev1.Volume{
						{Name: "v2", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref(3)}}},
						{Name: "v3", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s-000004"}}},
					}}}
				return d
			},
			empty:     func() wire { return &appsv1.Deployment{} },
			transform: Workload,
		},
	}
	const n = 5000
	for name, c := range cases {
		b.Run(name, func(b *testing.B) {
			raw := make([][]byte, n)
			for i := range raw {
				var err error
				if raw[i], err = c.wire(i).Marshal(); err != nil {
					b.Fatal(err)
				}
			}
			kept := make([]any, n)
			for b.Loop() {
				clear(kept)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				for i := range kept {
					obj := c.empty()
					if err := obj.Unmarshal(raw[i]); err != nil {
						b.Fatal(err)
					}
					kept[i], _ = c.transform(obj)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/object")
			}
			runtime.KeepAlive(kept)
		})
	}
}

// BenchmarkTrimWideWorkload reports the CPU of trimming one workload that
// reads many sources: 40 ConfigMaps, each mounted as a volume by one of
// four containers and read by env by another (a sidecar-heavy pod, as a
// service mesh or a Vault agent makes them). Finding each source's
// container read the pod spec once per source until Containers.
// `go test -run - -bench TrimWide -benchmem ./internal/trim`.
func BenchmarkTrimWideWorkload(b *testing.B) {
	const sources, containers = 40, 4
	spec := corev1.PodSpec{}
	for c := range containers {
		spec.Containers = append(spec.Containers, corev1.Container{Name: fmt.Sprintf("c%d", c), Image: "registry.example/app:1"})
	}
	for i := range sources {
		name := fmt.Sprintf("cm-%02d", i)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}})
		mounter, reader := &spec.Containers[i%containers], &spec.Containers[(i+1)%containers]
		mounter.VolumeMounts = append(mounter.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: "/etc/" + name})
		reader.Env = append(reader.Env, corev1.EnvVar{Name: fmt.Sprintf("V%02d", i), ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}})
	}
	wire, err := (&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "wide"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}).Marshal()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		d := &appsv1.Deployment{}
		if err := d.Unmarshal(wire); err != nil {
			b.Fatal(err)
		}
		if _, err := Workload(d); err != nil {
			b.Fatal(err)
		}
	}
}
