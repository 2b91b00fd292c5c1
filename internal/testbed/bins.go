package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KubeVersion is the Kubernetes version of the binaries the testbed runs by
// default, built by `make kube-bins`.
const KubeVersion = "v1.36.3"

// BinDirEnv names the environment variable that holds the directory of the
// control-plane binaries. The Makefile exports it; the testbed is the only
// package that reads it.
const BinDirEnv = "NUDGE_KUBE_BINS"

// ErrMissingBinary is returned (wrapped) by Start when a binary the mode
// needs is not in the binary directory.
var ErrMissingBinary = errors.New("control-plane binary missing")

// resolveBinDir returns dir, else $NUDGE_KUBE_BINS, else the directory
// `make kube-bins` builds into by default.
func resolveBinDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	if env, ok := os.LookupEnv(BinDirEnv); ok && env != "" {
		return env, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the binary directory (set %s): %w", BinDirEnv, err)
	}
	return filepath.Join(cache, "nudge", "kube-bins", KubeVersion), nil
}

// binaries returns the names of the binaries mode runs.
func binaries(mode Mode) []string {
	names := []string{"etcd", "kube-apiserver"}
	if mode == Cluster {
		names = append(names, "kube-controller-manager", "kube-scheduler", "kwok")
	}
	return names
}

// checkBinaries returns an error wrapping ErrMissingBinary, naming every
// missing binary and `make kube-bins`, unless dir holds every binary mode
// needs as an executable file.
func checkBinaries(dir string, mode Mode) error {
	var missing []string
	for _, name := range binaries(mode) {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %v not in %s: run `make kube-bins` (or set %s)", ErrMissingBinary, missing, dir, BinDirEnv)
	}
	return nil
}
