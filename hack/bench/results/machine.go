package results

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Load is the system load average (/proc/loadavg) over 1, 5 and 15 minutes.
type Load [3]float64

// String is the three averages to two decimals.
func (l Load) String() string { return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2]) }

// LoadAvg returns the load average now; zeros when /proc cannot tell.
func LoadAvg() Load {
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

// ThisMachine describes the machine the benchmark runs on, with its load
// now as LoadStart; what /proc cannot tell is left empty.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), LoadStart: LoadAvg()}
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
