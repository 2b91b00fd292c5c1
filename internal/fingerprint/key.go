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

// LoadKey returns the fingerprint key stored in the Secret namespace/name,
// creating the Secret with KeySize random bytes when it does not exist. Two
// replicas starting at once agree: the loser of the create reads the
// winner's key. It returns an error when the Secret exists without a valid
// key, rather than replacing it (which would re-baseline every workload).
func LoadKey(ctx context.Context, c client.Client, namespace, name string) (Key, error) {
	var s corev1.Secret
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
	if apierrors.IsNotFound(err) {
		secret := make([]byte, KeySize)
		if _, err := rand.Read(secret); err != nil {
			return Key{}, fmt.Errorf("generating fingerprint key: %w", err)
		}
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{
				"app.kubernetes.io/name": "nudge", "app.kubernetes.io/component": "fingerprint-key",
			}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{keyField: secret},
		}
		err = c.Create(ctx, &s)
		if apierrors.IsAlreadyExists(err) {
			err = c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &s)
		}
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
