// Package record holds what nudge tells users in Events: the reasons of its
// Events, the causes of its Warnings and their notes cut to the API server's
// limit, and the Lull that lets Events wait for a pause in workload writes.
package record
