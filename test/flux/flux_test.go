package flux

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
	"nudge.dev/nudge/internal/workload"
)

// manifests is the Git content of one Kustomization, as `kustomize build`
// prints it: a ConfigMap with a=data, and a Deployment of image that opts
// in with nudge.dev/auto and reads the ConfigMap.
func manifests(namespace, data, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app
  namespace: %[1]s
data:
  a: %[2]q
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: %[1]s
  annotations:
    nudge.dev/auto: "true"
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: %[3]s
        envFrom:
        - configMapRef: {name: app}
`, namespace, data, image)
}

// nudgeKeys returns the keys nudge writes on a Deployment, as they are on
// d: the metadata's applied state, last rollout and seal, and the pod
// template's trigger.
func nudgeKeys(d *appsv1.Deployment) map[string]string {
	return map[string]string{
		workload.AppliedAnnotation:      d.Annotations[workload.AppliedAnnotation],
		workload.LastRolloutAnnotation:  d.Annotations[workload.LastRolloutAnnotation],
		workload.SealLabel:              d.Labels[workload.SealLabel],
		workload.RestartedAtAnnotation:  d.Spec.Template.Annotations[workload.RestartedAtAnnotation],
		workload.RestartedForAnnotation: d.Spec.Template.Annotations[workload.RestartedForAnnotation],
	}
}

// owners returns the field managers of d's managedFields that own the
// field at path, a FieldsV1 path such as
// `"f:metadata","f:annotations","f:nudge.dev/seal"`, each with its operation.
func owners(d *appsv1.Deployment, path ...string) []string {
	var out []string
	for _, e := range d.ManagedFields {
		if e.FieldsV1 == nil || e.Subresource != "" {
			continue
		}
		set := map[string]any{}
		if err := json.Unmarshal(e.FieldsV1.GetRawBytes(), &set); err != nil {
			continue
		}
		node, ok := any(set), true
		for _, p := range path {
			m, isMap := node.(map[string]any)
			if !isMap {
				ok = false
				break
			}
			if node, ok = m[p]; !ok {
				break
			}
		}
		if ok {
			out = append(out, e.Manager+"/"+string(e.Operation))
		}
	}
	return out
}

// TestFluxApplyLeavesNudgesState: a Deployment and its ConfigMap applied
// the way Flux's kustomize-controller applies them (ssa, its field
// manager, force, ApplyAllStaged). A change of the ConfigMap in Git is
// rolled by nudge; applying the same Git content again writes nothing,
// rolls nothing, leaves nudge's keys as they are and ssa's drift check
// finds no drift, nudge's keys and trigger staying nudge's. A change of
// the image in Git is one rollout, Flux's; nudge's state stays valid (it
// parses, its seal holds, no Warning) and nudge rolls the next change of
// the ConfigMap once.
func TestFluxApplyLeavesNudgesState(t *testing.T) {
	e := suite.Setup(t, true, func(o *options.Options) { o.RolloutWindow = options.Default().RolloutWindow })
	g, ctx := e.G, e.Ctx
	flux := newKustomization(suite.K8s, e.NS, "apps", true)
	rolled := func() int { return len(e.Events("web", record.ReasonRolled)()) }
	deployment := func() *appsv1.Deployment { return e.Deployment("web") }
	const image1, image2 = "registry.example/app:1", "registry.example/app:2"

	g.Expect(flux.apply(ctx, t, manifests(e.NS, "1", image1))).To(Equal(map[string]string{
		"ConfigMap/app": "created", "Deployment/web": "created"}), "Flux's first apply creates both")
	e.Baselined("web")
	g.Expect(e.Rollouts("web")()).To(BeZero(), "no rollout at first sight")

	// Git changes the ConfigMap: Flux configures it, nudge rolls.
	baseline := nudgeKeys(deployment())
	g.Expect(flux.apply(ctx, t, manifests(e.NS, "2", image1))).To(Equal(map[string]string{
		"ConfigMap/app": "configured", "Deployment/web": "unchanged"}))
	e.RolledTo("web", 1)
	g.Eventually(rolled).WithTimeout(20*time.Second).Should(Equal(1), "nudge's Rolled Event")
	after := nudgeKeys(deployment())
	g.Expect(after[workload.AppliedAnnotation]).NotTo(Equal(baseline[workload.AppliedAnnotation]), "the applied state is the new one")
	g.Expect(after[workload.RestartedAtAnnotation]).NotTo(BeEmpty(), "nudge's trigger")

	// The same Git content again, as each interval's reconcile applies it.
	for i := range 2 {
		g.Expect(flux.apply(ctx, t, manifests(e.NS, "2", image1))).To(Equal(map[string]string{
			"ConfigMap/app": "unchanged", "Deployment/web": "unchanged"}), "Flux's apply %d of the same content writes nothing", i+1)
		g.Expect(flux.drift(ctx, t, manifests(e.NS, "2", image1))).To(BeEmpty(), "ssa's drift check finds no drift")
	}
	e.RolledTo("web", 1)
	d := deployment()
	g.Expect(nudgeKeys(d)).To(Equal(after), "nudge's keys as nudge wrote them")
	for _, path := range [][]string{
		{"f:metadata", "f:annotations", "f:" + workload.AppliedAnnotation},
		{"f:metadata", "f:annotations", "f:" + workload.LastRolloutAnnotation},
		{"f:metadata", "f:labels", "f:" + workload.SealLabel},
		{"f:spec", "f:template", "f:metadata", "f:annotations", "f:" + workload.RestartedAtAnnotation},
	} {
		g.Expect(owners(d, path...)).To(Equal([]string{workload.FieldManager + "/Update"}), "%v owned by nudge alone", path)
	}
	g.Expect(owners(d, "f:spec", "f:template", "f:spec", "f:containers")).To(ContainElement(fieldManager+"/Apply"), "the containers owned by Flux's apply")

	// Git changes the image: one rollout, Flux's.
	g.Expect(flux.apply(ctx, t, manifests(e.NS, "2", image2))).To(Equal(map[string]string{
		"ConfigMap/app": "unchanged", "Deployment/web": "configured"}))
	e.RolledTo("web", 2)
	d = deployment()
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(image2))
	g.Expect(nudgeKeys(d)).To(Equal(after), "nudge's keys and trigger kept through Flux's rollout")
	g.Expect(rolled()).To(Equal(1), "no Rolled Event of nudge's for Flux's rollout")
	g.Expect(flux.drift(ctx, t, manifests(e.NS, "2", image2))).To(BeEmpty(), "no drift after Flux's rollout")
	key, err := fingerprint.ReadKey(ctx, suite.K8s, e.NS, options.Default().KeySecret)
	g.Expect(err).NotTo(HaveOccurred())
	state, err := fingerprint.Parse(d.Annotations[workload.AppliedAnnotation], e.NS)
	g.Expect(err).NotTo(HaveOccurred(), "nudge's applied state parses")
	g.Expect(state.KeyID).To(Equal(key.ID()), "under nudge's key")
	g.Expect(d.Labels[workload.SealLabel]).To(Equal(key.Seal(d.Annotations[workload.AppliedAnnotation])), "its seal holds")
	g.Expect(e.Events("web", record.ReasonStateRestored)()).To(BeEmpty(), "no StateRestored Warning")

	// The state is still nudge's: the next change in Git rolls once.
	g.Expect(flux.apply(ctx, t, manifests(e.NS, "3", image2))).To(Equal(map[string]string{
		"ConfigMap/app": "configured", "Deployment/web": "unchanged"}))
	e.RolledTo("web", 3)
	g.Eventually(rolled).WithTimeout(20*time.Second).Should(Equal(2), "nudge's second Rolled Event")
	g.Expect(flux.drift(ctx, t, manifests(e.NS, "3", image2))).To(BeEmpty(), "no drift after nudge's second rollout")
}
