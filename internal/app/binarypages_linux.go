package app

import (
	"bytes"
	"debug/elf"
	"os"
	"syscall"
)

// releaseBinaryPages unmaps from the process the pages of its executable's
// code and read-only data (madvise MADV_DONTNEED on each such mapping) and
// returns the bytes of address space it covered. The kernel maps the
// executable's pages as they are first touched, and a Go program's start
// touches most of them: every package's init, the type descriptors each API
// type registration reads. Once nudge is synced it runs a small part of
// that code again, so about 20 of its 26 MiB of mapped binary were resident
// and unused (docs/performance.md). The pages stay in the kernel's page
// cache (clean, reclaimable): a page touched again is mapped back by a
// minor fault, without reading the disk. The writable data is left alone.
//
// It does nothing when a debugger traces the process (a breakpoint is a
// private copy of a code page, which MADV_DONTNEED would discard), nor for
// a position-independent executable (-buildmode=pie): its loader writes
// relocations into pages it then makes read-only (RELRO), and discarding
// those would map back the file's unrelocated bytes. Errors are those of
// reading /proc/self and the executable's ELF header, and of madvise(2).
func releaseBinaryPages() (uint64, error) {
	if traced, err := isTraced(); err != nil || traced {
		return 0, err
	}
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	if fixed, err := fixedAddress("/proc/self/exe"); err != nil || !fixed {
		return 0, err
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	var released uint64
	for _, s := range readOnlyMappings(maps, exe) {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.start, s.end-s.start, syscall.MADV_DONTNEED); errno != 0 {
			return released, errno
		}
		released += uint64(s.end - s.start)
	}
	return released, nil
}

// isTraced reports whether a tracer (a debugger) is attached to the
// process: TracerPid in /proc/self/status (proc_pid_status(5)) is not 0.
func isTraced() (bool, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, err
	}
	for line := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(line, []byte("TracerPid:")); ok {
			return string(bytes.TrimSpace(v)) != "0", nil
		}
	}
	return false, nil
}

// fixedAddress reports whether the ELF file at path is an executable linked
// at a fixed address (type ET_EXEC, Go's default on Linux), whose read-only
// pages hold the file's bytes as they are; a position-independent one
// (ET_DYN) is relocated when loaded.
func fixedAddress(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer func() { _ = f.Close() }()
	return f.Type == elf.ET_EXEC, nil
}
