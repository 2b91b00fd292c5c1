package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// What nudge's image must be: see docs/releasing.md.
var (
	wantPlatforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}}
	wantLabels    = []string{
		"org.opencontainers.image.title", "org.opencontainers.image.description",
		"org.opencontainers.image.version", "org.opencontainers.image.revision",
		"org.opencontainers.image.source", "org.opencontainers.image.licenses",
		"org.opencontainers.image.created",
	}
	wantPorts = []string{"9090/tcp", "8081/tcp"}
	// shells are the base names of files that would give the image a shell.
	shells = []string{"sh", "bash", "ash", "dash", "zsh", "busybox"}
	// machines are the ELF machine of each architecture's binary.
	machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
)

const (
	user       = "65532:65532"
	binaryPath = "nudge"
	caBundle   = "etc/ssl/certs/ca-certificates.crt"
)

// check returns what is wrong with l as nudge's image, one sentence per
// problem; none when it is right.
func check(l *layout) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if l.index.MediaType != mediaTypeIndex {
		add("index.json's mediaType is %q, not an OCI image index", l.index.MediaType)
	}
	var got []platform
	for _, img := range l.images {
		got = append(got, img.platform)
	}
	if !slices.Equal(got, wantPlatforms) {
		add("the index's platforms are %v, want %v", got, wantPlatforms)
	}
	for _, img := range l.images {
		for _, p := range checkImage(l, img) {
			add("%s: %s", img.platform, p)
		}
	}
	return problems
}

// checkImage returns what is wrong with one platform's image.
func checkImage(l *layout, img image) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	c := img.config
	if c.OS != img.platform.OS || c.Architecture != img.platform.Architecture {
		add("the config is for %s/%s", c.OS, c.Architecture)
	}
	if c.Config.User != user {
		add("runs as user %q, want %q", c.Config.User, user)
	}
	if !slices.Equal(c.Config.Entrypoint, []string{"/" + binaryPath}) || len(c.Config.Cmd) != 0 {
		add("entrypoint %q and cmd %q, want [/nudge] alone", c.Config.Entrypoint, c.Config.Cmd)
	}
	for _, k := range wantLabels {
		if c.Config.Labels[k] == "" {
			add("no label %s", k)
		}
	}
	if created := c.Config.Labels["org.opencontainers.image.created"]; created != "" {
		if _, err := time.Parse(time.RFC3339, created); err != nil {
			add("label org.opencontainers.image.created %q is not RFC 3339", created)
		}
	}
	for _, port := range wantPorts {
		if _, ok := c.Config.ExposedPorts[port]; !ok {
			add("port %s not exposed", port)
		}
	}
	files, err := l.files(img)
	if err != nil {
		return append(problems, fmt.Sprintf("reading its layers: %v", err))
	}
	for name := range files {
		if slices.Contains(shells, path.Base(name)) {
			add("holds a shell, /%s", name)
		}
	}
	if e, ok := files[caBundle]; !ok || !bytes.Contains(e.body, []byte("-----BEGIN CERTIFICATE-----")) {
		add("no CA certificates at /%s", caBundle)
	}
	if e, ok := files["etc/passwd"]; !ok || !bytes.Contains(e.body, []byte("\nnonroot:x:65532:65532:")) {
		add("no nonroot user 65532 in /etc/passwd")
	}
	if e, ok := files["tmp"]; !ok || e.header.Typeflag != tar.TypeDir || e.header.Mode&0o7777 != 0o1777 {
		add("no /tmp directory with mode 1777")
	}
	e, ok := files[binaryPath]
	if !ok || e.header.Typeflag != tar.TypeReg || e.header.Mode&0o111 == 0 {
		return append(problems, "no executable /nudge")
	}
	if p := checkELF(e.body, img.platform.Architecture); p != "" {
		add("/nudge %s", p)
	}
	return problems
}

// checkELF returns what is wrong with b as a static Linux binary of arch,
// "" when nothing is.
func checkELF(b []byte, arch string) string {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Sprintf("is not an ELF binary: %v", err)
	}
	if f.Machine != machines[arch] {
		return fmt.Sprintf("is for %v, want %v", f.Machine, machines[arch])
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return "is dynamically linked"
		}
	}
	return ""
}

// testImage is one platform's image for the checks' tests.
type testImage struct {
	platform platform
	config   config
	files    []entry
}

// goodImages returns images check passes: what make image writes, with an
// ELF header for a binary.
func goodImages() []*testImage {
	var imgs []*testImage
	for _, p := range wantPlatforms {
		img := &testImage{platform: p}
		img.config.OS, img.config.Architecture = p.OS, p.Architecture
		img.config.Config.User = user
		img.config.Config.Entrypoint = []string{"/nudge"}
		img.config.Config.ExposedPorts = map[string]struct{}{"9090/tcp": {}, "8081/tcp": {}}
		img.config.Config.Labels = map[string]string{}
		for _, k := range wantLabels {
			img.config.Config.Labels[k] = "x"
		}
		img.config.Config.Labels["org.opencontainers.image.created"] = "2026-01-02T03:04:05Z"
		img.files = []entry{
			dir("etc/", 0o755), dir("etc/ssl/", 0o755), dir("etc/ssl/certs/", 0o755),
			file("etc/passwd", 0o644, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"),
			file(caBundle, 0o644, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
			dir("tmp/", 0o1777),
			file("nudge", 0o755, string(elfHeader(machines[p.Architecture]))),
		}
		imgs = append(imgs, img)
	}
	return imgs
}

func dir(name string, mode int64) entry {
	return entry{header: &tar.Header{Name: name, Mode: mode, Typeflag: tar.TypeDir, Format: tar.FormatPAX}}
}

func file(name string, mode int64, body string) entry {
	return entry{header: &tar.Header{Name: name, Mode: mode, Typeflag: tar.TypeReg, Format: tar.FormatPAX}, body: []byte(body)}
}

// elfHeader returns a 64-bit little-endian ELF executable header for
// machine, with no sections or program headers: enough for debug/elf.
func elfHeader(machine elf.Machine) []byte {
	h := elf.Header64{
		Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: uint32(elf.EV_CURRENT),
		Ehsize: 64, Phentsize: 56, Shentsize: 64,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	var buf bytes.Buffer
	_ = binary.Write(&buf, binary.LittleEndian, h)
	return buf.Bytes()
}

// without returns files but the one named name.
func without(files []entry, name string) []entry {
	return slices.DeleteFunc(slices.Clone(files), func(e entry) bool { return e.header.Name == name })
}

// The checks fail a wrong image, each naming what is wrong, and pass a
// right one: they are what stands between make image and a broken release.
func TestCheckFailsAWrongImage(t *testing.T) {
	tests := map[string]struct {
		change func(imgs []*testImage) []*testImage
		want   []string // substrings of the problems, one each
	}{
		"an image as make image writes it passes": {
			change: func(imgs []*testImage) []*testImage { return imgs },
		},
		"an image run as root fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[0].config.Config.User = "0"
				imgs[1].config.Config.User = ""
				return imgs
			},
			want: []string{`linux/amd64: runs as user "0"`, `linux/arm64: runs as user ""`},
		},
		"an image without its revision label fails": {
			change: func(imgs []*testImage) []*testImage {
				delete(imgs[1].config.Config.Labels, "org.opencontainers.image.revision")
				return imgs
			},
			want: []string{"linux/arm64: no label org.opencontainers.image.revision"},
		},
		"an image of one platform fails": {
			change: func(imgs []*testImage) []*testImage { return imgs[:1] },
			want:   []string{"the index's platforms are [linux/amd64]"},
		},
		"an image with a shell fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[0].files = append(imgs[0].files, dir("bin/", 0o755), file("bin/sh", 0o755, "#!"))
				return imgs
			},
			want: []string{"linux/amd64: holds a shell, /bin/sh"},
		},
		"an image whose entrypoint is a shell fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[1].config.Config.Entrypoint = []string{"/bin/sh", "-c"}
				imgs[1].config.Config.Cmd = []string{"/nudge"}
				return imgs
			},
			want: []string{"linux/arm64: entrypoint"},
		},
		"an image without CA certificates fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[0].files = without(imgs[0].files, caBundle)
				return imgs
			},
			want: []string{"linux/amd64: no CA certificates"},
		},
		"an image without the nonroot user or /tmp fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[0].files = without(without(imgs[0].files, "etc/passwd"), "tmp/")
				return imgs
			},
			want: []string{"linux/amd64: no nonroot user", "linux/amd64: no /tmp directory"},
		},
		"an arm64 image holding an amd64 binary fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[1].files = append(without(imgs[1].files, "nudge"), file("nudge", 0o755, string(elfHeader(elf.EM_X86_64))))
				return imgs
			},
			want: []string{"linux/arm64: /nudge is for EM_X86_64, want EM_AARCH64"},
		},
		"an image whose binary is not executable fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[0].files = append(without(imgs[0].files, "nudge"), file("nudge", 0o644, string(elfHeader(elf.EM_X86_64))))
				return imgs
			},
			want: []string{"linux/amd64: no executable /nudge"},
		},
		"a config whose platform is not the index's fails": {
			change: func(imgs []*testImage) []*testImage {
				imgs[1].config.Architecture = "amd64"
				return imgs
			},
			want: []string{"linux/arm64: the config is for linux/amd64"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			w, err := newLayoutWriter(dir)
			g.Expect(err).NotTo(HaveOccurred())
			for _, img := range tt.change(goodImages()) {
				g.Expect(w.image(img.platform, img.config, img.files)).To(Succeed())
			}
			g.Expect(w.close()).To(Succeed())
			l, err := readLayout(dir)
			g.Expect(err).NotTo(HaveOccurred())
			problems := check(l)
			g.Expect(problems).To(HaveLen(len(tt.want)), "problems: %s", strings.Join(problems, "; "))
			for _, want := range tt.want {
				g.Expect(problems).To(ContainElement(ContainSubstring(want)))
			}
		})
	}
}

// A blob that does not match its digest fails the reading.
func TestReadLayoutFailsAChangedBlob(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	w, err := newLayoutWriter(dir)
	g.Expect(err).NotTo(HaveOccurred())
	img := goodImages()[0]
	g.Expect(w.image(img.platform, img.config, img.files)).To(Succeed())
	g.Expect(w.close()).To(Succeed())
	m := w.index.Manifests[0]
	path := dir + "/blobs/sha256/" + strings.TrimPrefix(m.Digest, "sha256:")
	g.Expect(os.WriteFile(path, []byte(`{"schemaVersion":2}`), 0o644)).To(Succeed())
	_, err = readLayout(dir)
	g.Expect(err).To(MatchError(ContainSubstring("does not match its digest")))
}
