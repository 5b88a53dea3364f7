package expectations

import (
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// TestBuiltin: the checked-in files parse, name their stack after their
// file, and cover a runtime faultline knows.
func TestBuiltin(t *testing.T) {
	set, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(set) == 0 {
		t.Fatal("no expectations")
	}
	for stack, x := range set {
		if x.File != stack+".yaml" {
			t.Errorf("stack %s is in %s; name the file after its stack", stack, x.File)
		}
		runtime, _, _ := strings.Cut(stack, "-")
		if _, err := runtimes.Lookup(runtime); err != nil {
			t.Errorf("%s: %v", x.File, err)
		}
	}
}
