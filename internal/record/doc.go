// Package record holds what nudge tells users in Events and how it writes
// them: the reasons of its Events, the causes of its Warnings and their notes
// cut to the API server's limit, the Recorder that writes each Event once on
// a client of its own, and the Lull that lets Events wait for a pause in
// workload writes.
package record
