package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"nudge.dev/nudge/test/chart/charttest"
)

// TestReloaderValuesKnown: the values under reloader and kubernetes that
// the install notes take as known (nudge.reloaderKnownValues in
// templates/_reloader.tpl) are those values.schema.json describes, so a
// value added to one is added to the other.
func TestReloaderValuesKnown(t *testing.T) {
	g := NewWithT(t)
	tpl, err := os.ReadFile(filepath.Join(charttest.Chart(t), "templates", "_reloader.tpl"))
	g.Expect(err).NotTo(HaveOccurred())
	_, block, found := strings.Cut(string(tpl), `{{- define "nudge.reloaderKnownValues" }}`)
	g.Expect(found).To(BeTrue(), "nudge.reloaderKnownValues in _reloader.tpl")
	block, _, _ = strings.Cut(block, "{{- end }}")
	var known map[string]any
	g.Expect(yaml.Unmarshal([]byte(block), &known)).To(Succeed())

	b, err := os.ReadFile(filepath.Join(charttest.Chart(t), "values.schema.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var schema map[string]any
	g.Expect(json.Unmarshal(b, &schema)).To(Succeed())
	props := schema["properties"].(map[string]any)
	want := map[string]any{
		"reloader":   schemaTree(props["reloader"].(map[string]any)),
		"kubernetes": schemaTree(props["kubernetes"].(map[string]any)),
	}
	g.Expect(known).To(Equal(want))
}

// schemaTree returns the keys a JSON schema's properties describe, each
// with the tree of its own properties ({} when it has none).
func schemaTree(s map[string]any) map[string]any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	for k, v := range props {
		out[k] = schemaTree(v.(map[string]any))
	}
	return out
}
