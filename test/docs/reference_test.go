package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/pflag"

	"nudge.dev/nudge/internal/options"
)

// reference returns docs/reference.md.
func reference(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "reference.md"))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return string(b)
}

// TestEveryFlagIsDocumented: every flag nudge registers is named in
// docs/reference.md as `--name`.
func TestEveryFlagIsDocumented(t *testing.T) {
	g := NewWithT(t)
	ref := reference(t)
	o := options.Default()
	fs := pflag.NewFlagSet("nudge", pflag.ContinueOnError)
	o.BindFlags(fs)
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		g.Expect(ref).To(ContainSubstring("`--"+f.Name+"`"), "docs/reference.md does not document --%s", f.Name)
	})
	g.Expect(n).To(BeNumerically(">", 30), "the flags nudge registers")
}

// annotationFiles hold every annotation and label key nudge reads or
// writes, as string constants.
var annotationFiles = []string{
	"internal/dialect/annotations.go",
	"internal/workload/keys.go",
	"internal/workload/reloaded.go",
	"internal/fleet/annotations.go",
	"internal/eviction/progress.go",
	"internal/controller/roll.go",
}

// TestEveryAnnotationIsDocumented: every annotation or label key nudge
// reads or writes (a string constant of annotationFiles that looks like
// one, "prefix/name") is named in docs/reference.md.
func TestEveryAnnotationIsDocumented(t *testing.T) {
	g := NewWithT(t)
	ref := reference(t)
	n := 0
	for _, f := range annotationFiles {
		for _, key := range annotationKeys(t, filepath.Join(root, f)) {
			n++
			g.Expect(ref).To(ContainSubstring(key), "docs/reference.md does not document %s (%s)", key, f)
		}
	}
	g.Expect(n).To(BeNumerically(">", 30), "the annotation keys found")
}

// annotationKeys returns the string constants of a Go file that look like
// an annotation key: a DNS prefix, a slash and a name.
func annotationKeys(t *testing.T, path string) []string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var keys []string
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for _, v := range spec.Values {
			lit, ok := v.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			s, err := strconv.Unquote(lit.Value)
			prefix, name, found := strings.Cut(s, "/")
			if err == nil && found && strings.Contains(prefix, ".") && name != "" && !strings.ContainsAny(s, " :") {
				keys = append(keys, s)
			}
		}
		return true
	})
	return keys
}
