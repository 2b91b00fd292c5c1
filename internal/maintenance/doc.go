// Package maintenance holds maintenance windows: the times at which nudge
// may roll a workload, written as a cron schedule, a duration and a time
// zone ("0 2 * * 1-5 2h Europe/Berlin": weekdays from 02:00 to 04:00 in
// Berlin). The window opens at each time the schedule names and stays open
// for the duration.
//
// A window is set by the annotation nudge.dev/maintenance-window on a
// workload or its Namespace, or for every workload by the flag
// --maintenance-window; this package only parses and evaluates one. It is
// pure: Open and Next take the time they are asked about, never read the
// clock.
//
// The schedule is read by github.com/robfig/cron/v3's standard parser, the
// one Kubernetes CronJobs use (https://pkg.go.dev/github.com/robfig/cron/v3),
// and its times are read on the zone's wall clock. Where a CronJob skips a
// time the clock skips in spring and runs twice at a time it repeats in
// autumn, a window follows ISC cron
// (https://man7.org/linux/man-pages/man8/cron.8.html) so that no day loses
// or doubles its window: see Window.
package maintenance
