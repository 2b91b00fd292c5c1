package main

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"nudge.dev/nudge/internal/maintenance"
)

// TestZoneDatabaseIsBuiltIn: the binary links Go's zone database
// (time/tzdata), so a maintenance window in a zone parses in an image
// without /usr/share/zoneinfo (make image's has none), and it does here.
// time.LoadLocation reads the system's database first, so only the
// package graph can tell that the binary carries its own.
func TestZoneDatabaseIsBuiltIn(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "nudge.dev/nudge/cmd/nudge").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "go list: %s", out)
	g.Expect(strings.Fields(string(out))).To(ContainElement("time/tzdata"), "cmd/nudge imports time/tzdata")

	w, err := maintenance.Parse("0 2 * * 1-5 2h Europe/Berlin")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.Open(time.Date(2025, 6, 6, 1, 30, 0, 0, time.UTC))).To(BeTrue(), "03:30 CEST on a Friday")
}

// TestMaintenanceWindowIsValidatedAtStart: a malformed --maintenance-window
// stops the controller before it starts, naming the fault.
func TestMaintenanceWindowIsValidatedAtStart(t *testing.T) {
	g := NewWithT(t)
	_, err := run(t, command(), "--maintenance-window", "0 2 * * 1-5 2h Mars/Olympus")
	g.Expect(err).To(MatchError(ContainSubstring(`--maintenance-window: time zone "Mars/Olympus"`)))
}
