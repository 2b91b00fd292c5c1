// Command image writes nudge's image as an OCI image layout, one manifest
// per platform in its index.json, without a container engine and without
// pulling a base: the base is assembled from files as the equivalent of
// gcr.io/distroless/static:nonroot (a passwd and group with root 0 and
// nonroot 65532, the CA bundle of Debian's ca-certificates, /tmp with mode
// 1777, /home/nonroot), and the binary is a layer of its own at /nudge.
//
//	image -out bin/image -ca /etc/ssl/certs/ca-certificates.crt \
//	  -binary linux/amd64=bin/linux_amd64/nudge -binary linux/arm64=bin/linux_arm64/nudge \
//	  -label org.opencontainers.image.version=v1.2.3 ... -created 1700000000
//
// Every timestamp is -created (seconds since the epoch; the Makefile passes
// SOURCE_DATE_EPOCH or the commit's time), so the same inputs write the same
// digests. The label org.opencontainers.image.created is -created, unless
// a -label sets it.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the image runs as: distroless's nonroot, the chart's
// runAsUser and runAsGroup.
const (
	uid     = 65532
	binPath = "nudge"
	caPath  = "etc/ssl/certs/ca-certificates.crt"
)

const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
`

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	out := fs.String("out", "", "the directory of the OCI image layout to write (replaced)")
	ca := fs.String("ca", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to put at /"+caPath)
	created := fs.Int64("created", 0, "every timestamp, in seconds since the epoch")
	var binaries, labels listFlag
	fs.Var(&binaries, "binary", "os/arch=path of the binary for that platform (repeat)")
	fs.Var(&labels, "label", "key=value of a label of the image's config (repeat)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || len(binaries) == 0 {
		return errors.New("-out and at least one -binary are needed")
	}
	when := time.Unix(*created, 0).UTC()
	labelMap := map[string]string{}
	for _, l := range labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return fmt.Errorf("-label %q is not key=value", l)
		}
		labelMap[k] = v
	}
	if _, ok := labelMap["org.opencontainers.image.created"]; !ok {
		labelMap["org.opencontainers.image.created"] = when.Format(time.RFC3339)
	}
	cert, err := os.ReadFile(*ca)
	if err != nil {
		return fmt.Errorf("reading the CA bundle: %w", err)
	}
	base, err := layer(when, baseFiles(cert))
	if err != nil {
		return err
	}

	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range binaries {
		platform, path, ok := strings.Cut(b, "=")
		goos, arch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 {
			return fmt.Errorf("-binary %q is not os/arch=path", b)
		}
		img, err := image(when, goos, arch, path, base, labelMap)
		if err != nil {
			return fmt.Errorf("%s: %w", platform, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        imageDescriptor{img},
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: goos, Architecture: arch}},
		})
	}
	if err := os.RemoveAll(*out); err != nil {
		return err
	}
	if _, err := layout.Write(*out, idx); err != nil {
		return fmt.Errorf("writing the OCI layout: %w", err)
	}
	d, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("Wrote %s (index %s, %d platforms)\n", *out, d, len(binaries))
	return nil
}

// image returns the image of one platform: the base layer, then the binary
// at /nudge, run as 65532:65532.
func image(when time.Time, goos, arch, binary string, base v1.Layer, labels map[string]string) (v1.Image, error) {
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, err
	}
	top, err := layer(when, []file{{name: binPath, mode: 0o755, body: bin}})
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		Architecture: arch,
		OS:           goos,
		Created:      v1.Time{Time: when},
		Config: v1.Config{
			User:         fmt.Sprintf("%d:%d", uid, uid),
			Entrypoint:   []string{"/" + binPath},
			WorkingDir:   "/",
			Env:          []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "SSL_CERT_FILE=/" + caPath},
			ExposedPorts: map[string]struct{}{"9090/tcp": {}, "8081/tcp": {}},
			Labels:       labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: v1.Time{Time: when}, CreatedBy: "nudge hack/release/image: distroless/static equivalent (passwd, group, CA certificates, /tmp, /home/nonroot)"}},
		mutate.Addendum{Layer: top, History: v1.History{Created: v1.Time{Time: when}, CreatedBy: "nudge hack/release/image: COPY nudge /nudge"}},
	)
}

// imageDescriptor is an image whose descriptor in an index has no
// artifactType: go-containerregistry sets it to the config's media type,
// which the image spec keeps for artifacts, and which `docker buildx` does
// not write for an image.
type imageDescriptor struct{ v1.Image }

// Descriptor returns the image's media type, size and digest.
func (i imageDescriptor) Descriptor() (*v1.Descriptor, error) {
	mt, err := i.MediaType()
	if err != nil {
		return nil, err
	}
	size, err := i.Size()
	if err != nil {
		return nil, err
	}
	digest, err := i.Digest()
	if err != nil {
		return nil, err
	}
	return &v1.Descriptor{MediaType: mt, Size: size, Digest: digest}, nil
}

// file is one entry of a layer: a directory when body is nil and dir is
// set.
type file struct {
	name     string
	mode     int64
	uid, gid int
	dir      bool
	body     []byte
}

// baseFiles returns the files of the base layer.
func baseFiles(cert []byte) []file {
	return []file{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd)},
		{name: "etc/group", mode: 0o644, body: []byte(group)},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: caPath, mode: 0o644, body: cert},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: uid, gid: uid, dir: true},
		{name: "root/", mode: 0o700, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}
}

// layer returns a gzip-compressed OCI layer of files, in name order, every
// entry dated when.
func layer(when time.Time, files []file) (v1.Layer, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    f.name,
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: when,
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Clean(f.name), err)
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}
