package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestOwnBinary(t *testing.T) {
	tests := map[string]struct {
		binary   string // the binary's file name in a directory of the test's, "" for a command on $PATH
		args     string
		wantCopy bool
	}{
		"a path: the shard runs a copy of its own, with the same arguments": {
			binary: "nudge", args: " --kubeconfig /k --shard=0/8", wantCopy: true,
		},
		"a command on $PATH runs as it is": {args: " --shard=0/8"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			cmdline := "nudge" + tt.args
			bin := filepath.Join(dir, tt.binary)
			if tt.binary != "" {
				g.Expect(os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
				cmdline = bin + tt.args
			}
			own := filepath.Join(dir, "shard-0")
			got, copied, err := ownBinary(cmdline, own)
			g.Expect(err).NotTo(HaveOccurred())
			if !tt.wantCopy {
				g.Expect(got).To(Equal(cmdline))
				g.Expect(copied).To(BeEmpty())
				return
			}
			g.Expect(copied).To(Equal(filepath.Join(own, tt.binary)))
			g.Expect(got).To(Equal(copied + tt.args))
			data, err := os.ReadFile(copied)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(data)).To(Equal("#!/bin/sh\n"))
			fi, err := os.Stat(copied)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o755)))
		})
	}
}
