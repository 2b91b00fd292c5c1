package controller_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
)

// Rule 5 for a source an annotation names and the pod spec reads as required:
// the name selects it, the pod spec decides its optionality. Its deletion
// holds the workload with a Warning (new pods could not start) in every
// dialect's named form; its return with the same content rolls nothing, with
// other content once. Until this was fixed, the named form counted as
// optional and the deletion rolled the workload.
func TestDeletedNamedRequiredSource(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		annotations map[string]string
		kind        string // of the source cfg
		pod         nt.PodOption
	}{
		"nudge.dev/configmaps, read by envFrom": {
			annotations: map[string]string{"nudge.dev/configmaps": "cfg"},
			kind:        "ConfigMap", pod: nt.EnvFrom("ConfigMap", "cfg"),
		},
		"nudge.dev/secrets, mounted as a volume": {
			annotations: map[string]string{"nudge.dev/secrets": "cfg"},
			kind:        "Secret", pod: nt.Volume("Secret", "cfg"),
		},
		"configmap.reloader.stakater.com/reload, read by envFrom": {
			annotations: map[string]string{"configmap.reloader.stakater.com/reload": "cfg"},
			kind:        "ConfigMap", pod: nt.EnvFrom("ConfigMap", "cfg"),
		},
		"configmap.reloader.stakater.com/reload as a pattern, read by envFrom": {
			annotations: map[string]string{"configmap.reloader.stakater.com/reload": "cf.*"},
			kind:        "ConfigMap", pod: nt.EnvFrom("ConfigMap", "cfg"),
		},
		"secret.reloader.stakater.com/reload, one key read by secretKeyRef": {
			annotations: map[string]string{"secret.reloader.stakater.com/reload": "cfg"},
			kind:        "Secret", pod: nt.EnvKey("Secret", "cfg", "k", false),
		},
		"pod-reloader.cs.sap.com/configmaps, read by envFrom": {
			annotations: map[string]string{"pod-reloader.cs.sap.com/configmaps": "cfg"},
			kind:        "ConfigMap", pod: nt.EnvFrom("ConfigMap", "cfg"),
		},
		"pod-reloader.cs.sap.com/secrets, mounted as a volume": {
			annotations: map[string]string{"pod-reloader.cs.sap.com/secrets": "cfg"},
			kind:        "Secret", pod: nt.Volume("Secret", "cfg"),
		},
		"wave.pusher.com/extra-configmaps, read by envFrom": {
			annotations: map[string]string{"wave.pusher.com/extra-configmaps": "cfg"},
			kind:        "ConfigMap", pod: nt.EnvFrom("ConfigMap", "cfg"),
		},
		"wave.pusher.com/extra-secrets, mounted as a volume": {
			annotations: map[string]string{"wave.pusher.com/extra-secrets": "cfg"},
			kind:        "Secret", pod: nt.Volume("Secret", "cfg"),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
			source := func(value string) client.Object {
				if tc.kind == "Secret" {
					return nt.Secret(e.NS, "cfg", map[string]string{"k": value})
				}
				return nt.ConfigMap(e.NS, "cfg", map[string]string{"k": value})
			}
			e.Create(source("1"), nt.Deployment(e.NS, "web", 1, tc.annotations, tc.pod))
			e.Baselined("web")

			e.G.Expect(suite.K8s.Delete(e.Ctx, source(""))).To(Succeed())
			e.G.Eventually(e.Events("web", record.ReasonSourceMissing)).WithTimeout(10*time.Second).
				Should(ContainElement(HaveField("Note", ContainSubstring("Required "+tc.kind+" "+e.NS+"/cfg does not exist"))),
					"a Warning that the required %s is missing", tc.kind)
			e.RolledTo("web", 0)

			e.Create(source("1"))
			e.RolledTo("web", 0)
			e.G.Expect(suite.K8s.Delete(e.Ctx, source(""))).To(Succeed())
			e.G.Consistently(e.Rollouts("web")).WithTimeout(time.Second).Should(BeZero(), "no rollout after the second deletion")
			e.Create(source("2"))
			e.RolledTo("web", 1)
		})
	}
}
