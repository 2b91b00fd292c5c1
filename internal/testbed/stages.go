package testbed

import "embed"

// stagesDir holds the kwok Stage definitions (see its README.md).
const stagesDir = "testdata/stages"

// stages are the "fast" Stages of kwok v0.8.0, which move a fake Node to
// Ready at once and keep its Lease fresh, and move a pod to Running and Ready
// as soon as it is scheduled, to Succeeded when a Job owns it, and out of the
// API as soon as it is deleted.
//
//go:embed testdata/stages/*.yaml
var stages embed.FS
