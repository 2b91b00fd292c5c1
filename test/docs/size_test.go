package docs_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// maxTrackedSize is the largest file git may track, in bytes (1 MiB): the
// repository holds source, and a binary or a run's output is larger.
const maxTrackedSize = 1 << 20

// TestNoTrackedFileIsLarge: every file git tracks (git ls-files) is at most
// maxTrackedSize bytes in the working tree, so that a binary or a run's
// output committed by mistake fails here, named with its size. It skips
// outside a git checkout (a source archive) or without git.
func TestNoTrackedFileIsLarge(t *testing.T) {
	g := NewWithT(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH, so the tracked files cannot be listed")
	}
	if err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		abs, _ := filepath.Abs(root)
		t.Skipf("%s is not a git checkout, so no file is tracked (git rev-parse: %v)", abs, err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	g.Expect(err).NotTo(HaveOccurred(), "git ls-files")
	n := 0
	for _, name := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		path := string(name)
		info, err := os.Lstat(filepath.Join(root, path))
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked, deleted in the working tree and not yet committed
		}
		g.Expect(err).NotTo(HaveOccurred())
		n++
		g.Expect(info.Size()).To(BeNumerically("<=", maxTrackedSize),
			"git tracks %s, %d bytes (%.1f MiB); over %d bytes it is a binary or a run's output, not source",
			path, info.Size(), float64(info.Size())/(1<<20), maxTrackedSize)
	}
	g.Expect(n).To(BeNumerically(">", 100), "the files git tracks")
}
