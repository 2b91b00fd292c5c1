// Package jobs re-creates Jobs whose sources changed (--recreate-jobs) and
// keeps, in a journal Secret, those deleted and not created yet, so that a
// stop of nudge in between loses none; it also starts a CronJob's Job at
// once (--cronjob-start-job).
package jobs
