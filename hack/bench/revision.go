package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

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
