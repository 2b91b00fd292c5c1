package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Load is the system load average (/proc/loadavg) over 1, 5 and 15 minutes.
type Load [3]float64

func (l Load) String() string { return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2]) }

// loadAvg returns the load average now; zeros when /proc cannot tell.
func loadAvg() Load {
	var l Load
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	for i, f := range strings.Fields(string(data)) {
		if i == 3 {
			break
		}
		l[i], _ = strconv.ParseFloat(f, 64)
	}
	return l
}

// Machine describes where a run ran.
type Machine struct {
	CPUs      int    `json:"cpus"`
	MemoryMiB int64  `json:"memory_mib"`
	CPUModel  string `json:"cpu_model"`
	Kernel    string `json:"kernel"`
	Go        string `json:"go"`
	LoadStart Load   `json:"load_start"`
	LoadEnd   Load   `json:"load_end"`
}

func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), LoadStart: loadAvg()}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kib, _ := strconv.ParseInt(strings.Fields(rest + " 0")[0], 10, 64)
				m.MemoryMiB = kib >> 10
			}
		}
	}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	return m
}

// binaryID returns "path, size MiB, sha256 prefix" of the controller binary
// when the command's first word is a file, else "".
func binaryID(cmdline string) string {
	path := strings.Fields(cmdline)[0]
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s, %.1f MiB, sha256 %x", path, float64(n)/(1<<20), h.Sum(nil)[:6])
}

// revision returns `git describe --always --dirty` of the working directory,
// or "".
func revision() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
