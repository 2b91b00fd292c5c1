package controller_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	nt "nudge.dev/nudge/internal/nudgetest"
	"nudge.dev/nudge/internal/options"
	"nudge.dev/nudge/internal/record"
)

// eventNoteLimit is the API server's limit on an Event's note, in bytes
// (events.k8s.io/v1: "Maximal length of the note is 1kB").
const eventNoteLimit = 1024

// TestBadInput: sources and annotations at and beyond the API's limits get a
// clean decision (the rollout they deserve, no other) and, where they are
// wrong, a Warning Event; never a crash. Each case has a Deployment "web"
// (or the case's workload) baselined first, then the case's change.
func TestBadInput(t *testing.T) {
	t.Parallel()
	longName := strings.Repeat("c", 253)    // a ConfigMap name's limit
	longKey := strings.Repeat("k", 253)     // a ConfigMap key's limit
	longWorkload := strings.Repeat("w", 63) // a label value's limit (the template's app label)
	tests := map[string]struct {
		workload    string // "web" when empty
		sources     func(ns string) []client.Object
		annotations map[string]string
		pod         []nt.PodOption
		warning     string       // reason of a Warning Event the workload gets
		whileDown   bool         // the change is made while nudge is stopped
		change      func(e *env) // made once the workload is baselined
		rollouts    int64        // the rollouts the change deserves
		rolledFor   string       // a source the Rolled Event names, when rollouts > 0
	}{
		"a Secret of 1 MiB rolls once when one byte changes": {
			sources: func(ns string) []client.Object {
				return []client.Object{nt.Secret(ns, "big", map[string]string{"big": strings.Repeat("x", 1<<20-len("big"))})}
			},
			annotations: auto, pod: []nt.PodOption{nt.Volume("Secret", "big")},
			change: func(e *env) {
				e.UpdateSecret("big", func(s *corev1.Secret) { s.Data["big"][1<<19] = 'y' })
			},
			rollouts: 1, rolledFor: "Secret",
		},
		"a ConfigMap of 10,000 keys rolls once when one key changes": {
			sources: func(ns string) []client.Object {
				data := make(map[string]string, 10_000)
				for i := range 10_000 {
					data[fmt.Sprintf("k-%05d", i)] = "v"
				}
				return []client.Object{nt.ConfigMap(ns, "many", data)}
			},
			annotations: auto, pod: []nt.PodOption{nt.Volume("ConfigMap", "many")},
			change: func(e *env) {
				e.UpdateConfigMap("many", func(c *corev1.ConfigMap) { c.Data["k-05000"] = "w" })
			},
			rollouts: 1, rolledFor: "ConfigMap",
		},
		"a label on a ConfigMap of 10,000 keys rolls nothing": {
			sources: func(ns string) []client.Object {
				data := make(map[string]string, 10_000)
				for i := range 10_000 {
					data[fmt.Sprintf("k-%05d", i)] = "v"
				}
				return []client.Object{nt.ConfigMap(ns, "many", data)}
			},
			annotations: auto, pod: []nt.PodOption{nt.Volume("ConfigMap", "many")},
			change: func(e *env) {
				e.UpdateConfigMap("many", func(c *corev1.ConfigMap) { c.Labels = map[string]string{"touched": "yes"} })
			},
		},
		"binary data in a Secret, every byte value, rolls once when a byte changes": {
			sources: func(ns string) []client.Object {
				all := make([]byte, 256)
				for i := range all {
					all[i] = byte(i)
				}
				return []client.Object{nt.Secret(ns, "bin", map[string]string{"bin": string(all)})}
			},
			annotations: auto, pod: []nt.PodOption{nt.EnvFrom("Secret", "bin")},
			change: func(e *env) {
				e.UpdateSecret("bin", func(s *corev1.Secret) { s.Data["bin"][0] = 0xff })
			},
			rollouts: 1, rolledFor: "Secret",
		},
		"non-UTF-8 bytes in a ConfigMap's binaryData roll once when they change": {
			sources: func(ns string) []client.Object {
				return []client.Object{&corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "raw"},
					BinaryData: map[string][]byte{"raw": {0xff, 0xfe, 0xc3, 0x28, 0x00}},
				}}
			},
			annotations: auto, pod: []nt.PodOption{nt.Volume("ConfigMap", "raw")},
			change: func(e *env) {
				e.UpdateConfigMap("raw", func(c *corev1.ConfigMap) { c.BinaryData["raw"] = []byte{0xc0, 0xaf} })
			},
			rollouts: 1, rolledFor: "ConfigMap",
		},
		"names at the length limit roll once": {
			workload: longWorkload,
			sources: func(ns string) []client.Object {
				return []client.Object{nt.ConfigMap(ns, longName, map[string]string{longKey: "1"})}
			},
			annotations: map[string]string{"nudge.dev/configmaps": longName},
			pod:         []nt.PodOption{nt.EnvKey("ConfigMap", longName, longKey, false)},
			change: func(e *env) {
				e.UpdateConfigMap(longName, func(c *corev1.ConfigMap) { c.Data[longKey] = "2" })
			},
			rollouts: 1, rolledFor: longName,
		},
		"an invalid regular expression in a Reloader list warns, and the list's other entries roll": {
			sources: func(ns string) []client.Object {
				return []client.Object{nt.ConfigMap(ns, "app", map[string]string{"a": "1"})}
			},
			annotations: map[string]string{"configmap.reloader.stakater.com/reload": "app,[,a)|(b"},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			warning:     record.ReasonMalformedAnnotation,
			change: func(e *env) {
				e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
			},
			rollouts: 1, rolledFor: "ConfigMap",
		},
		"an annotation value of 250 KiB of bad names warns, and its good name rolls": {
			sources: func(ns string) []client.Object {
				return []client.Object{nt.ConfigMap(ns, "app", map[string]string{"a": "1"})}
			},
			// The API server refuses more than 256 KiB of annotations in all;
			// nudge's own need a few hundred bytes.
			annotations: map[string]string{"nudge.dev/configmaps": "app," + strings.Repeat("Bad_Name,", 250<<10/len("Bad_Name,"))},
			pod:         []nt.PodOption{nt.EnvFrom("ConfigMap", "app")},
			warning:     record.ReasonMalformedAnnotation,
			change: func(e *env) {
				e.UpdateConfigMap("app", func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
			},
			rollouts: 1, rolledFor: "ConfigMap",
		},
		"a workload reading 500 sources, all changed while nudge was down, rolls once": {
			sources: func(ns string) []client.Object {
				var out []client.Object
				for i := range 500 {
					out = append(out, nt.ConfigMap(ns, fmt.Sprintf("cfg-%03d", i), map[string]string{"a": "1"}))
				}
				return out
			},
			annotations: auto,
			pod: func() []nt.PodOption {
				var out []nt.PodOption
				for i := range 500 {
					out = append(out, nt.EnvFrom("ConfigMap", fmt.Sprintf("cfg-%03d", i)))
				}
				return out
			}(),
			whileDown: true,
			change: func(e *env) {
				for i := range 500 {
					e.UpdateConfigMap(fmt.Sprintf("cfg-%03d", i), func(c *corev1.ConfigMap) { c.Data["a"] = "2" })
				}
			},
			rollouts: 1, rolledFor: "ConfigMap",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t, true, func(o *options.Options) { o.RolloutWindow = 0 })
			workload := tc.workload
			if workload == "" {
				workload = "web"
			}
			e.Create(tc.sources(e.NS)...)
			e.Create(nt.Deployment(e.NS, workload, 1, tc.annotations, tc.pod...))
			e.Baselined(workload)
			e.G.Expect(e.Rollouts(workload)()).To(BeZero(), "no rollout at first sight")
			if tc.warning != "" {
				e.G.Eventually(e.Events(workload, tc.warning)).WithTimeout(20*time.Second).
					ShouldNot(BeEmpty(), "a %s Warning on %s", tc.warning, workload)
			}
			if tc.whileDown {
				e.Nudge.Stop(t)
			}
			tc.change(e)
			if tc.whileDown {
				e.Nudge = nt.Start(t, suite.Plane.Config(), e.NS, func(o *options.Options) { o.RolloutWindow = 0 })
			}
			e.RolledTo(workload, tc.rollouts)
			if tc.rollouts > 0 {
				e.G.Eventually(e.Events(workload, record.ReasonRolled)).WithTimeout(20*time.Second).
					Should(ContainElement(HaveField("Note", ContainSubstring(tc.rolledFor))), "a Rolled Event naming %s", tc.rolledFor)
			}
			for _, reason := range []string{record.ReasonRolled, tc.warning} {
				for _, ev := range e.Events(workload, reason)() {
					e.G.Expect(len(ev.Note)).To(BeNumerically("<=", eventNoteLimit), "the API server's limit on a note")
				}
			}
		})
	}
}
