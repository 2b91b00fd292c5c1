package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestLogLine(t *testing.T) {
	for name, tc := range map[string]struct {
		raw         string
		interesting bool
		display     string
	}{
		"a rollout shows its message alone": {
			raw:         `{"time":"2026-11-22T06:14:50.220Z","level":"INFO","msg":"Changes detected in 'app-config' of type 'CONFIGMAP' in namespace 'shop'; updated 'web' of type 'Deployment' in namespace 'shop'","controller":"Deployment","sources":"ConfigMap shop/app-config"}`,
			interesting: true,
			display:     "Changes detected in 'app-config' of type 'CONFIGMAP' in namespace 'shop'; updated 'web' of type 'Deployment' in namespace 'shop'",
		},
		"the start shows its fields": {
			raw:         `{"time":"2026-11-22T06:14:49.784Z","level":"INFO","msg":"Starting nudge","rolloutWindow":"5s","keyID":"8540e158"}`,
			interesting: true,
			display:     `Starting nudge keyID="8540e158" rolloutWindow="5s"`,
		},
		"other information is hidden": {
			raw: `{"time":"2026-11-22T06:14:49.784Z","level":"INFO","msg":"Starting metrics server","logger":"controller-runtime.metrics"}`,
		},
		"an error shows its level and fields": {
			raw:         `{"time":"2026-11-22T06:14:49.784Z","level":"ERROR","msg":"Reconciler error","err":"boom"}`,
			interesting: true,
			display:     `ERROR  Reconciler error  err="boom"`,
		},
		"a line in another format is shown as it is": {
			raw:         "nudge: loading API client configuration: no such file",
			interesting: true,
			display:     "nudge: loading API client configuration: no such file",
		},
		"an empty line is hidden": {raw: ""},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			l := parseLogLine(tc.raw)
			g.Expect(l.interesting()).To(Equal(tc.interesting))
			if tc.interesting {
				g.Expect(l.display()).To(Equal(tc.display))
			}
		})
	}
}
