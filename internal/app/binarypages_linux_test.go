package app

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// TestReleaseBinaryPages: the test binary's resident file-backed pages
// (its code and read-only data; RssFile of /proc/self/status) fall to less
// than half once released, and the process runs on, its pages mapped back
// as it touches them.
//
// Built with -buildmode=pie, the test binary is relocated when loaded, and
// nothing may be released: releasing its RELRO pages would undo the
// relocations.
func TestReleaseBinaryPages(t *testing.T) {
	fixed, err := fixedAddress("/proc/self/exe")
	if err != nil {
		t.Fatalf("reading the test binary's ELF header: %v", err)
	}
	before := rssFile(t)
	n, err := releaseBinaryPages()
	if err != nil {
		t.Fatalf("releaseBinaryPages: %v", err)
	}
	if !fixed {
		if n != 0 {
			t.Fatalf("released %d bytes of a position-independent executable, want none", n)
		}
		return
	}
	after := rssFile(t)
	t.Logf("released %d bytes of address space; RssFile %d → %d KiB", n, before>>10, after>>10)
	if n == 0 {
		t.Fatal("releaseBinaryPages found no mapping of the executable")
	}
	if traced, _ := isTraced(); !traced && after > before/2 {
		t.Errorf("RssFile after the release is %d KiB, want under half of the %d KiB before", after>>10, before>>10)
	}
}

// rssFile returns the process's resident file-backed memory in bytes.
func rssFile(t *testing.T) uint64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("RssFile:")); ok {
			kib, err := strconv.ParseUint(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
			if err != nil {
				t.Fatalf("reading RssFile %q: %v", v, err)
			}
			return kib << 10
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}
