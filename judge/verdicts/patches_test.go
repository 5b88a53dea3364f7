package verdicts

import (
	"strings"
	"testing"
	"testing/fstest"
)

// cdiHistory is kubernetes#140274 on one minor: failing until v1.36.3,
// another expectation from v1.36.5 on (a stand-in), nothing for v1.36.4.
const cdiHistory = `stack: containerd-1.36
expect:
- requirement: DRA-TWO-DRIVERS-CDI-ONCE
  until: v1.36.3
  verdict: fail
  causes: [device-twice]
  reason: r
  reference: https://example.com/a
- requirement: DRA-TWO-DRIVERS-CDI-ONCE
  from: v1.36.5
  verdict: not implemented
  reason: r
  reference: https://example.com/b
`

// An entry holds for the patches its bounds cover; a release outside them,
// or unknown, gets no bounded entry.
func TestExpectationsByPatch(t *testing.T) {
	x, err := ParseExpectations([]byte(cdiHistory), "containerd-1.36.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{
		"v1.36.0": ExpectFail, "v1.36.3": ExpectFail, "v1.36.4": "", "v1.36.5": ExpectNotImplemented, "v1.36.9": ExpectNotImplemented, "": "",
	} {
		got := ""
		if e := x.For("DRA-TWO-DRIVERS-CDI-ONCE", v); e != nil {
			got = e.Verdict
		}
		if got != want {
			t.Errorf("%q: %q, want %q", v, got, want)
		}
	}
	if e := x.For("DRA-TWO-DRIVERS-CDI-ONCE", "v1.36.3"); e.Patches() != "until v1.36.3" {
		t.Errorf("Patches() = %q", e.Patches())
	}
}

// Bounds are releases of the file's minor, in order, and a requirement
// named twice holds for releases apart.
func TestPatchBoundsChecked(t *testing.T) {
	entry := func(bounds string) string {
		return "- requirement: DRA-TWO-DRIVERS-CDI-ONCE\n" + bounds + "  verdict: fail\n  causes: [device-twice]\n  reason: r\n  reference: https://example.com/a\n"
	}
	for name, tc := range map[string]struct{ entries, want string }{
		"overlap":       {entry("  until: v1.36.3\n") + entry("  from: v1.36.2\n"), "named twice for the same releases"},
		"unbounded":     {entry("") + entry("  from: v1.36.4\n"), "named twice for the same releases"},
		"other minor":   {entry("  until: v1.35.3\n"), "not a release of 1.36"},
		"not a release": {entry("  from: latest\n"), "want a release like"},
		"backwards":     {entry("  from: v1.36.4\n  until: v1.36.2\n"), "comes after"},
	} {
		_, err := ParseExpectations([]byte("stack: containerd-1.36\nexpect:\n"+tc.entries), "x.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
}

// A stack of another minor that extends one with bounded entries must say
// what holds for its own releases.
func TestExtendsAcrossMinorsNamesBoundedEntries(t *testing.T) {
	child := "stack: containerd-1.35\nextends: containerd-1.36\nexpect: []\n"
	_, err := LoadExpectations(fstest.MapFS{
		"containerd-1.36.yaml": {Data: []byte(cdiHistory)},
		"containerd-1.35.yaml": {Data: []byte(child)},
	})
	if err == nil || !strings.Contains(err.Error(), "name it again here, or drop it") {
		t.Errorf("%v, want the bounded entry refused across minors", err)
	}
	dropped := "stack: containerd-1.35\nextends: containerd-1.36\ndrop: [DRA-TWO-DRIVERS-CDI-ONCE]\nexpect: []\n"
	if _, err := LoadExpectations(fstest.MapFS{
		"containerd-1.36.yaml": {Data: []byte(cdiHistory)},
		"containerd-1.35.yaml": {Data: []byte(dropped)},
	}); err != nil {
		t.Errorf("dropped: %v", err)
	}
}
