package versions

import (
	"strings"
	"testing"
)

func TestDefaultPinsAreComplete(t *testing.T) {
	p := Default()
	if p.Kubernetes() == "" || p.Get("CONTAINERD_VERSION") == "" {
		t.Fatalf("default pins incomplete: %v", p)
	}
	if got, want := StagingVersionOf("v1.36.3"), "v0.36.3"; got != want {
		t.Fatalf("StagingVersionOf = %s, want %s", got, want)
	}
	if got, want := StagingVersionOf("v1.37.0-rc.1"), "v0.37.0-rc.1"; got != want {
		t.Fatalf("StagingVersionOf = %s, want %s", got, want)
	}
}

func TestParseRejectsBadInput(t *testing.T) {
	valid := string(pinned)
	for _, tc := range []struct{ name, text, want string }{
		{"no equals", valid + "\nGARBAGE\n", "want KEY=VALUE"},
		{"duplicate", valid + "\nKIND_VERSION=v0.1.0\n", "set twice"},
		{"missing", strings.Replace(valid, "KIND_VERSION=", "#", 1), "missing pins: KIND_VERSION"},
		{"not a version", strings.Replace(valid, "KIND_VERSION=v", "KIND_VERSION=", 1), "KIND_VERSION"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
