// Package expectations holds, per stack (runtime x Kubernetes minor), what
// faultline's requirements are known to give there and why: one file per
// stack, <runtime>-<major.minor>.yaml, compiled in. A run fails on verdicts
// these files do not expect, including an expected failure that now passes,
// so the files stay true. Vendors pass their own with --expectations.
package expectations

import (
	"embed"

	"github.com/faultline-k8s/faultline/judge/verdicts"
)

//go:embed *.yaml
var files embed.FS

// Builtin returns the checked-in expectations.
func Builtin() (verdicts.ExpectationSet, error) {
	return verdicts.LoadExpectations(files)
}

// Load reads the expectations at path (a file or a directory of files), or
// the built-in ones when path is empty.
func Load(path string) (verdicts.ExpectationSet, error) {
	if path == "" {
		return Builtin()
	}
	return verdicts.LoadExpectationsPath(path)
}
