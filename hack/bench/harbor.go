package main

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// harborCRDPath is the tests' Harbor CRD, relative to the repository root.
const harborCRDPath = "internal/binding/testdata/harbor-crd.yaml"

// harborObject returns a Harbor named name in the scenario's namespace,
// with the fields its CRD requires and S3 storage without an access key.
func harborObject(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "goharbor.io/v1beta1", "kind": "Harbor",
		"metadata": map[string]any{"name": name, "namespace": bindingNamespace},
		"spec": map[string]any{
			"externalURL": "https://" + name + ".registry.example", "harborAdminPasswordRef": "admin",
			"imageChartStorage": map[string]any{"s3": map[string]any{
				"bucket": "registry", "region": "eu-west-1", "secretkeyRef": "s3-credentials",
			}},
		},
	}}
}
