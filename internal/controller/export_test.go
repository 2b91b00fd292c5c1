package controller

// WatchKind is watchKind, for the tests of package controller_test (which
// hold the package's plane).
var WatchKind = watchKind
