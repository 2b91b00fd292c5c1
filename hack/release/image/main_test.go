package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// The same inputs write the same index, whatever the day: every timestamp
// is -created.
func TestImageIsReproducible(t *testing.T) {
	in := t.TempDir()
	bin, ca := filepath.Join(in, "nudge"), filepath.Join(in, "ca.crt")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func() string {
		out := filepath.Join(t.TempDir(), "image")
		if err := run([]string{"-out", out, "-ca", ca, "-created", "1700000000", "-label", "a=b",
			"-binary", "linux/amd64=" + bin, "-binary", "linux/arm64=" + bin}); err != nil {
			t.Fatal(err)
		}
		p, err := layout.FromPath(out)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := p.ImageIndex()
		if err != nil {
			t.Fatal(err)
		}
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 2 || m.Manifests[1].Platform.Architecture != "arm64" {
			t.Fatalf("the index holds %+v", m.Manifests)
		}
		img, err := idx.Image(m.Manifests[1].Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != "arm64" || cfg.Config.User != "65532:65532" || cfg.Config.Labels["a"] != "b" ||
			cfg.Config.Labels["org.opencontainers.image.created"] != "2023-11-14T22:13:20Z" {
			t.Errorf("the arm64 config is %+v", cfg)
		}
		return d.String()
	}
	if a, b := write(), write(); a != b {
		t.Errorf("two writes: index %s, then %s", a, b)
	}
}
