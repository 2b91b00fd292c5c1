package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// memCgroup is a memory cgroup the benchmark made for one controller
// process, as a container's: cgroup v2, or v1's memory controller. Its
// working set is the kubelet's (cAdvisor's): usage minus inactive file
// pages, the figure a container's memory limit and eviction compare with.
type memCgroup struct {
	dir string
	v2  bool // memory.current and inactive_file, else v1's memory.usage_in_bytes and total_inactive_file
}

// newMemCgroup makes a child of parent named name, parent being a directory
// of the memory cgroup hierarchy (v2, or v1's memory controller) the
// benchmark may write.
func newMemCgroup(parent, name string) (*memCgroup, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making the controller's cgroup: %w", err)
	}
	_, err := os.Stat(filepath.Join(dir, "memory.current"))
	return &memCgroup{dir: dir, v2: err == nil}, nil
}

// enter returns the sh script that moves the shell into the cgroup and
// then execs cmdline: the process is charged for every page it touches from
// its first.
func (g *memCgroup) enter(cmdline string) string {
	return "echo $$ >" + shellQuote(filepath.Join(g.dir, "cgroup.procs")) + " && exec " + cmdline
}

// CgroupMemory is what the controller's memory cgroup says at one moment, in
// bytes.
type CgroupMemory struct {
	Usage        int64 // memory.current (v2), memory.usage_in_bytes (v1): anonymous, page cache and kernel memory charged
	InactiveFile int64 // inactive_file (v2), total_inactive_file (v1)
	ActiveFile   int64 // active_file (v2), total_active_file (v1): file pages counted in the working set
}

// WorkingSet is usage minus inactive file pages, as the kubelet computes
// it; never below 0.
func (m CgroupMemory) WorkingSet() int64 { return max(m.Usage-m.InactiveFile, 0) }

// read reads the cgroup's usage and memory.stat.
func (g *memCgroup) read() (CgroupMemory, error) {
	var m CgroupMemory
	usageFile, inactive, active := "memory.usage_in_bytes", "total_inactive_file", "total_active_file"
	if g.v2 {
		usageFile, inactive, active = "memory.current", "inactive_file", "active_file"
	}
	usage, err := os.ReadFile(filepath.Join(g.dir, usageFile))
	if err != nil {
		return m, err
	}
	if m.Usage, err = strconv.ParseInt(strings.TrimSpace(string(usage)), 10, 64); err != nil {
		return m, fmt.Errorf("%s: %w", usageFile, err)
	}
	stat, err := os.ReadFile(filepath.Join(g.dir, "memory.stat"))
	if err != nil {
		return m, err
	}
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		key, value, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.ParseInt(value, 10, 64)
		switch key {
		case inactive:
			m.InactiveFile = n
		case active:
			m.ActiveFile = n
		}
	}
	return m, nil
}

// removeIfAny removes g, when not nil (see remove).
func (g *memCgroup) removeIfAny() error {
	if g == nil {
		return nil
	}
	return g.remove()
}

// remove removes the cgroup once its processes have exited (v1 moves what
// is still charged to it to its parent).
func (g *memCgroup) remove() error {
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the controller's cgroup: %w", err)
	}
	return nil
}

// dropPageCache drops the file at path from the page cache
// (POSIX_FADV_DONTNEED): a process that maps it then reads it from disk and
// its cgroup is charged for the pages, as a container started from an image
// is, and not the cgroup that built or ran the file before. Dirty pages are
// written first.
func dropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("dropping %s from the page cache: %w", path, err)
	}
	return nil
}
