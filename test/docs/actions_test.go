package docs_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/rollout"
)

// TestEveryActionIsDocumented: every constant of type rollout.Action has a
// row in docs/design.md's table "What each action writes" ("| `Name` |")
// and is named in internal/rollout's package doc, so that an action added
// without saying what it writes fails here.
func TestEveryActionIsDocumented(t *testing.T) {
	g := NewWithT(t)
	names := actions(t)
	// The constants parsed are those Action.String names, in order, and
	// no more: a parse that missed some would check too little.
	for i, name := range names {
		g.Expect(rollout.Action(i).String()).To(Equal(name), "constant %d of rollout.Action", i)
	}
	g.Expect(rollout.Action(len(names)).String()).To(Equal(fmt.Sprintf("Action(%d)", len(names))), "rollout.Action has constants the parse missed")
	g.Expect(len(names)).To(BeNumerically(">=", 11), "the rollout.Action constants")

	design, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	g.Expect(err).NotTo(HaveOccurred())
	table := regexp.MustCompile("(?s)### What each action writes\n(.*?)\n#").FindSubmatch(design)
	g.Expect(table).NotTo(BeNil(), "docs/design.md has no section \"What each action writes\"")
	doc := packageDoc(t)
	for _, name := range names {
		g.Expect(regexp.MustCompile("(?m)^\\| `"+name+"` \\|").Match(table[1])).To(BeTrue(),
			"docs/design.md's table \"What each action writes\" has no row for rollout.%s", name)
		g.Expect(regexp.MustCompile(`\b`+name+`\b`).MatchString(doc)).To(BeTrue(),
			"internal/rollout's package doc (doc.go) does not name rollout.%s", name)
	}
}

// actions returns, in order, the names of the constants of type Action
// declared in internal/rollout (a const block whose first spec is typed
// Action, its later specs repeating it implicitly).
func actions(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, file := range rolloutFiles(t, parser.SkipObjectResolution) {
		for _, decl := range file.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST || len(gen.Specs) == 0 {
				continue
			}
			first, ok := gen.Specs[0].(*ast.ValueSpec)
			if typ, isIdent := first.Type.(*ast.Ident); !ok || !isIdent || typ.Name != "Action" {
				continue
			}
			for _, spec := range gen.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

// packageDoc returns internal/rollout's package comment.
func packageDoc(t *testing.T) string {
	t.Helper()
	var doc string
	for _, file := range rolloutFiles(t, parser.ParseComments|parser.PackageClauseOnly) {
		if file.Doc != nil {
			doc += file.Doc.Text()
		}
	}
	return doc
}

// rolloutFiles parses, with mode, the Go files of internal/rollout but its
// tests.
func rolloutFiles(t *testing.T, mode parser.Mode) []*ast.File {
	t.Helper()
	g := NewWithT(t)
	paths, err := filepath.Glob(filepath.Join(root, "internal", "rollout", "*.go"))
	g.Expect(err).NotTo(HaveOccurred())
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, mode)
		g.Expect(err).NotTo(HaveOccurred())
		files = append(files, file)
	}
	g.Expect(files).NotTo(BeEmpty(), "the Go files of internal/rollout")
	return files
}
