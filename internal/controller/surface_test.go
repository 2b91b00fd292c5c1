package controller_test

import (
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/workload"
)

// TestEventReasonsSetting: --event-reasons picks the reason of a rollout's
// Event: nudge's Rolled by default, Reloader's Reloaded, with Reloader's
// message, with "reloader"; a rollout write the API server refuses gives
// Reloader's Warning ReloadFail with "reloader" only.
func TestEventReasonsSetting(t *testing.T) {
	tests := map[string]struct {
		setting          string
		reason, other    string
		note             func(ns string) string
		failedWriteEvent bool
	}{
		"nudge's reasons by default": {
			setting: "nudge", reason: "Rolled", other: "Reloaded",
			note: func(ns string) string { return "Rolled Deployment web because ConfigMap " + ns + "/app changed" },
		},
		"Reloader's reasons and messages with --event-reasons=reloader": {
			setting: "reloader", reason: "Reloaded", other: "Rolled",
			note: func(ns string) string {
				return fmt.Sprintf("Changes detected in 'app' of type 'CONFIGMAP' in namespace '%s', Updated 'web' of type 'Deployment' in namespace '%s'", ns, ns)
			},
			failedWriteEvent: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.EventReasons, o.RolloutWindow, o.MetricsByNamespace = tc.setting, 0, true })
			e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}),
				nt.Deployment(e.NS, "web", 1, auto, nt.EnvFrom("ConfigMap", "app")))
			e.Baselined("web")

			allow := e.refuseRollouts()
			e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
			failures := func() float64 {
				return gathered(e.G, "reloader_reload_executed_total_by_namespace", `namespace="`+e.NS+`"`, `success="false"`)
			}
			e.G.Eventually(failures).WithTimeout(20*time.Second).Should(BeNumerically(">=", 1), "a refused rollout write")
			if tc.failedWriteEvent {
				e.G.Eventually(e.Events("web", "ReloadFail")).WithTimeout(20*time.Second).Should(ContainElement(And(
					HaveField("Type", corev1.EventTypeWarning),
					HaveField("Note", And(
						HavePrefix(fmt.Sprintf("Update for 'web' of type 'Deployment' in namespace '%s' failed with error ", e.NS)),
						ContainSubstring("no rollout here (test)"))),
				)), "Reloader's Warning for the failed write")
			} else {
				e.G.Consistently(e.Events("web", "ReloadFail")).WithTimeout(3*time.Second).Should(BeEmpty(), "no Reloader Warning with nudge's reasons")
			}
			allow()

			e.RolledTo("web", 1)
			e.G.Eventually(e.Events("web", tc.reason)).WithTimeout(20*time.Second).Should(ConsistOf(And(
				HaveField("Type", corev1.EventTypeNormal),
				HaveField("Note", tc.note(e.NS)),
			)), "one %s Event", tc.reason)
			e.G.Expect(e.Events("web", tc.other)()).To(BeEmpty(), "no %s Event", tc.other)
		})
	}
}

// TestLastReloadedFrom: a rollout of a workload Reloader's annotations
// select writes Reloader's last-reloaded-from on its pod template, in the
// same patch as the trigger, in Reloader's JSON shape, naming the source
// and the container that uses it, with the source's keyed digest (the one in
// nudge's applied state), never its value or an unkeyed digest of it. A
// workload selected by nudge's own annotations, or the env-vars strategy
// (with which Reloader writes none either), gets none.
func TestLastReloadedFrom(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		envVars     bool
		written     bool
	}{
		"Reloader's auto annotation writes it":      {annotations: map[string]string{"reloader.stakater.com/auto": "true"}, written: true},
		"Reloader's named Secret writes it":         {annotations: map[string]string{"secret.reloader.stakater.com/reload": "db"}, written: true},
		"nudge's own annotation writes none":        {annotations: auto},
		"Reloader's env-vars strategy writes none":  {annotations: map[string]string{"reloader.stakater.com/auto": "true"}, envVars: true},
		"Reloader's annotation on the pod template": {annotations: nil, written: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) {
				o.RolloutWindow = 0
				if tc.envVars {
					o.ReloadStrategy = "env-vars"
				}
			})
			d := nt.Deployment(e.NS, "web", 1, tc.annotations, nt.EnvFrom("ConfigMap", "app"), nt.EnvFrom("Secret", "db"))
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "registry.example/side:1"})
			d.Spec.Template.Spec.Containers[0], d.Spec.Template.Spec.Containers[1] = d.Spec.Template.Spec.Containers[1], d.Spec.Template.Spec.Containers[0]
			if tc.annotations == nil {
				d.Spec.Template.Annotations = map[string]string{"secret.reloader.stakater.com/auto": "true"}
			}
			e.Create(nt.ConfigMap(e.NS, "app", map[string]string{"a": "1"}), nt.Secret(e.NS, "db", map[string]string{"password": "hunter2-old"}), d)
			e.Baselined("web")
			e.UpdateSecret("db", func(s *corev1.Secret) { s.Data["password"] = []byte("hunter2-new") })
			e.RolledTo("web", 1)

			dep := e.Deployment("web")
			value, ok := dep.Spec.Template.Annotations[workload.LastReloadedFromAnnotation]
			if !tc.written {
				e.G.Expect(ok).To(BeFalse(), "no last-reloaded-from: %q", value)
				return
			}
			e.G.Expect(dep.Spec.Template.Annotations).To(HaveKey(workload.RestartedAtAnnotation), "written with the trigger")
			var got workload.ReloadSource
			e.G.Expect(json.Unmarshal([]byte(value), &got)).To(Succeed())
			e.G.Expect(got).To(And(
				HaveField("Type", "SECRET"), HaveField("Name", "db"), HaveField("Namespace", e.NS),
				HaveField("ContainerRefs", Equal([]string{"app"})),
				HaveField("ObservedAt", BeNumerically("~", time.Now().Unix(), 60)),
			))
			e.G.Expect(dep.Annotations[workload.AppliedAnnotation]).To(ContainSubstring("Secret/db="+got.Hash), "the keyed digest of nudge's applied state")
			e.G.Expect(got.Hash).NotTo(BeEmpty())
			e.G.Expect(value).NotTo(ContainSubstring("hunter2"), "never the value")
			for _, unkeyed := range unkeyedDigests("hunter2-new") {
				e.G.Expect(strings.ToLower(value)).NotTo(ContainSubstring(strings.ToLower(unkeyed)), "never an unkeyed digest")
			}
		})
	}
}

// unkeyedDigests returns the unkeyed digests of v a tool might write, in
// hex and base64: SHA-1 (older Reloader), SHA-256, SHA-512/256 (Reloader's
// GenerateSHA).
func unkeyedDigests(v string) []string {
	s1, s256, s512 := sha1.Sum([]byte(v)), sha256.Sum256([]byte(v)), sha512.Sum512_256([]byte(v))
	var out []string
	for _, sum := range [][]byte{s1[:], s256[:], s512[:]} {
		out = append(out, hex.EncodeToString(sum), base64.StdEncoding.EncodeToString(sum), base64.RawURLEncoding.EncodeToString(sum))
	}
	return out
}

// gathered returns the value of the counter name{labels} (labels as
// name="value", sorted by name) in controller-runtime's registry, which the
// in-process nudges of every test share; 0 when absent.
func gathered(g Gomega, name string, labels ...string) float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if strings.Join(got, ",") == strings.Join(labels, ",") {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
