package fingerprint

import (
	"context"
	"crypto/rand"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// keyField is the data key of the fingerprint key in its Secret.
const keyField = "key"

// loadAttempts bounds LoadKey's reads: each lost race (another replica
// created or filled the Secret first) costs one more, and the next read
// finds the winner's key.
const loadAttempts = 5

// LoadKey returns the fingerprint key stored in the Secret namespace/name.
// When the Secret holds no key yet, it writes one of KeySize random bytes:
// it fills a Secret that exists without one (the chart creates it empty, so
// that nudge needs no right to create Secrets, only to get and update this
// one by name), and creates the Secret when there is none (the bare binary,
// with its user's rights). Two replicas starting at once agree: the loser of
// the create or of the update (a conflict on resourceVersion) reads the
// winner's key. It returns an error when the Secret holds an invalid key,
// rather than replacing it (which would re-baseline every workload), and the
// API server's error otherwise.
func LoadKey(ctx context.Context, c client.Client, namespace, name string) (Key, error) {
	var s corev1.Secret
	var err error
	for range loadAttempts {
		s = corev1.Secret{}
		err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
		switch {
		case apierrors.IsNotFound(err):
			s = corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
					"app.kubernetes.io/name": "nudge", "app.kubernetes.io/component": "fingerprint-key",
				}},
				Type: corev1.SecretTypeOpaque,
			}
			if s.Data, err = newKeyData(); err == nil {
				err = c.Create(ctx, &s)
			}
			if apierrors.IsAlreadyExists(err) {
				continue
			}
		case err == nil && len(s.Data[keyField]) == 0:
			var data map[string][]byte
			if data, err = newKeyData(); err == nil {
				if s.Data == nil {
					s.Data = map[string][]byte{}
				}
				s.Data[keyField] = data[keyField]
				err = c.Update(ctx, &s) // s's resourceVersion: a conflict when another filled it first
			}
			if apierrors.IsConflict(err) {
				continue
			}
		}
		break
	}
	if err != nil {
		return Key{}, fmt.Errorf("loading fingerprint key from Secret %s/%s: %w", namespace, name, err)
	}
	k, err := NewKey(s.Data[keyField])
	if err != nil {
		return Key{}, fmt.Errorf("the key Secret %s/%s, field %q: %w", namespace, name, keyField, err)
	}
	return k, nil
}

// newKeyData returns a key Secret's data: KeySize random bytes under
// keyField.
func newKeyData() (map[string][]byte, error) {
	secret := make([]byte, KeySize)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("generating fingerprint key: %w", err)
	}
	return map[string][]byte{keyField: secret}, nil
}

// ReadKey returns the fingerprint key stored in the Secret namespace/name,
// without creating it: nudge explain's read, with the user's permissions. It
// returns the API error (apierrors.IsNotFound, IsForbidden) when the Secret
// cannot be read, and an error when it holds no valid key.
func ReadKey(ctx context.Context, c client.Reader, namespace, name string) (Key, error) {
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s); err != nil {
		return Key{}, fmt.Errorf("reading fingerprint key from Secret %s/%s: %w", namespace, name, err)
	}
	k, err := NewKey(s.Data[keyField])
	if err != nil {
		return Key{}, fmt.Errorf("the key Secret %s/%s, field %q: %w", namespace, name, keyField, err)
	}
	return k, nil
}
