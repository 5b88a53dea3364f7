// Package version says which faultline is running: a release sets Version
// at link time (-X), a build from a checkout reads the commit Go stamped
// into the binary.
package version

import "runtime/debug"

// Version is set at link time: by release builds (-ldflags "-X
// github.com/faultline-k8s/faultline/internal/version.Version=v0.1.0"), and by
// hack/run-e2e.sh to "devel <git describe>" (Go's own VCS stamp is off where
// GOFLAGS has -buildvcs=false).
var Version = ""

// LinkFlag is the -ldflags argument that stamps v as Version (quoted: a
// devel version has a space).
func LinkFlag(v string) string {
	return "-X '" + versionVar + "=" + v + "'"
}

// versionVar is Version's full name, as the linker's -X takes it.
const versionVar = "github.com/faultline-k8s/faultline/internal/version.Version"

// String is the version: the release, or "devel <commit>[ modified]".
func String() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	rev, modified := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	v := "devel"
	if rev != "" {
		v += " " + rev
	}
	if modified {
		v += " (modified)"
	}
	return v
}
