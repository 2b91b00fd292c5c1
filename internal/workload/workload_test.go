package workload_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"nudge.dev/nudge/internal/refs"
	"nudge.dev/nudge/internal/workload"
)

func TestEnvVarName(t *testing.T) {
	for name, tc := range map[string]struct {
		src  refs.Source
		want string
	}{
		"a ConfigMap with dashes": {refs.Source{Kind: refs.ConfigMap, Name: "app-config"}, "STAKATER_APP_CONFIG_CONFIGMAP"},
		"a Secret with dots":      {refs.Source{Kind: refs.Secret, Name: "db.creds"}, "STAKATER_DB_CREDS_SECRET"},
		"a run of other characters becomes one underscore": {
			refs.Source{Kind: refs.ConfigMap, Name: "a.-.b"}, "STAKATER_A_B_CONFIGMAP"},
		"a leading run is dropped, a trailing one kept": {
			refs.Source{Kind: refs.Secret, Name: "-x-"}, "STAKATER_X__SECRET"},
		"digits are kept": {refs.Source{Kind: refs.ConfigMap, Name: "v2"}, "STAKATER_V2_CONFIGMAP"},
		"a SecretProviderClass as Reloader names it": {
			refs.Source{Kind: refs.SecretProviderClass, Name: "vault-db"}, "STAKATER_VAULT_DB_SECRETPROVIDERCLASS"},
		"a label selector's set of ConfigMaps, apart from a ConfigMap named like it": {
			refs.Source{Kind: refs.ConfigMapSelector, Name: "app=dash"}, "STAKATER_APP_DASH_CONFIGMAP_SELECTOR"},
		"a label selector's set of Secrets": {
			refs.Source{Kind: refs.SecretSelector, Name: "tier in (a,b)"}, "STAKATER_TIER_IN_A_B__SECRET_SELECTOR"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(workload.EnvVarName(tc.src)).To(Equal(tc.want))
		})
	}
}

func TestContainerFor(t *testing.T) {
	pod := &corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "a"},
			{Name: "b", VolumeMounts: []corev1.VolumeMount{{Name: "certs"}}},
			{Name: "c", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}}}},
			{Name: "d", VolumeMounts: []corev1.VolumeMount{{Name: "unread"}, {Name: "app"}}},
		},
		Volumes: []corev1.Volume{{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls", Optional: ptr.To(true)}}},
			{Name: "app", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app"}}}},
			{Name: "init-only", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "boot"}}}}},
	}
	for name, tc := range map[string]struct {
		src  refs.Source
		want int
	}{
		"a Secret mounted by the second container, and read by the third's envFrom": {refs.Source{Kind: refs.Secret, Namespace: "ns", Name: "tls"}, 1},
		"a ConfigMap read by envFrom of the third, and mounted by the fourth":       {refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "app"}, 2},
		"a source no container uses goes first":                                     {refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "named"}, 0},
		"a volume's source no container mounts goes first":                          {refs.Source{Kind: refs.ConfigMap, Namespace: "ns", Name: "boot"}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(workload.ContainerFor(pod, tc.src)).To(Equal(tc.want))
			i, ok := workload.Containers("ns", pod)[tc.src]
			g.Expect(i).To(Equal(tc.want), "Containers agrees with ContainerFor")
			g.Expect(ok).To(Equal(tc.want != 0), "Containers holds only the sources a container uses")
		})
	}
}

func TestSetEnvReplacesAndAppends(t *testing.T) {
	g := NewWithT(t)
	in := []corev1.Container{{Name: "a", Env: []corev1.EnvVar{{Name: "X", Value: "1"}}}}
	out := workload.SetEnv(in, 0, "X", "2")
	g.Expect(out[0].Env).To(Equal([]corev1.EnvVar{{Name: "X", Value: "2"}}))
	g.Expect(in[0].Env[0].Value).To(Equal("1"), "the input is not changed")
	out = workload.SetEnv(out, 0, "Y", "3")
	g.Expect(out[0].Env).To(HaveLen(2))
}

func TestChangePatch(t *testing.T) {
	v := "v1.k"
	keda := workload.CustomKind{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledJob", TemplatePath: "spec.jobTargetRef.template"}.Adapter("")
	prometheus := workload.CustomKind{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", TriggerPath: "spec.podMetadata.annotations"}.Adapter("")
	flux := workload.CustomKind{APIVersion: "helm.toolkit.fluxcd.io/v2", Kind: "HelmRelease", TriggerPath: "metadata.annotations"}.Adapter("")
	for name, tc := range map[string]struct {
		kind   workload.Kind
		change workload.Change
		want   string
	}{
		"metadata only writes no spec": {
			kind:   workload.Deployment,
			change: workload.Change{ResourceVersion: "7", Annotations: map[string]*string{"a": &v}},
			want:   `{"metadata":{"annotations":{"a":"v1.k"},"resourceVersion":"7"}}`,
		},
		"a CronJob's trigger goes into its job template": {
			kind:   workload.CronJob,
			change: workload.Change{ResourceVersion: "7", TemplateAnnotations: map[string]string{"t": "1"}},
			want:   `{"metadata":{"resourceVersion":"7"},"spec":{"jobTemplate":{"spec":{"template":{"metadata":{"annotations":{"t":"1"}}}}}}}`,
		},
		"spec fields and a removed annotation": {
			kind:   workload.Deployment,
			change: workload.Change{ResourceVersion: "7", Annotations: map[string]*string{"p": nil}, Spec: map[string]any{"paused": false}},
			want:   `{"metadata":{"annotations":{"p":null},"resourceVersion":"7"},"spec":{"paused":false}}`,
		},
		"containers replace the template's": {
			kind:   workload.Rollout,
			change: workload.Change{ResourceVersion: "7", Containers: []corev1.Container{{Name: "a"}}, Spec: map[string]any{"restartAt": "now"}},
			want:   `{"metadata":{"resourceVersion":"7"},"spec":{"restartAt":"now","template":{"spec":{"containers":[{"name":"a","resources":{}}]}}}}`,
		},
		"a KEDA ScaledJob's trigger goes to its job target's template": {
			kind:   keda,
			change: workload.Change{ResourceVersion: "7", TemplateAnnotations: map[string]string{"t": "1"}},
			want:   `{"metadata":{"resourceVersion":"7"},"spec":{"jobTargetRef":{"template":{"metadata":{"annotations":{"t":"1"}}}}}}`,
		},
		"a Prometheus's trigger goes to its pod metadata": {
			kind:   prometheus,
			change: workload.Change{ResourceVersion: "7", Annotations: map[string]*string{"a": &v}, TemplateAnnotations: map[string]string{"t": "1"}},
			want:   `{"metadata":{"annotations":{"a":"v1.k"},"resourceVersion":"7"},"spec":{"podMetadata":{"annotations":{"t":"1"}}}}`,
		},
		"a trigger in the object's own annotations joins nudge's state": {
			kind:   flux,
			change: workload.Change{ResourceVersion: "7", Annotations: map[string]*string{"a": &v, "gone": nil}, TemplateAnnotations: map[string]string{"t": "1"}},
			want:   `{"metadata":{"annotations":{"a":"v1.k","gone":null,"t":"1"},"resourceVersion":"7"}}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			b, err := tc.change.Patch(tc.kind)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(json.Valid(b)).To(BeTrue())
			g.Expect(string(b)).To(MatchJSON(tc.want))
		})
	}
}

func TestChangePatchRefusesContainersWithoutTemplate(t *testing.T) {
	g := NewWithT(t)
	prometheus := workload.CustomKind{APIVersion: "monitoring.coreos.com/v1", Kind: "Prometheus", TriggerPath: "spec.podMetadata.annotations"}.Adapter("")
	_, err := workload.Change{Containers: []corev1.Container{{Name: "a"}}}.Patch(prometheus)
	g.Expect(err).To(MatchError(workload.ErrNoTemplate))
}

func metaWithAnnotations(a map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Annotations: a}
}

// TestReloadSource: Reloader's last-reloaded-from in its JSON shape, keys in
// Reloader's order, the type in Reloader's upper case.
func TestReloadSource(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		src  refs.Source
		want string
	}{
		"a ConfigMap": {
			src:  refs.Source{Kind: refs.ConfigMap, Namespace: "shop", Name: "app"},
			want: `{"type":"CONFIGMAP","name":"app","namespace":"shop","hash":"d1","containerRefs":["web"],"observedAt":1795608000}`,
		},
		"a Secret": {
			src:  refs.Source{Kind: refs.Secret, Namespace: "shop", Name: "db"},
			want: `{"type":"SECRET","name":"db","namespace":"shop","hash":"d1","containerRefs":["web"],"observedAt":1795608000}`,
		},
		"a SecretProviderClass": {
			src:  refs.Source{Kind: refs.SecretProviderClass, Namespace: "shop", Name: "vault"},
			want: `{"type":"SECRETPROVIDERCLASS","name":"vault","namespace":"shop","hash":"d1","containerRefs":["web"],"observedAt":1795608000}`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(workload.NewReloadSource(tc.src, "d1", "web", at).String()).To(Equal(tc.want))
		})
	}
}
