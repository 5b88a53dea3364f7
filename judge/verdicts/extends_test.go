package verdicts

import (
	"strings"
	"testing"
	"testing/fstest"
)

// TestExtends: a stack that extends another holds the other's expectations
// but those it names again or drops.
func TestExtends(t *testing.T) {
	const parent = `stack: containerd-1.36
expect:
- requirement: DRA-PERMANENT-FAILS-POD
  verdict: not implemented
  reason: r
  reference: https://example.com/a
- requirement: DRA-EVERY-FAILING-CLAIM-NAMED
  verdict: fail
  causes: [claim-not-named]
  reason: r
  reference: https://example.com/b
- requirement: DRA-DEADLINE-ERROR-NAMED
  verdict: fail
  causes: [driver-not-named]
  reason: r
  reference: https://example.com/c
`
	const child = `stack: containerd-1.37
extends: containerd-1.36
drop: [DRA-DEADLINE-ERROR-NAMED]
expect:
- requirement: DRA-EVERY-FAILING-CLAIM-NAMED
  verdict: skipped
  reason: changed
  reference: https://example.com/d
`
	set, err := LoadExpectations(fstest.MapFS{
		"containerd-1.36.yaml": {Data: []byte(parent)},
		"containerd-1.37.yaml": {Data: []byte(child)},
	})
	if err != nil {
		t.Fatal(err)
	}
	x := set["containerd-1.37"]
	if e := x.For("DRA-PERMANENT-FAILS-POD", ""); e == nil || e.Verdict != ExpectNotImplemented {
		t.Errorf("inherited expectation lost: %+v", e)
	}
	if e := x.For("DRA-EVERY-FAILING-CLAIM-NAMED", ""); e == nil || e.Verdict != ExpectSkipped {
		t.Errorf("own expectation not kept: %+v", e)
	}
	if e := x.For("DRA-DEADLINE-ERROR-NAMED", ""); e != nil {
		t.Errorf("dropped expectation kept: %+v", e)
	}
	if len(set["containerd-1.36"].Expect) != 3 {
		t.Errorf("the parent changed: %+v", set["containerd-1.36"].Expect)
	}
	for name, files := range map[string]fstest.MapFS{
		"missing parent": {"a.yaml": {Data: []byte("stack: crio-1.37\nextends: crio-1.36\nexpect: []\n")}},
		"cycle": {
			"a.yaml": {Data: []byte("stack: crio-1.37\nextends: crio-1.36\nexpect: []\n")},
			"b.yaml": {Data: []byte("stack: crio-1.36\nextends: crio-1.37\nexpect: []\n")},
		},
		"drop without extends": {"a.yaml": {Data: []byte("stack: crio-1.37\ndrop: [DRA-PERMANENT-FAILS-POD]\nexpect: []\n")}},
		"drop unknown":         {"a.yaml": {Data: []byte("stack: crio-1.37\nextends: x\ndrop: [NOPE]\nexpect: []\n")}},
	} {
		if _, err := LoadExpectations(files); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.Contains(err.Error(), ".yaml") {
			t.Errorf("%s: the error does not name the file: %v", name, err)
		}
	}
}
