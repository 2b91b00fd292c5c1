package docs_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// roomSizes are the most lines the non-test Go files of a package may hold
// together. The reconciler stays observe → decide → act → record and the
// application its wiring: a capability that grows either gets a package of
// its own, named for what it holds, or a rule in an existing pure package.
var roomSizes = map[string]int{
	"internal/controller": 1500,
	"internal/app":        1000,
}

// TestRoomsKeepTheirSizes: each package of roomSizes is within its size,
// counted as wc -l counts lines, failing with each file's count.
func TestRoomsKeepTheirSizes(t *testing.T) {
	for dir, most := range roomSizes {
		t.Run(dir, func(t *testing.T) {
			g := NewWithT(t)
			files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
			g.Expect(err).NotTo(HaveOccurred())
			total, counts := 0, []string{}
			for _, f := range files {
				if strings.HasSuffix(f, "_test.go") {
					continue
				}
				b, err := os.ReadFile(f)
				g.Expect(err).NotTo(HaveOccurred())
				n := bytes.Count(b, []byte("\n"))
				total += n
				counts = append(counts, filepath.Base(f)+": "+strconv.Itoa(n))
			}
			g.Expect(total).To(BeNumerically(">", 0), "the Go files of %s", dir)
			g.Expect(total).To(BeNumerically("<=", most),
				"%s holds %d lines of Go, over its %d; move a capability to a package of its own. Its files: %s",
				dir, total, most, strings.Join(counts, ", "))
		})
	}
}
