package app

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// span is a range of the address space, [start, end), in bytes.
type span struct{ start, end uintptr }

// readOnlyMappings returns the mappings of the file exe that the process
// cannot write (the executable's code and read-only data), from maps in the
// format of /proc/PID/maps (proc_pid_maps(5): "start-end perms offset
// dev inode path", addresses in hex). exe is compared with the path as maps
// writes it, " (deleted)" suffix included, as readlink of /proc/self/exe
// gives it. Lines it cannot read are skipped.
func readOnlyMappings(maps []byte, exe string) []span {
	var spans []span
	sc := bufio.NewScanner(bytes.NewReader(maps))
	for sc.Scan() {
		// Five fields, then the path, which may hold spaces.
		fields := strings.SplitN(sc.Text(), " ", 6)
		if len(fields) < 6 || strings.TrimSpace(fields[5]) != exe || strings.Contains(fields[1], "w") {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		spans = append(spans, span{start: uintptr(start), end: uintptr(end)})
	}
	return spans
}
