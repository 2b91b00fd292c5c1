package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// dist writes one archive per platform, the binary under the plugin's name
// (with .exe in Windows' zip), and a manifest whose sha256 and URI are each
// archive's; the same inputs write the same bytes.
func TestDistWritesArchivesAndTheirManifest(t *testing.T) {
	in := t.TempDir()
	bin := filepath.Join(in, "nudge")
	if err := os.WriteFile(bin, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	license := filepath.Join(in, "LICENSE")
	if err := os.WriteFile(license, []byte("license"), 0o644); err != nil {
		t.Fatal(err)
	}
	write := func() string {
		out := t.TempDir()
		if err := run([]string{"-out", out, "-version", "v1.2.3", "-created", "1700000000", "-license", license,
			"-binary", "linux/arm64=" + bin, "-binary", "windows/amd64=" + bin}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	out := write()
	manifest, err := os.ReadFile(filepath.Join(out, "nudge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"kubectl-nudge_v1.2.3_linux_arm64.tar.gz", "kubectl-nudge_v1.2.3_windows_amd64.zip"} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		want := "    uri: https://github.com/nudge-dev/nudge/releases/download/v1.2.3/" + name + "\n    sha256: " + hex.EncodeToString(sum[:]) + "\n"
		if !strings.Contains(string(manifest), want) {
			t.Errorf("nudge.yaml does not hold\n%s\n%s", want, manifest)
		}
		again, err := os.ReadFile(filepath.Join(write(), name))
		if err != nil || !bytes.Equal(again, b) {
			t.Errorf("%s differs when written again (%v)", name, err)
		}
	}
	if got := regexp.MustCompile(`(?m)^    bin: (\S+)$`).FindAllStringSubmatch(string(manifest), -1); len(got) != 2 ||
		got[0][1] != "kubectl-nudge" || got[1][1] != "kubectl-nudge.exe" {
		t.Errorf("the manifest's bins are %q", got)
	}

	f, err := os.Open(filepath.Join(out, "kubectl-nudge_v1.2.3_linux_arm64.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "kubectl-nudge" && h.Mode&0o111 == 0 {
			t.Errorf("kubectl-nudge is not executable: %o", h.Mode)
		}
	}
	if strings.Join(names, " ") != "kubectl-nudge LICENSE" {
		t.Errorf("the tar holds %q", names)
	}
	z, err := zip.OpenReader(filepath.Join(out, "kubectl-nudge_v1.2.3_windows_amd64.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	if len(z.File) != 2 || z.File[0].Name != "kubectl-nudge.exe" || z.File[1].Name != "LICENSE" {
		t.Errorf("the zip holds %v", z.File)
	}
}

// krew needs a semantic version: dist refuses anything else.
func TestDistRefusesAVersionThatIsNotATag(t *testing.T) {
	for _, v := range []string{"1.2.3", "abc1234-dirty", "v1.2"} {
		err := run([]string{"-out", t.TempDir(), "-version", v, "-binary", "linux/amd64=/nonexistent"})
		if err == nil || !strings.Contains(err.Error(), "is not a release tag") {
			t.Errorf("-version %s: %v, want an error naming it", v, err)
		}
	}
}
