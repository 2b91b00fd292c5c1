package resolve

import (
	"context"

	"nudge.dev/nudge/internal/csi"
	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/rollout"
)

// csiOn reports whether nudge watches SecretProviderClassPodStatuses now.
func (r Selector) csiOn() bool { return r.CSI != nil && r.CSI.Load() }

// classNames returns the names of the SecretProviderClasses some pod of
// namespace has mounted, for name patterns (see csi.MountedClasses).
func (r Selector) classNames(ctx context.Context, namespace string) ([]string, error) {
	if !r.csiOn() {
		return nil, nil
	}
	return csi.MountedClasses(ctx, r.Reader, namespace)
}

// resolveClass reads a SecretProviderClass reference from the pod statuses
// of its namespace and records it in in, its digest as csi.Digest gives
// it. With none mounted, it counts for nothing (Unmounted) and leaves the
// references, so the first pod that mounts it makes a baseline, not a
// rollout. SecretProviderClasses are not read themselves: Reloader's
// ignore and match marks on them are not seen, so search mode never
// selects one.
func (r Resolver) resolveClass(ctx context.Context, c candidate, in *rollout.Input) (Outcome, error) {
	if !r.csiOn() {
		return CSIOff, nil
	}
	if c.needsMatch {
		return Unmatched, nil
	}
	digest, mounted, err := csi.Digest(ctx, r.Reader, r.Key, c.Source)
	if err != nil {
		return "", err
	}
	if !mounted {
		return Unmounted, nil
	}
	in.Desired.Entries[c.Source] = fingerprint.Entry{Shape: fingerprint.Shape(c.Reference), Digest: digest}
	return Counted, nil
}
