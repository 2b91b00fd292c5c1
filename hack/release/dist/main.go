// Command dist writes the kubectl plugin's release archives, one per
// platform, and the krew plugin manifest that installs them:
//
//	dist -out bin/dist -version v1.2.3 -created 1700000000 \
//	  -binary linux/amd64=bin/linux_amd64/nudge -binary windows/amd64=bin/windows_amd64/nudge.exe ...
//
// writes bin/dist/kubectl-nudge_v1.2.3_linux_amd64.tar.gz (a .zip on
// Windows), each holding the binary as kubectl-nudge (kubectl-nudge.exe)
// and -license when given, and bin/dist/nudge.yaml, whose URIs are the
// release's downloads (-download) and whose sha256 are the archives'.
// Every timestamp in an archive is -created, so the same inputs write the
// same archives.
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"
	"time"
)

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// semver is krew's requirement on spec.version: a v-prefixed semantic
// version.
var semver = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dist:", err)
		os.Exit(1)
	}
}

// platform is one archive of the manifest.
type platform struct {
	OS, Arch, URI, SHA256, Bin string
	License                    bool
}

func run(args []string) error {
	fs := flag.NewFlagSet("dist", flag.ContinueOnError)
	out := fs.String("out", "", "the directory to write the archives and nudge.yaml into")
	version := fs.String("version", "", "the release tag, vX.Y.Z")
	download := fs.String("download", "https://github.com/nudge-dev/nudge/releases/download", "the URL the release's files are downloaded from, before /<version>/<archive>")
	homepage := fs.String("homepage", "https://github.com/nudge-dev/nudge", "the plugin's homepage")
	license := fs.String("license", "", "a license file to put in every archive as LICENSE (none when empty)")
	created := fs.Int64("created", 0, "every timestamp, in seconds since the epoch")
	var binaries listFlag
	fs.Var(&binaries, "binary", "os/arch=path of the binary for that platform (repeat)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || len(binaries) == 0 {
		return errors.New("-out and at least one -binary are needed")
	}
	if !semver.MatchString(*version) {
		return fmt.Errorf("-version %q is not a release tag vX.Y.Z (krew needs one)", *version)
	}
	var licenseBody []byte
	if *license != "" {
		var err error
		if licenseBody, err = os.ReadFile(*license); err != nil {
			return err
		}
	}
	when := time.Unix(*created, 0).UTC()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	var platforms []platform
	for _, b := range binaries {
		pl, path, ok := strings.Cut(b, "=")
		goos, arch, ok2 := strings.Cut(pl, "/")
		if !ok || !ok2 {
			return fmt.Errorf("-binary %q is not os/arch=path", b)
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		p := platform{OS: goos, Arch: arch, Bin: "kubectl-nudge", License: licenseBody != nil}
		files := []archived{{name: p.Bin, mode: 0o755, body: bin}}
		if licenseBody != nil {
			files = append(files, archived{name: "LICENSE", mode: 0o644, body: licenseBody})
		}
		name := fmt.Sprintf("kubectl-nudge_%s_%s_%s", *version, goos, arch)
		var archive []byte
		if goos == "windows" {
			p.Bin += ".exe"
			files[0].name = p.Bin
			name += ".zip"
			archive, err = zipArchive(when, files)
		} else {
			name += ".tar.gz"
			archive, err = tarGz(when, files)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(*out, name), archive, 0o644); err != nil {
			return err
		}
		sum := sha256.Sum256(archive)
		p.SHA256, p.URI = hex.EncodeToString(sum[:]), fmt.Sprintf("%s/%s/%s", strings.TrimSuffix(*download, "/"), *version, name)
		platforms = append(platforms, p)
		fmt.Printf("Wrote %s\n", filepath.Join(*out, name))
	}
	var manifest bytes.Buffer
	if err := krewManifest.Execute(&manifest, map[string]any{"Version": *version, "Homepage": *homepage, "Platforms": platforms}); err != nil {
		return err
	}
	path := filepath.Join(*out, "nudge.yaml")
	if err := os.WriteFile(path, manifest.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("Wrote %s\n", path)
	return nil
}

// krewManifest is the plugin's krew manifest
// (https://krew.sigs.k8s.io/docs/developer-guide/plugin-manifest/).
var krewManifest = template.Must(template.New("nudge.yaml").Parse(`apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: nudge
spec:
  version: {{ .Version }}
  homepage: {{ .Homepage }}
  shortDescription: Explain what a ConfigMap or Secret change rolls, and why
  description: |
    nudge rolls Kubernetes workloads when the ConfigMaps and Secrets they use
    change, reading Stakater Reloader's, pod-reloader's and Wave's annotations
    and its own. The plugin answers, with your kubeconfig and permissions,
    what a change of a source will restart, and why a workload rolled or did
    not: kubectl nudge explain deployment/web, kubectl nudge explain secret/db.
  platforms:
{{- range .Platforms }}
  - selector:
      matchLabels:
        os: {{ .OS }}
        arch: {{ .Arch }}
    uri: {{ .URI }}
    sha256: {{ .SHA256 }}
    files:
    - from: {{ .Bin }}
      to: .
{{- if .License }}
    - from: LICENSE
      to: .
{{- end }}
    bin: {{ .Bin }}
{{- end }}
`))

// archived is one file of an archive.
type archived struct {
	name string
	mode int64
	body []byte
}

// tarGz returns a gzip-compressed tar of files.
func tarGz(when time.Time, files []archived) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), ModTime: when, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// zipArchive returns a zip of files, deflated.
func zipArchive(when time.Time, files []archived) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		h := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: when}
		h.SetMode(os.FileMode(f.mode))
		w, err := zw.CreateHeader(h)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
