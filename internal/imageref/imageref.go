// Package imageref is the one home of the names of faultline's images: the
// fakes (driver, plugins, test pod) and the conformance image. Their tag is
// this build's version, so a binary finds the images of its own build in a
// registry without being told their references.
package imageref

import (
	"regexp"
	"strings"

	"github.com/faultline-k8s/faultline/internal/version"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// DefaultRegistry is where released images are pushed; a run on a cluster
// that pulls from elsewhere names its registry (--image-registry).
const DefaultRegistry = "ghcr.io/faultline-k8s"

// The images' repositories under a registry.
const (
	FakesName       = "faultline-fakes"
	ConformanceName = "faultline-conformance"
)

// Tag is the tag of this build's images: the release ("v0.1.0"), or the
// devel version made a valid tag ("devel 1a2b3c4-dirty" => "devel-1a2b3c4-dirty").
func Tag() string { return tagOf(version.String()) }

// IsRelease says whether this build is a release (its tag a version like
// v0.1.0), whose images are pushed once; a devel tag is overwritten.
func IsRelease() bool { return versions.IsRelease(Tag()) }

var notInTag = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func tagOf(v string) string {
	t := strings.Trim(notInTag.ReplaceAllString(strings.TrimSpace(v), "-"), "-.")
	if t == "" {
		t = "devel"
	}
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

// Fakes is the fakes image of this build in registry (DefaultRegistry when empty).
func Fakes(registry string) string { return ref(registry, FakesName) }

// Conformance is the conformance image of this build in registry.
func Conformance(registry string) string { return ref(registry, ConformanceName) }

func ref(registry, name string) string {
	if registry == "" {
		registry = DefaultRegistry
	}
	return strings.TrimSuffix(registry, "/") + "/" + name + ":" + Tag()
}
