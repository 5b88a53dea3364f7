package imageref

import (
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

func TestTagOfVersions(t *testing.T) {
	for v, want := range map[string]string{
		"v0.1.0":                   "v0.1.0",
		"devel 11217a0-dirty":      "devel-11217a0-dirty",
		"devel 1a2b3c4 (modified)": "devel-1a2b3c4-modified",
		"devel":                    "devel",
		"":                         "devel",
		"devel v0.0.0-3-gabc/feat": "devel-v0.0.0-3-gabc-feat",
	} {
		got := tagOf(v)
		if got != want {
			t.Errorf("tagOf(%q) = %q, want %q", v, got, want)
		}
		if _, err := name.NewTag("r.example/x:"+got, name.StrictValidation); err != nil {
			t.Errorf("tagOf(%q) = %q is not a valid tag: %v", v, got, err)
		}
	}
}

func TestRefs(t *testing.T) {
	if got, want := Fakes("localhost:5000/"), "localhost:5000/faultline-fakes:"+Tag(); got != want {
		t.Errorf("Fakes = %q, want %q", got, want)
	}
	if got, want := Conformance(""), DefaultRegistry+"/faultline-conformance:"+Tag(); got != want {
		t.Errorf("Conformance = %q, want %q", got, want)
	}
}
