// Package docs_test holds the repository's documents to the code: the tests
// docs/design.md names exist, every flag, annotation and rollout.Action is
// documented, and nothing points outside the repository. It keeps the
// repository light too: no file git tracks is over 1 MiB, and docs/*.md stay
// under 5,000 lines.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const root = "../.."

// TestDesignNamesTestsThatExist: every test or fuzz target docs/design.md
// names as pinning a rule is a function of some _test.go file, so renaming a
// test without updating the design fails here.
func TestDesignNamesTestsThatExist(t *testing.T) {
	g := NewWithT(t)
	design, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	g.Expect(err).NotTo(HaveOccurred())
	named := regexp.MustCompile("`((?:Test|Fuzz)[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(design), -1)
	g.Expect(len(named)).To(BeNumerically(">", 30), "the tests docs/design.md names")

	defined := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz)[A-Za-z0-9_]+)\(`)
	g.Expect(walk(func(path string, text string) {
		if strings.HasSuffix(path, "_test.go") {
			for _, m := range decl.FindAllStringSubmatch(text, -1) {
				defined[m[1]] = true
			}
		}
	})).To(Succeed())
	for _, m := range named {
		g.Expect(defined).To(HaveKey(m[1]), "docs/design.md names %s, which no _test.go defines", m[1])
	}
}

// TestNothingPointsOutsideTheRepository: no file refers to documents kept
// beside the repository instead of in it.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	g := NewWithT(t)
	outside := "../" + "shared"
	g.Expect(walk(func(path string, text string) {
		g.Expect(text).NotTo(ContainSubstring(outside), "%s points outside the repository", path)
	})).To(Succeed())
}

// walk calls f with every text file of the repository but .git and bin.
func walk(f func(path, text string)) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "bin" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".tpl", ".txt", ".sh", ".json":
		default:
			if d.Name() != "Makefile" && d.Name() != "Dockerfile" {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f(path, string(b))
		return nil
	})
}
