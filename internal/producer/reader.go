package producer

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader answers what Gate.Of answers, by reading the producer from the API
// server as it is asked (for `nudge explain`, which has no cache): the
// first of its kind's versions the API serves (Client's RESTMapper). A
// producer whose kind is not served, that does not exist, or that the
// reader may not get is not Known, as a producer the Gate cannot see: it
// never holds a rollout.
type Reader struct {
	Client client.Client
}

// Of returns the Status of secret's producer, read from the API server. It
// returns the API server's error, but for those that make the producer
// unknown (not served, not found, forbidden).
func (r Reader) Of(ctx context.Context, secret metav1.Object) (Status, error) {
	ref, ok := RefOf(secret)
	if !ok {
		return Status{}, nil
	}
	k, _ := kindOf(ref.GroupKind)
	mapping, err := r.Client.RESTMapper().RESTMapping(ref.GroupKind, k.versions...)
	if meta.IsNoMatchError(err) {
		return Status{}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("finding the API of %s: %w", ref, err)
	}
	u := object(mapping.GroupVersionKind)
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		return Status{}, nil
	}
	if err != nil {
		return Status{}, fmt.Errorf("reading %s: %w", ref, err)
	}
	return StatusOf(ref, secret.GetName(), u), nil
}
