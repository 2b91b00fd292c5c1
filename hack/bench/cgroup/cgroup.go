// Package cgroup makes a memory cgroup for one process the bench starts,
// as a container's, and reads its working set as the kubelet computes it
// (usage minus inactive file pages).
package cgroup

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

// Group is a memory cgroup the benchmark made for one controller
// process, as a container's: cgroup v2, or v1's memory controller. Its
// working set is the kubelet's (cAdvisor's): usage minus inactive file
// pages, the figure a container's memory limit and eviction compare with.
type Group struct {
	dir string
	v2  bool // memory.current and inactive_file, else v1's memory.usage_in_bytes and total_inactive_file
}

// New makes a child of parent named name, parent being a directory
// of the memory cgroup hierarchy (v2, or v1's memory controller) the
// benchmark may write.
func New(parent, name string) (*Group, error) {
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("making the controller's cgroup: %w", err)
	}
	_, err := os.Stat(filepath.Join(dir, "memory.current"))
	return &Group{dir: dir, v2: err == nil}, nil
}

// Procs returns the path of the cgroup's cgroup.procs: a process that
// writes its PID there enters the cgroup.
func (g *Group) Procs() string { return filepath.Join(g.dir, "cgroup.procs") }

// Memory is what the controller's memory cgroup says at one moment, in
// bytes.
type Memory struct {
	Usage        int64 // memory.current (v2), memory.usage_in_bytes (v1): anonymous, page cache and kernel memory charged
	InactiveFile int64 // inactive_file (v2), total_inactive_file (v1)
	ActiveFile   int64 // active_file (v2), total_active_file (v1): file pages counted in the working set
}

// WorkingSet is usage minus inactive file pages, as the kubelet computes
// it; never below 0.
func (m Memory) WorkingSet() int64 { return max(m.Usage-m.InactiveFile, 0) }

// Read reads the cgroup's usage and memory.stat.
func (g *Group) Read() (Memory, error) {
	var m Memory
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

// RemoveIfAny removes g, when not nil (see Remove).
func (g *Group) RemoveIfAny() error {
	if g == nil {
		return nil
	}
	return g.Remove()
}

// Remove removes the cgroup once its processes have exited (v1 moves what
// is still charged to it to its parent).
func (g *Group) Remove() error {
	if err := os.Remove(g.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the controller's cgroup: %w", err)
	}
	return nil
}

// DropPageCache drops the file at path from the page cache
// (POSIX_FADV_DONTNEED): a process that maps it then reads it from disk and
// its cgroup is charged for the pages, as a container started from an image
// is, and not the cgroup that built or ran the file before. Dirty pages are
// written first.
func DropPageCache(path string) error {
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
