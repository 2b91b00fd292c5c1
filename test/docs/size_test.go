package docs_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
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

// maxDocsLines bounds the lines of docs/*.md together, strictly: documents
// that say what is, each fact once in one place, stay readable and kept up
// to date; past this they repeat each other, keep history and run logs, and
// drift from the code (issue 42). Cut repetition before raising it.
const maxDocsLines = 5000

// maxDocFileLines bounds the lines of any one file of docs/*.md. The
// largest, design.md, holds every rule with the tests that pin it in about
// 1,380 lines; 1,400 lets it stay whole while no other file grows into a
// second design.md.
const maxDocFileLines = 1400

// TestDocsAreShort: the files of docs/*.md hold fewer than maxDocsLines
// lines together and at most maxDocFileLines each, counted as wc -l counts
// them (a last line without its newline counts too); a failure gives the
// total and each file's count.
func TestDocsAreShort(t *testing.T) {
	g := NewWithT(t)
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(paths).NotTo(BeEmpty(), "the files of docs/*.md")
	sort.Strings(paths)
	counts := map[string]int{}
	var total int
	var table strings.Builder
	for _, path := range paths {
		b, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		n := lineCount(b)
		name := filepath.ToSlash(filepath.Join("docs", filepath.Base(path)))
		counts[name] = n
		total += n
		fmt.Fprintf(&table, "%6d %s\n", n, name)
	}
	fmt.Fprintf(&table, "%6d total", total)
	g.Expect(total).To(BeNumerically("<", maxDocsLines),
		"docs/*.md hold %d lines, not under %d: cut repetition, history and wordiness\n%s", total, maxDocsLines, table.String())
	for name, n := range counts {
		g.Expect(n).To(BeNumerically("<=", maxDocFileLines),
			"%s holds %d lines, over %d: split it or cut it\n%s", name, n, maxDocFileLines, table.String())
	}
}

// lineCount is the number of lines of b as wc -l counts them, plus a last
// line that has no newline.
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}
