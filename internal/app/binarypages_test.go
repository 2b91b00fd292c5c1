package app

import (
	"slices"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	const exe = "/usr/local/bin/nudge"
	for _, c := range []struct {
		name string
		maps string
		exe  string
		want []span
	}{
		{"a static Go binary's code and read-only data, not its writable data", `00400000-01400000 r-xp 00000000 fe:00 10438948                           /usr/local/bin/nudge
01400000-0239b000 r--p 01000000 fe:00 10438948                           /usr/local/bin/nudge
0239b000-02431000 rw-p 01f9b000 fe:00 10438948                           /usr/local/bin/nudge
02431000-0447c000 rw-p 00000000 00:00 0
3a06b9000000-3a06b9c00000 rw-p 00000000 00:00 0
7ffd08bc7000-7ffd08be8000 rw-p 00000000 00:00 0                          [stack]
7f6e9ef44000-7f6e9ef46000 r-xp 00000000 00:00 0                          [vdso]
`, exe, []span{{0x400000, 0x1400000}, {0x1400000, 0x239b000}}},
		{"a shared library's mappings are left alone", `55d0c0000000-55d0c1000000 r-xp 00000000 fe:00 12 /usr/local/bin/nudge
7f0000000000-7f0000100000 r-xp 00000000 fe:00 34 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000100000-7f0000200000 r--p 00100000 fe:00 34 /usr/lib/x86_64-linux-gnu/libc.so.6
`, exe, []span{{0x55d0c0000000, 0x55d0c1000000}}},
		{"a path with spaces, of a binary replaced on disk", `00400000-01400000 r-xp 00000000 fe:00 7                                  /tmp/my dir/nudge (deleted)
01400000-02400000 r-xp 00000000 fe:00 8                                  /tmp/my dir/nudge
`, "/tmp/my dir/nudge (deleted)", []span{{0x400000, 0x1400000}}},
		{"lines it cannot read are skipped", `garbage
zz-01400000 r-xp 00000000 fe:00 7 /usr/local/bin/nudge
01400000-00400000 r-xp 00000000 fe:00 7 /usr/local/bin/nudge
01400000-02400000 r-xp 00000000 fe:00 7 /usr/local/bin/nudge
`, exe, []span{{0x1400000, 0x2400000}}},
		{"nothing of another file", "00400000-01400000 r-xp 00000000 fe:00 7 /usr/local/bin/other\n", exe, nil},
	} {
		if got := readOnlyMappings([]byte(c.maps), c.exe); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %#x, want %#x", c.name, got, c.want)
		}
	}
}
