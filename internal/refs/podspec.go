package refs

import (
	corev1 "k8s.io/api/core/v1"
)

// FromPodSpec returns every ConfigMap, Secret and SecretProviderClass the pod
// spec reads, one
// Reference per source, merged with Merge and sorted by Source. Every
// reference is in namespace, the namespace of the workload that owns spec.
//
// Uses counted, in containers, init containers and ephemeral containers:
//   - env[].valueFrom.configMapKeyRef and secretKeyRef: that key only;
//   - envFrom[].configMapRef and secretRef: the whole object.
//
// Uses counted in volumes (whichever container mounts them, or none, since the
// kubelet needs them to start the pod):
//   - configMap and secret (secretName) volumes: the whole object, or only the
//     keys of items when items is not empty;
//   - projected volumes: each sources[].configMap and sources[].secret alike;
//   - csi volumes of the Secrets Store CSI driver (driver CSIDriver): the
//     SecretProviderClass named by volumeAttributes.secretProviderClass, as
//     a whole object, required.
//
// A use is optional when its optional field is true; nil means required, as
// in the API. A source is optional only if every use of it is (see Merge).
//
// Not counted, because the containers do not read their content:
// imagePullSecrets, secrets of volume plugins (CSI nodePublishSecretRef,
// cephfs, rbd, iscsi, flexVolume, azureFile, scaleIO, storageOS), service
// account tokens, downwardAPI, clusterTrustBundle and podCertificate
// projections. Uses with an empty name are skipped. A nil spec has no
// references.
func FromPodSpec(namespace string, spec *corev1.PodSpec) []Reference {
	uses := Uses(namespace, spec)
	if len(uses) == 0 {
		return nil
	}
	all := make([]Reference, len(uses))
	for i, u := range uses {
		all[i] = u.Reference
	}
	return Merge(all)
}

// Via says how a pod spec reads a source.
type Via string

// The ways a pod spec reads a source.
const (
	// Env: env[].valueFrom.configMapKeyRef or secretKeyRef.
	Env Via = "env"
	// EnvFrom: envFrom[].configMapRef or secretRef.
	EnvFrom Via = "envFrom"
	// Volume: a configMap or secret volume.
	Volume Via = "volume"
	// Projected: a source of a projected volume.
	Projected Via = "projected"
	// CSI: a csi volume of the Secrets Store CSI driver.
	CSI Via = "csi"
)

// CSIDriver is the name of the Secrets Store CSI driver, and
// SecretProviderClassAttribute the volume attribute that names the
// SecretProviderClass a csi volume of it mounts
// (https://secrets-store-csi-driver.sigs.k8s.io/getting-started/usage).
const (
	CSIDriver                    = "secrets-store.csi.k8s.io"
	SecretProviderClassAttribute = "secretProviderClass"
)

// Use is one use of a source in a pod spec, before uses are merged.
type Use struct {
	Reference
	Via Via
	// SubPath is true for a volume or projected use whose volume some
	// container mounts with subPath or subPathExpr: the kubelet never
	// refreshes such a mount, as it refreshes a plain one.
	SubPath bool
}

// Frozen reports whether the containers keep the content they started with
// for their whole life: an env var, an envFrom entry, or a volume mounted with
// subPath (https://kubernetes.io/docs/concepts/configuration/configmap/#mounted-configmaps-are-updated-automatically).
// A plain configMap, secret or projected mount is refreshed by the kubelet,
// and a csi volume by its driver's rotation.
func (u Use) Frozen() bool {
	return u.Via == Env || u.Via == EnvFrom || u.SubPath
}

// Uses returns every use FromPodSpec counts, one per env var, envFrom entry,
// volume or projection, unmerged, in the order of the pod spec: init
// containers, containers, ephemeral containers, then volumes. A nil spec has
// none.
func Uses(namespace string, spec *corev1.PodSpec) []Use {
	if spec == nil {
		return nil
	}
	c := collector{namespace: namespace}
	for i := range spec.InitContainers {
		c.env(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		c.env(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		c.env(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
	subPath := subPathVolumes(spec)
	for i := range spec.Volumes {
		n := len(c.uses)
		c.volume(&spec.Volumes[i].VolumeSource)
		for j := n; j < len(c.uses); j++ {
			c.uses[j].SubPath = c.uses[j].Via != CSI && subPath[spec.Volumes[i].Name]
		}
	}
	return c.uses
}

// subPathVolumes returns the names of the volumes some container, init
// container or ephemeral container mounts with subPath or subPathExpr.
func subPathVolumes(spec *corev1.PodSpec) map[string]bool {
	out := map[string]bool{}
	mark := func(mounts []corev1.VolumeMount) {
		for _, m := range mounts {
			if m.SubPath != "" || m.SubPathExpr != "" {
				out[m.Name] = true
			}
		}
	}
	for i := range spec.InitContainers {
		mark(spec.InitContainers[i].VolumeMounts)
	}
	for i := range spec.Containers {
		mark(spec.Containers[i].VolumeMounts)
	}
	for i := range spec.EphemeralContainers {
		mark(spec.EphemeralContainers[i].VolumeMounts)
	}
	return out
}

// collector gathers the uses of one pod spec before they are merged.
type collector struct {
	namespace string
	uses      []Use
}

// add records one use; keys nil means the whole object.
func (c *collector) add(via Via, kind Kind, name string, keys []string, optional *bool) {
	if name == "" {
		return
	}
	c.uses = append(c.uses, Use{Via: via, Reference: Reference{
		Source:   Source{Kind: kind, Namespace: c.namespace, Name: name},
		Keys:     keys,
		Optional: optional != nil && *optional,
	}})
}

func (c *collector) env(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
	for _, e := range env {
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			c.add(Env, ConfigMap, r.Name, []string{r.Key}, r.Optional)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			c.add(Env, Secret, r.Name, []string{r.Key}, r.Optional)
		}
	}
	for _, e := range envFrom {
		if r := e.ConfigMapRef; r != nil {
			c.add(EnvFrom, ConfigMap, r.Name, nil, r.Optional)
		}
		if r := e.SecretRef; r != nil {
			c.add(EnvFrom, Secret, r.Name, nil, r.Optional)
		}
	}
}

func (c *collector) volume(v *corev1.VolumeSource) {
	if v.ConfigMap != nil {
		c.add(Volume, ConfigMap, v.ConfigMap.Name, itemKeys(v.ConfigMap.Items), v.ConfigMap.Optional)
	}
	if v.Secret != nil {
		c.add(Volume, Secret, v.Secret.SecretName, itemKeys(v.Secret.Items), v.Secret.Optional)
	}
	if v.CSI != nil && v.CSI.Driver == CSIDriver {
		c.add(CSI, SecretProviderClass, v.CSI.VolumeAttributes[SecretProviderClassAttribute], nil, nil)
	}
	if v.Projected == nil {
		return
	}
	for _, p := range v.Projected.Sources {
		if p.ConfigMap != nil {
			c.add(Projected, ConfigMap, p.ConfigMap.Name, itemKeys(p.ConfigMap.Items), p.ConfigMap.Optional)
		}
		if p.Secret != nil {
			c.add(Projected, Secret, p.Secret.Name, itemKeys(p.Secret.Items), p.Secret.Optional)
		}
	}
}

// itemKeys returns the keys a volume's items select, or nil (the whole
// object) when there are no items.
func itemKeys(items []corev1.KeyToPath) []string {
	if len(items) == 0 {
		return nil
	}
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.Key
	}
	return keys
}
