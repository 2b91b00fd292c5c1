package admission

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespace creates a namespace of its own for a test.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := plane.GenerateNamespace(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// grant gives user the rules in namespace ns, through a Role and a
// RoleBinding of their own.
func grant(t *testing.T, ns, user string, rules ...rbacv1.PolicyRule) {
	t.Helper()
	name := "grant-" + rand.String(5)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := admin.Create(t.Context(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, name, err)
		}
	}
}

// eventually asserts on f's error within 10 s: the API server's RBAC
// authorizer sees a new grant a moment after it is created, so a request
// made at once may be refused by RBAC before the policy is reached.
func eventually(t *testing.T, f func() error) AsyncAssertion {
	t.Helper()
	return NewWithT(t).Eventually(f).WithTimeout(10 * time.Second)
}

// as returns a client that acts as user: the admin, impersonating them, so
// the API server authorizes and admits every request as user's.
func as(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := plane.Config()
	cfg.Impersonate.UserName = user
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// valueBinding returns a ValueBinding in its public shape
// (docs/value-bindings.md), built without nudge's Go types so the test
// pins the shape users write.
func valueBinding(ns, name string, target map[string]any, values ...map[string]any) *unstructured.Unstructured {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "nudge.dev/v1alpha1",
		"kind":       "ValueBinding",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       map[string]any{"target": target, "values": vs},
	}}
}

// harborTarget is the target Harbor named name.
func harborTarget(name string) map[string]any {
	return map[string]any{"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor", "name": name}
}

// secretValue binds fieldPath to key of the Secret named name.
func secretValue(fieldPath, name, key string) map[string]any {
	return map[string]any{"fieldPath": fieldPath,
		"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": name, "key": key}}}
}

// configMapValue binds fieldPath to key of the ConfigMap named name.
func configMapValue(fieldPath, name, key string) map[string]any {
	return map[string]any{"fieldPath": fieldPath,
		"valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": name, "key": key}}}
}
