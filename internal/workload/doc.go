// Package workload holds one adapter per workload kind (Kind): how to reach
// its pod template and how to write nudge's state and trigger to it in one
// patch; custom kinds of --custom-kinds-file are adapters too. It also holds
// the annotation and label keys nudge writes on a workload.
package workload
