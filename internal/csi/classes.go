package csi

import (
	"context"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"nudge.dev/nudge/internal/fingerprint"
	"nudge.dev/nudge/internal/refs"
)

// MountedClasses returns, sorted and each once, the names of the
// SecretProviderClasses some pod of namespace has mounted (a mounted
// SecretProviderClassPodStatus names it), read from r as PodStatuses reads
// them; for a reference's name pattern. It returns r's error.
func MountedClasses(ctx context.Context, r client.Reader, namespace string) ([]string, error) {
	statuses, err := PodStatuses(ctx, r, namespace)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range statuses {
		if s.Mounted && s.Class != "" {
			names = append(names, s.Class)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Digest returns the digest of the SecretProviderClass class, by key: over
// the versions of the objects every mounted pod status of the class holds
// (fingerprint.Versions), read from r as PodStatuses reads them. mounted is
// false when no pod of its namespace has it mounted: nothing runs with it,
// so it counts for nothing, and the first pod that mounts it makes a
// baseline, not a rollout. It returns r's error.
func Digest(ctx context.Context, r client.Reader, key fingerprint.Key, class refs.Source) (digest string, mounted bool, err error) {
	statuses, err := PodStatuses(ctx, r, class.Namespace)
	if err != nil {
		return "", false, err
	}
	var pods [][]fingerprint.ObjectVersion
	for _, s := range statuses {
		if s.Mounted && s.Class == class.Name {
			pods = append(pods, s.Objects)
		}
	}
	if len(pods) == 0 {
		return "", false, nil
	}
	return key.Source(refs.Reference{Source: class}, fingerprint.Versions(pods...)), true, nil
}
