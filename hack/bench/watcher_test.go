package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

// The trigger hash is read from Reloader's last-reloaded-from annotation,
// cut to 8 characters; anything else gives none.
func TestTriggerHash(t *testing.T) {
	tests := map[string]struct {
		annotations map[string]string
		want        string
	}{
		"Reloader's JSON gives its hash": {map[string]string{lastReloadedFrom: `{"type":"CONFIGMAP","name":"c","namespace":"n","hash":"Xw3vQk9aZZZZ","containerRefs":["app"],"observedAt":1}`}, "Xw3vQk9a"},
		"a short hash is kept whole":     {map[string]string{lastReloadedFrom: `{"hash":"abc"}`}, "abc"},
		"no annotation gives none":       {nil, ""},
		"not JSON gives none":            {map[string]string{lastReloadedFrom: "2026-11-28"}, ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(triggerHash(tt.annotations)).To(Equal(tt.want))
		})
	}
}
