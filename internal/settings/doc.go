// Package settings holds what a running nudge says about itself: the
// settings ConfigMap it publishes in its own namespace at start (its
// version and effective flags, none of them secret), and how a client such
// as kubectl nudge finds the install that handles a namespace.
package settings
