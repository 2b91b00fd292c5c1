// Package options holds nudge's command-line options: their flags, defaults
// and validation. Flag names and meanings follow Stakater Reloader's where
// they exist (https://github.com/stakater/Reloader#helm-charts) and
// controller-runtime's conventions otherwise.
package options
