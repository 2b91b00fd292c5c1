package flux

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/ssa"
	"github.com/fluxcd/pkg/ssa/normalize"
	ssautil "github.com/fluxcd/pkg/ssa/utils"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Flux's names, as kustomize-controller sets them: its field manager (its
// controllerName), and the group of its owner labels and of the
// annotations that steer an apply (kustomizev1.GroupVersion.Group).
const (
	fieldManager = "kustomize-controller"
	group        = "kustomize.toolkit.fluxcd.io"
)

// kustomization applies the objects a Flux Kustomization builds the way
// kustomize-controller v1.9.6 (the newest that builds with this
// repository's Go; go.mod pins the ssa it requires) does in its apply
// (internal/controller/kustomization_controller.go): ssa's
// ResourceManager with its field manager and owner labels, 4 concurrent
// applies (its --concurrent-ssa default), objects normalized, its apply
// options (force as the Kustomization's spec.force, its selectors, the
// clean-up of kubectl's and its own pre-SSA field managers), and
// ApplyAllStaged.
type kustomization struct {
	name, namespace string
	manager         *ssa.ResourceManager
	opts            ssa.ApplyOptions
}

// newKustomization returns the applier of the Kustomization
// namespace/name, with spec.force set to force, writing through c.
func newKustomization(c client.Client, namespace, name string, force bool) *kustomization {
	m := ssa.NewResourceManager(c, nil, ssa.Owner{Field: fieldManager, Group: group})
	m.SetConcurrency(4)
	opts := ssa.DefaultApplyOptions()
	opts.Force = force
	opts.ExclusionSelector = map[string]string{group + "/reconcile": "disabled", group + "/ssa": "Ignore"}
	opts.IfNotPresentSelector = map[string]string{group + "/ssa": "IfNotPresent"}
	opts.ForceSelector = map[string]string{group + "/force": "enabled"}
	opts.Cleanup = ssa.ApplyCleanupOptions{
		Annotations: []string{corev1.LastAppliedConfigAnnotation, group + "/checksum", "fluxcd.io/sync-checksum"},
		Labels:      []string{"fluxcd.io/sync-gc-mark"},
		FieldManagers: []ssa.FieldManager{
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationApply},
			{Name: "kubectl", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: "before-first-apply", OperationType: metav1.ManagedFieldsOperationUpdate},
			{Name: fieldManager, OperationType: metav1.ManagedFieldsOperationUpdate},
		},
		Exclusions: map[string]string{group + "/ssa": "Merge"},
	}
	return &kustomization{name: name, namespace: namespace, manager: m, opts: opts}
}

// objects returns the objects of manifests, a multi-document YAML stream
// as `kustomize build` prints it, normalized and labelled as
// kustomize-controller applies them.
func (k *kustomization) objects(t testing.TB, manifests string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := ssautil.ReadObjects(strings.NewReader(manifests))
	if err != nil {
		t.Fatalf("reading the manifests: %v", err)
	}
	k.manager.SetOwnerLabels(objs, k.name, k.namespace)
	if err := normalize.UnstructuredList(objs); err != nil {
		t.Fatalf("normalizing the manifests: %v", err)
	}
	return objs
}

// apply applies manifests and returns what ssa did to each object, as
// "Kind/name" → "created", "configured" or "unchanged" (ssa's Action).
func (k *kustomization) apply(ctx context.Context, t testing.TB, manifests string) map[string]string {
	t.Helper()
	cs, err := k.manager.ApplyAllStaged(ctx, k.objects(t, manifests), k.opts)
	if err != nil {
		t.Fatalf("applying the manifests as kustomize-controller: %v", err)
	}
	out := map[string]string{}
	for _, e := range cs.Entries {
		out[e.ObjMetadata.GroupKind.Kind+"/"+e.ObjMetadata.Name] = e.Action.String()
	}
	return out
}

// drift returns what ssa's Diff (the server-side dry-run of
// `flux diff kustomization` and of kustomize-controller's drift check)
// finds changed between the cluster and manifests: per drifted object,
// "Kind/name: " and the live and merged objects' differing top-level
// metadata maps and spec. It is empty when nothing drifted.
func (k *kustomization) drift(ctx context.Context, t testing.TB, manifests string) []string {
	t.Helper()
	var out []string
	for _, o := range k.objects(t, manifests) {
		entry, live, merged, err := k.manager.Diff(ctx, o, ssa.DiffOptions{
			Exclusions:           k.opts.ExclusionSelector,
			IfNotPresentSelector: k.opts.IfNotPresentSelector,
			Force:                k.opts.Force,
			ForceSelector:        k.opts.ForceSelector,
		})
		if err != nil {
			t.Fatalf("diffing %s: %v", ssautil.FmtUnstructured(o), err)
		}
		if entry.Action == ssa.UnchangedAction || entry.Action == ssa.SkippedAction {
			continue
		}
		d := fmt.Sprintf("%s/%s: %s", o.GetKind(), o.GetName(), entry.Action)
		if live != nil && merged != nil {
			d += fmt.Sprintf("\nlive labels %v annotations %v\nmerged labels %v annotations %v",
				live.GetLabels(), live.GetAnnotations(), merged.GetLabels(), merged.GetAnnotations())
		}
		out = append(out, d)
	}
	return out
}
