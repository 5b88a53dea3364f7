// Package suitenames is the one list of faultline's suites and the label
// that selects each in the test binary. It imports nothing, so the CLI can
// use it without linking the suites.
package suitenames

// All are the suites of the test binary, in the order reports list them.
var All = []string{"dra", "cri", "nri"}

// Label is the label every spec of suite carries ("Suite:dra").
func Label(suite string) string { return "Suite:" + suite }

// LabelPrefix starts every suite label.
const LabelPrefix = "Suite:"

// NotDisruptive is the label filter that leaves out the specs that disrupt
// a node (they restart its runtime; framework.WithDisruptive labels them
// "Disruptive"): the default on a cluster faultline did not create.
const NotDisruptive = "!Disruptive"
