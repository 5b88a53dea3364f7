package verdictstest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const importPath = "github.com/faultline-k8s/faultline/judge/verdicts/verdictstest"

// TestOnlyTestsImportIt: judging a real run never matches messages.
func TestOnlyTestsImportIt(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
		if err != nil {
			return err // a file it cannot read proves nothing either way
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == importPath {
				t.Errorf("%s imports %s, which is for tests only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRecordedCause: a former pattern counts for a requirement that
// declares its cause, and nothing else matches.
func TestRecordedCause(t *testing.T) {
	for _, c := range []struct {
		ids           []string
		message, want string
	}{
		{[]string{"DRA-EVERY-FAILING-CLAIM-NAMED"}, "both claims failed in one call, but the user is told about\nonly one", "claim-not-named"},
		{[]string{"DRA-TRANSIENT-RETRIED"}, "told about only one", ""},
		{[]string{"NRI-SYNC-ERROR-FAILS-REQUEST"}, "the failed attempt 723ba403aa99 must leave nothing behind in the runtime: holds 1 sandbox(es)\n  sandbox 723ba403aa99 SANDBOX_NOTREADY", "leftover-sandbox"},
		{[]string{"NRI-SYNC-ERROR-FAILS-REQUEST"}, "the failed attempt 723ba403aa99 must leave nothing behind in the runtime: container 723ba403aa99 CONTAINER_CREATED", "leftover-container"},
		{[]string{"CRI-SANDBOX-RETRY-IN-PROGRESS"}, "Timed out after 30s: dial tcp: connection refused", ""},
	} {
		if got := RecordedCause(c.ids, c.message); got != c.want {
			t.Errorf("RecordedCause(%v, %q) = %q, want %q", c.ids, c.message, got, c.want)
		}
	}
}
