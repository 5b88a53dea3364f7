package suites

import (
	"fmt"
	"go/ast"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/suites/all"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// TestSpecsDeclareFloors: every spec can reach a harness.Floor call,
// following its body as TestCauseLiterals does (by name: it may follow
// more than runs, never less), so the report can set its time beside the
// component timers it waits out; a spec that waits for none says so with
// harness.Floor().
func TestSpecsDeclareFloors(t *testing.T) {
	if harness.HaveCluster() {
		t.Skip("a unit test: runs without --kubeconfig")
	}
	src := loadSources(t, "cri", "dra", "nri", "harness")
	specs := 0
	for _, spec := range all.Preview() {
		if spec.LeafNodeType != types.NodeTypeIt {
			continue
		}
		specs++
		where := fmt.Sprintf("%s (%s)", spec.FullText(), spec.LeafNodeLocation)
		call := src.callAt(spec.LeafNodeLocation.FileName, spec.LeafNodeLocation.LineNumber)
		if call == nil {
			t.Errorf("%s: no call registers this spec at its location; this test cannot follow it", where)
			continue
		}
		if !src.reachesFloor(call) {
			t.Errorf("%s: declares no floor: call harness.Floor with the component timers it waits out by design (harness.Floor() for none)", where)
		}
	}
	if specs == 0 {
		t.Fatal("no spec in the tree")
	}
}

// reachesFloor says whether a harness.Floor call is reachable from n.
func (s *sources) reachesFloor(n ast.Node) bool {
	found := false
	s.reachableCalls(n, func(file *ast.File, call *ast.CallExpr) bool {
		switch fn := call.Fun.(type) {
		case *ast.SelectorExpr:
			pkg, ok := fn.X.(*ast.Ident)
			found = ok && fn.Sel.Name == "Floor" && s.importPath(file, pkg.Name) == harnessImport
		case *ast.Ident:
			found = fn.Name == "Floor" && s.pkgOf[file] == "harness"
		}
		return !found
	})
	return found
}
