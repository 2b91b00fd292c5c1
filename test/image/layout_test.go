package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The OCI image layout, as the image spec defines it
// (https://github.com/opencontainers/image-spec/blob/v1.1.1/image-layout.md):
// only the fields the checks read. Parsed by hand, so nudge's module needs
// no registry library.

const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
)

type descriptor struct {
	MediaType string    `json:"mediaType"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size"`
	Platform  *platform `json:"platform,omitempty"`
}

type platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

func (p platform) String() string { return p.OS + "/" + p.Architecture }

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

// config is an image's configuration
// (https://github.com/opencontainers/image-spec/blob/v1.1.1/config.md).
type config struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Config       struct {
		User         string              `json:"User,omitempty"`
		Entrypoint   []string            `json:"Entrypoint,omitempty"`
		Cmd          []string            `json:"Cmd,omitempty"`
		WorkingDir   string              `json:"WorkingDir,omitempty"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
		Labels       map[string]string   `json:"Labels,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// layout is an OCI image layout read from a directory: one image per
// descriptor of its index.json.
type layout struct {
	dir    string
	index  index
	images []image
}

// image is one platform's image of a layout.
type image struct {
	platform platform // as the index's descriptor says
	config   config
	layers   []descriptor
}

// entry is a file of an image's file system, from its last layer holding it.
type entry struct {
	header *tar.Header
	body   []byte // regular files only
}

// readLayout reads the layout in dir: index.json, every manifest and
// config, each checked against its digest. It returns an error when a blob
// is missing, does not match its digest, or does not parse.
func readLayout(dir string) (*layout, error) {
	l := &layout{dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &l.index); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	for _, d := range l.index.Manifests {
		var m manifest
		if err := l.readJSON(d, &m); err != nil {
			return nil, err
		}
		img := image{layers: m.Layers}
		if d.Platform != nil {
			img.platform = *d.Platform
		}
		if err := l.readJSON(m.Config, &img.config); err != nil {
			return nil, err
		}
		l.images = append(l.images, img)
	}
	return l, nil
}

// blob returns the content of d, or an error when it is missing or does
// not match d's digest and size.
func (l *layout) blob(d descriptor) ([]byte, error) {
	algo, hexDigest, ok := strings.Cut(d.Digest, ":")
	if !ok || algo != "sha256" {
		return nil, fmt.Errorf("digest %q: not sha256", d.Digest)
	}
	b, err := os.ReadFile(filepath.Join(l.dir, "blobs", algo, hexDigest))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hexDigest || int64(len(b)) != d.Size {
		return nil, fmt.Errorf("blob %s: content does not match its digest and size", d.Digest)
	}
	return b, nil
}

func (l *layout) readJSON(d descriptor, into any) error {
	b, err := l.blob(d)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("blob %s (%s): %w", d.Digest, d.MediaType, err)
	}
	return nil
}

// files returns the image's file system: every path (cleaned, without a
// leading slash) to its entry in the last layer that holds it. It returns
// an error when a layer is not a gzip-compressed tar.
func (l *layout) files(img image) (map[string]entry, error) {
	files := map[string]entry{}
	for _, d := range img.layers {
		b, err := l.blob(d)
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", d.Digest, err)
		}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("layer %s: %w", d.Digest, err)
			}
			name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
			e := entry{header: h}
			if h.Typeflag == tar.TypeReg {
				if e.body, err = io.ReadAll(tr); err != nil {
					return nil, fmt.Errorf("layer %s: %s: %w", d.Digest, name, err)
				}
			}
			files[name] = e
		}
	}
	return files, nil
}

// layoutWriter writes an OCI image layout by hand, for the checks' tests
// of wrong images.
type layoutWriter struct {
	dir   string
	index index
}

func newLayoutWriter(dir string) (*layoutWriter, error) {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, err
	}
	err := os.WriteFile(filepath.Join(dir, "oci-layout"), []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644)
	return &layoutWriter{dir: dir, index: index{SchemaVersion: 2, MediaType: mediaTypeIndex}}, err
}

// blob writes b and returns its descriptor.
func (w *layoutWriter) blob(mediaType string, b []byte) (descriptor, error) {
	sum := sha256.Sum256(b)
	d := descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(b))}
	return d, os.WriteFile(filepath.Join(w.dir, "blobs", "sha256", hex.EncodeToString(sum[:])), b, 0o644)
}

// image writes an image of cfg with one layer of files and adds it to the
// index under p.
func (w *layoutWriter) image(p platform, cfg config, files []entry) error {
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	for _, f := range files {
		h := *f.header
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(f.body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			return err
		}
		if _, err := tw.Write(f.body); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	diff := sha256.Sum256(tarBuf.Bytes())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(tarBuf.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	layer, err := w.blob(mediaTypeLayer, gz.Bytes())
	if err != nil {
		return err
	}
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "layers", []string{"sha256:" + hex.EncodeToString(diff[:])}
	cb, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	c, err := w.blob(mediaTypeConfig, cb)
	if err != nil {
		return err
	}
	mb, err := json.Marshal(manifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: c, Layers: []descriptor{layer}})
	if err != nil {
		return err
	}
	m, err := w.blob(mediaTypeManifest, mb)
	if err != nil {
		return err
	}
	m.Platform = &p
	w.index.Manifests = append(w.index.Manifests, m)
	return nil
}

// close writes index.json.
func (w *layoutWriter) close() error {
	b, err := json.Marshal(w.index)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(w.dir, "index.json"), b, 0o644)
}
