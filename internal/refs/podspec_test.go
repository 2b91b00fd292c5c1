package refs

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
)

const ns = "shop"

func ptr[T any](v T) *T { return &v }

func cm(name string, keys ...string) Reference {
	return Reference{Source: Source{Kind: ConfigMap, Namespace: ns, Name: name}, Keys: keys}
}

func secret(name string, keys ...string) Reference {
	return Reference{Source: Source{Kind: Secret, Namespace: ns, Name: name}, Keys: keys}
}

func optional(r Reference) Reference {
	r.Optional = true
	return r
}

func cmKeyEnv(name, key string, opt *bool) corev1.EnvVar {
	return corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: opt,
	}}}
}

func secretKeyEnv(name, key string, opt *bool) corev1.EnvVar {
	return corev1.EnvVar{Name: "V", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key, Optional: opt,
	}}}
}

func cmEnvFrom(name string, opt *bool) corev1.EnvFromSource {
	return corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: opt,
	}}
}

func secretEnvFrom(name string, opt *bool) corev1.EnvFromSource {
	return corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Optional: opt,
	}}
}

func items(keys ...string) []corev1.KeyToPath {
	out := make([]corev1.KeyToPath, len(keys))
	for i, k := range keys {
		out[i] = corev1.KeyToPath{Key: k, Path: "p/" + k}
	}
	return out
}

func cmVolume(name string, opt *bool, keys ...string) corev1.Volume {
	return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items(keys...), Optional: opt,
	}}}
}

func secretVolume(name string, opt *bool, keys ...string) corev1.Volume {
	return corev1.Volume{Name: "v-" + name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName: name, Items: items(keys...), Optional: opt,
	}}}
}

func projectedVolume(sources ...corev1.VolumeProjection) corev1.Volume {
	return corev1.Volume{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: sources}}}
}

func cmProjection(name string, opt *bool, keys ...string) corev1.VolumeProjection {
	return corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items(keys...), Optional: opt,
	}}
}

func secretProjection(name string, opt *bool, keys ...string) corev1.VolumeProjection {
	return corev1.VolumeProjection{Secret: &corev1.SecretProjection{
		LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: items(keys...), Optional: opt,
	}}
}

func mount(volume string) []corev1.VolumeMount {
	return []corev1.VolumeMount{{Name: volume, MountPath: "/mnt/" + volume}}
}

func TestFromPodSpec(t *testing.T) {
	tests := map[string]struct {
		spec *corev1.PodSpec
		want []Reference
	}{
		"a nil pod spec has no references": {
			spec: nil,
			want: nil,
		},
		"a pod spec without sources has no references": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Env: []corev1.EnvVar{{Name: "A", Value: "1"}}}}},
			want: nil,
		},
		"configMapKeyRef references that key only": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{cmKeyEnv("settings", "level", nil)}}}},
			want: []Reference{cm("settings", "level")},
		},
		"secretKeyRef references that key only": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{secretKeyEnv("db", "password", nil)}}}},
			want: []Reference{secret("db", "password")},
		},
		"envFrom configMapRef references the whole ConfigMap": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{cmEnvFrom("settings", nil)}}}},
			want: []Reference{cm("settings")},
		},
		"envFrom secretRef references the whole Secret": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("db", nil)}}}},
			want: []Reference{secret("db")},
		},
		"configMap volume references the whole ConfigMap": {
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{cmVolume("settings", nil)}},
			want: []Reference{cm("settings")},
		},
		"configMap volume with items references those keys only": {
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{cmVolume("settings", nil, "b.yaml", "a.yaml")}},
			want: []Reference{cm("settings", "a.yaml", "b.yaml")},
		},
		"secret volume is named by secretName and references the whole Secret": {
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("tls", nil)}},
			want: []Reference{secret("tls")},
		},
		"secret volume with items references those keys only": {
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{secretVolume("tls", nil, "tls.key", "tls.crt")}},
			want: []Reference{secret("tls", "tls.crt", "tls.key")},
		},
		"projected configMap and secret sources are found": {
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{projectedVolume(
				cmProjection("settings", nil),
				secretProjection("tls", nil, "ca.crt"),
			)}},
			want: []Reference{cm("settings"), secret("tls", "ca.crt")},
		},
		"init container env is found": {
			spec: &corev1.PodSpec{InitContainers: []corev1.Container{{
				Env:     []corev1.EnvVar{secretKeyEnv("migrate", "dsn", nil)},
				EnvFrom: []corev1.EnvFromSource{cmEnvFrom("migrate-settings", nil)},
			}}},
			want: []Reference{cm("migrate-settings"), secret("migrate", "dsn")},
		},
		"projected secret in an init container is found": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", VolumeMounts: mount("projected")}},
				Containers:     []corev1.Container{{Name: "app"}},
				Volumes:        []corev1.Volume{projectedVolume(secretProjection("bootstrap", nil))},
			},
			want: []Reference{secret("bootstrap")},
		},
		"ephemeral container env is found": {
			spec: &corev1.PodSpec{EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Env:     []corev1.EnvVar{cmKeyEnv("debug", "level", nil)},
				EnvFrom: []corev1.EnvFromSource{secretEnvFrom("debug-token", nil)},
			}}}},
			want: []Reference{cm("debug", "level"), secret("debug-token")},
		},
		"a volume no container mounts still counts": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}, Volumes: []corev1.Volume{cmVolume("unmounted", nil)}},
			want: []Reference{cm("unmounted")},
		},
		"key uses of one source in several places are united": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{Env: []corev1.EnvVar{cmKeyEnv("settings", "b", nil)}}},
				Containers:     []corev1.Container{{Env: []corev1.EnvVar{cmKeyEnv("settings", "a", nil)}}},
				Volumes:        []corev1.Volume{cmVolume("settings", nil, "c")},
			},
			want: []Reference{cm("settings", "a", "b", "c")},
		},
		"a whole use absorbs key uses of the same source": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{
					Env:     []corev1.EnvVar{secretKeyEnv("db", "password", nil)},
					EnvFrom: []corev1.EnvFromSource{secretEnvFrom("db", nil)},
				}},
				Volumes: []corev1.Volume{secretVolume("db", nil, "ca.crt")},
			},
			want: []Reference{secret("db")},
		},
		"a whole volume absorbs an earlier key use": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{Env: []corev1.EnvVar{cmKeyEnv("settings", "a", nil)}}},
				Volumes:    []corev1.Volume{projectedVolume(cmProjection("settings", nil))},
			},
			want: []Reference{cm("settings")},
		},
		"duplicate keys are listed once": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{
					{Env: []corev1.EnvVar{secretKeyEnv("db", "password", nil), secretKeyEnv("db", "password", nil)}},
					{Env: []corev1.EnvVar{secretKeyEnv("db", "password", nil)}},
				},
				Volumes: []corev1.Volume{secretVolume("db", nil, "password", "password")},
			},
			want: []Reference{secret("db", "password")},
		},
		"a ConfigMap and a Secret of the same name are distinct sources": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{cmEnvFrom("app", nil), secretEnvFrom("app", nil)}}}},
			want: []Reference{cm("app"), secret("app")},
		},
		"optional true is honoured on every form": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{
					Env:     []corev1.EnvVar{cmKeyEnv("a", "k", ptr(true)), secretKeyEnv("b", "k", ptr(true))},
					EnvFrom: []corev1.EnvFromSource{cmEnvFrom("c", ptr(true)), secretEnvFrom("d", ptr(true))},
				}},
				Volumes: []corev1.Volume{
					cmVolume("e", ptr(true)),
					secretVolume("f", ptr(true)),
					projectedVolume(cmProjection("g", ptr(true)), secretProjection("h", ptr(true))),
				},
			},
			want: []Reference{
				optional(cm("a", "k")), optional(cm("c")), optional(cm("e")), optional(cm("g")),
				optional(secret("b", "k")), optional(secret("d")), optional(secret("f")), optional(secret("h")),
			},
		},
		"optional nil and false are required": {
			spec: &corev1.PodSpec{Containers: []corev1.Container{{
				EnvFrom: []corev1.EnvFromSource{cmEnvFrom("nil", nil), cmEnvFrom("false", ptr(false))},
			}}},
			want: []Reference{cm("false"), cm("nil")},
		},
		"a source is optional when every use is optional": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{Env: []corev1.EnvVar{cmKeyEnv("flags", "a", ptr(true))}}},
				Volumes:    []corev1.Volume{cmVolume("flags", ptr(true), "b")},
			},
			want: []Reference{optional(cm("flags", "a", "b"))},
		},
		"one required use makes the source required": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("db", ptr(true))}}},
				Volumes:    []corev1.Volume{secretVolume("db", nil, "ca.crt")},
			},
			want: []Reference{secret("db")},
		},
		"uses with an empty name are skipped": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{
					Env:     []corev1.EnvVar{cmKeyEnv("", "k", nil), secretKeyEnv("", "k", nil)},
					EnvFrom: []corev1.EnvFromSource{cmEnvFrom("", nil), secretEnvFrom("", nil)},
				}},
				Volumes: []corev1.Volume{
					cmVolume("", nil), secretVolume("", nil),
					projectedVolume(cmProjection("", nil), secretProjection("", nil)),
				},
			},
			want: nil,
		},
		"imagePullSecrets, CSI secrets, service account tokens and downwardAPI are not counted": {
			spec: &corev1.PodSpec{
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}},
				Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "POD", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"},
				}}}}},
				Volumes: []corev1.Volume{
					{Name: "csi", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
						Driver: "secrets-store.csi.k8s.io", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "csi-creds"},
					}}},
					{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
						{DownwardAPI: &corev1.DownwardAPIProjection{}},
					}}}},
					{Name: "downward", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}},
				},
			},
			want: nil,
		},
		"a Secrets Store CSI volume reads its SecretProviderClass, whole and required": {
			spec: &corev1.PodSpec{Volumes: []corev1.Volume{
				{Name: "vault", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
					Driver: CSIDriver, VolumeAttributes: map[string]string{SecretProviderClassAttribute: "vault-db"},
				}}},
				{Name: "other", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
					Driver: "other.csi.example.com", VolumeAttributes: map[string]string{SecretProviderClassAttribute: "not-read"},
				}}},
			}},
			want: []Reference{{Source: Source{Kind: SecretProviderClass, Namespace: ns, Name: "vault-db"}}},
		},
		"every reference is in the given namespace, sorted by kind then name": {
			spec: &corev1.PodSpec{
				Containers: []corev1.Container{{EnvFrom: []corev1.EnvFromSource{secretEnvFrom("z", nil), cmEnvFrom("y", nil), cmEnvFrom("b", nil)}}},
			},
			want: []Reference{cm("b"), cm("y"), secret("z")},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(FromPodSpec(ns, tc.spec)).To(Equal(tc.want))
		})
	}
}

func TestUses(t *testing.T) {
	tests := map[string]struct {
		spec *corev1.PodSpec
		want []Use
	}{
		"a nil spec has no uses": {spec: nil, want: nil},
		"each use keeps how it reads, unmerged, init containers first and volumes last": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{secretEnvFrom("db", nil)}}},
				Containers: []corev1.Container{{Name: "app",
					Env:     []corev1.EnvVar{cmKeyEnv("app", "mode", ptr(true))},
					EnvFrom: []corev1.EnvFromSource{cmEnvFrom("app", nil)}}},
				Volumes: []corev1.Volume{
					secretVolume("db", nil, "password"),
					projectedVolume(cmProjection("files", nil), secretProjection("tls", nil, "crt")),
				},
			},
			want: []Use{
				{Reference: secret("db"), Via: EnvFrom},
				{Reference: optional(cm("app", "mode")), Via: Env},
				{Reference: cm("app"), Via: EnvFrom},
				{Reference: secret("db", "password"), Via: Volume},
				{Reference: cm("files"), Via: Projected},
				{Reference: secret("tls", "crt"), Via: Projected},
			},
		},
		"a volume mounted with subPath or subPathExpr by any container is marked, a plain mount is not": {
			spec: &corev1.PodSpec{
				InitContainers: []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{{Name: "projected", SubPathExpr: "$(POD)"}}}},
				Containers: []corev1.Container{
					{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "v-app"}, {Name: "v-db", MountPath: "/db"}}},
					{Name: "side", VolumeMounts: []corev1.VolumeMount{{Name: "v-db", SubPath: "password", MountPath: "/pw"}}},
				},
				Volumes: []corev1.Volume{cmVolume("app", nil), secretVolume("db", nil), projectedVolume(cmProjection("files", nil))},
			},
			want: []Use{
				{Reference: cm("app"), Via: Volume},
				{Reference: secret("db"), Via: Volume, SubPath: true},
				{Reference: cm("files"), Via: Projected, SubPath: true},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Uses(ns, tc.spec)).To(Equal(tc.want))
		})
	}
}

func TestFrozen(t *testing.T) {
	tests := map[string]struct {
		use  Use
		want bool
	}{
		"an env var is frozen":                    {Use{Via: Env}, true},
		"an envFrom entry is frozen":              {Use{Via: EnvFrom}, true},
		"a plain volume is refreshed":             {Use{Via: Volume}, false},
		"a plain projection is refreshed":         {Use{Via: Projected}, false},
		"a volume mounted with subPath is frozen": {Use{Via: Volume, SubPath: true}, true},
		"a csi volume is refreshed by its driver": {Use{Via: CSI}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.use.Frozen()).To(Equal(tc.want))
		})
	}
}
