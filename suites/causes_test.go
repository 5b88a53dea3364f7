package suites

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/suites/all"
	"github.com/faultline-k8s/faultline/suites/harness"
)

// harnessImport is the package whose Cause the specs call.
const harnessImport = "github.com/faultline-k8s/faultline/suites/harness"

// TestCauseLiterals keeps harness.Cause calls and the catalogue in step,
// without a cluster: it follows each spec's body through the functions,
// methods and closures of the suites' packages it refers to (by name, so
// it may follow more than runs, never less), and checks that every cause
// it can name is declared by a requirement of that spec (harness.Cause
// panics at run time otherwise), that every cause is a string literal, and
// that every cause the catalogue declares is one a spec of its requirement
// can name.
func TestCauseLiterals(t *testing.T) {
	if harness.HaveCluster() {
		t.Skip("a unit test: runs without --kubeconfig")
	}
	src := loadSources(t, "cri", "dra", "nri", "harness")
	named := map[string]map[string]bool{} // requirement => causes its specs can name
	for _, spec := range all.Preview() {
		if spec.LeafNodeType != types.NodeTypeIt {
			continue
		}
		ids := requirements.FromLabels(spec.Labels())
		where := fmt.Sprintf("%s (%s)", spec.FullText(), spec.LeafNodeLocation)
		call := src.callAt(spec.LeafNodeLocation.FileName, spec.LeafNodeLocation.LineNumber)
		if call == nil {
			t.Errorf("%s: no call registers this spec at its location; this test cannot follow it", where)
			continue
		}
		for _, c := range src.causes(call) {
			if c.id == "" {
				t.Errorf("%s: harness.Cause at %s names its cause with no string literal", where, c.pos)
				continue
			}
			declared := false
			for _, id := range ids {
				if r, ok := requirements.Lookup(id); ok && r.Declares(c.id) {
					declared = true
				}
				if named[id] == nil {
					named[id] = map[string]bool{}
				}
				named[id][c.id] = true
			}
			if !declared && c.id != requirements.HarnessCause {
				t.Errorf("%s: harness.Cause(%q) at %s: none of %v declares it (judge/requirements/catalogue.yaml); it would panic", where, c.id, c.pos, ids)
			}
		}
	}
	for _, r := range requirements.All() {
		for _, c := range r.Causes {
			if !named[r.ID][c.ID] {
				t.Errorf("%s declares cause %q, which no spec of it names (harness.Cause): remove it, or name it where the spec checks it", r.ID, c.ID)
			}
		}
	}
	for _, c := range src.allCauses() {
		if c.id != "" && !src.reached[c.pos] {
			t.Errorf("harness.Cause(%q) at %s: no spec reaches it", c.id, c.pos)
		}
	}
}

// cause is one harness.Cause call: its literal ("" when it is none) and
// where it is.
type cause struct {
	id  string
	pos string
}

// sources are the parsed suites' packages, with what each name may refer to.
type sources struct {
	fset  *token.FileSet
	files map[string]*ast.File // by absolute file name
	pkgOf map[*ast.File]string // suite directory name
	// funcs, methods and closures of each package, by name: a name may
	// stand for several (a method of two types, closures in two specs).
	funcs    map[string]map[string][]ast.Node
	methods  map[string]map[string][]ast.Node
	closures map[string]map[string][]ast.Node
	reached  map[string]bool // cause positions some spec reaches
}

func loadSources(t *testing.T, dirs ...string) *sources {
	t.Helper()
	s := &sources{fset: token.NewFileSet(), files: map[string]*ast.File{}, pkgOf: map[*ast.File]string{},
		funcs: map[string]map[string][]ast.Node{}, methods: map[string]map[string][]ast.Node{}, closures: map[string]map[string][]ast.Node{},
		reached: map[string]bool{}}
	for _, dir := range dirs {
		s.funcs[dir], s.methods[dir], s.closures[dir] = map[string][]ast.Node{}, map[string][]ast.Node{}, map[string][]ast.Node{}
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			abs, err := filepath.Abs(name)
			if err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(abs)
			if err != nil {
				t.Fatal(err)
			}
			f, err := parser.ParseFile(s.fset, abs, data, 0)
			if err != nil {
				t.Fatal(err)
			}
			s.files[abs], s.pkgOf[f] = f, dir
			s.index(dir, f)
		}
	}
	return s
}

func (s *sources) index(dir string, f *ast.File) {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
			if fd.Recv != nil {
				s.methods[dir][fd.Name.Name] = append(s.methods[dir][fd.Name.Name], fd.Body)
			} else {
				s.funcs[dir][fd.Name.Name] = append(s.funcs[dir][fd.Name.Name], fd.Body)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, rhs := range n.Rhs {
				if lit, ok := rhs.(*ast.FuncLit); ok && i < len(n.Lhs) {
					if id, ok := n.Lhs[i].(*ast.Ident); ok {
						s.closures[dir][id.Name] = append(s.closures[dir][id.Name], lit)
					}
				}
			}
		case *ast.ValueSpec:
			for i, v := range n.Values {
				if lit, ok := v.(*ast.FuncLit); ok && i < len(n.Names) {
					s.closures[dir][n.Names[i].Name] = append(s.closures[dir][n.Names[i].Name], lit)
				}
			}
		}
		return true
	})
}

// callAt returns the outermost call that starts on line of file: the one
// that registered a spec there (framework.It, or a helper that does).
func (s *sources) callAt(file string, line int) *ast.CallExpr {
	f := s.files[file]
	if f == nil {
		return nil
	}
	var found *ast.CallExpr
	ast.Inspect(f, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok && s.fset.Position(call.Pos()).Line == line {
			found = call
			return false
		}
		return true
	})
	return found
}

// reachableCalls calls visit with every call expression reachable from n:
// in n itself, and in the functions, methods and closures of the suites
// and the harness it names, each visited once. visit returns false to stop.
func (s *sources) reachableCalls(n ast.Node, visit func(file *ast.File, call *ast.CallExpr) bool) {
	seen := map[ast.Node]bool{}
	stopped := false
	var walk func(dir string, n ast.Node)
	walk = func(dir string, n ast.Node) {
		if stopped || seen[n] {
			return
		}
		seen[n] = true
		file := s.fileOf(n)
		ast.Inspect(n, func(m ast.Node) bool {
			if stopped {
				return false
			}
			switch m := m.(type) {
			case *ast.CallExpr:
				stopped = !visit(file, m)
			case *ast.SelectorExpr:
				if pkg, ok := m.X.(*ast.Ident); ok && s.importPath(file, pkg.Name) != "" {
					if s.importPath(file, pkg.Name) == harnessImport {
						for _, body := range s.funcs["harness"][m.Sel.Name] {
							walk("harness", body)
						}
					}
					return false
				}
				for _, body := range s.methods[dir][m.Sel.Name] {
					walk(dir, body)
				}
			case *ast.Ident:
				for _, body := range s.funcs[dir][m.Name] {
					walk(dir, body)
				}
				for _, lit := range s.closures[dir][m.Name] {
					walk(dir, lit)
				}
			}
			return !stopped
		})
	}
	walk(s.pkgOf[s.fileOf(n)], n)
}

// causes returns every harness.Cause call reachable from n.
func (s *sources) causes(n ast.Node) []cause {
	var out []cause
	s.reachableCalls(n, func(file *ast.File, call *ast.CallExpr) bool {
		if s.isCause(file, call) {
			c := cause{pos: s.fset.Position(call.Pos()).String()}
			if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				c.id, _ = strconv.Unquote(lit.Value)
			}
			s.reached[c.pos] = true
			out = append(out, c)
		}
		return true
	})
	return out
}

// allCauses returns every harness.Cause call of the sources.
func (s *sources) allCauses() []cause {
	var out []cause
	for _, f := range s.files {
		ast.Inspect(f, func(m ast.Node) bool {
			if call, ok := m.(*ast.CallExpr); ok && s.isCause(f, call) {
				c := cause{pos: s.fset.Position(call.Pos()).String()}
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					c.id, _ = strconv.Unquote(lit.Value)
				}
				out = append(out, c)
			}
			return true
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	return out
}

// isCause: call is harness.Cause (Cause inside package harness).
func (s *sources) isCause(f *ast.File, call *ast.CallExpr) bool {
	if len(call.Args) != 2 {
		return false
	}
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		pkg, ok := fn.X.(*ast.Ident)
		return ok && fn.Sel.Name == "Cause" && s.importPath(f, pkg.Name) == harnessImport
	case *ast.Ident:
		return fn.Name == "Cause" && s.pkgOf[f] == "harness"
	}
	return false
}

// importPath is the path name refers to in f, "" when it is no import.
func (s *sources) importPath(f *ast.File, name string) string {
	if f == nil {
		return ""
	}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		local := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			local = imp.Name.Name
		}
		if local == name {
			return path
		}
	}
	return ""
}

func (s *sources) fileOf(n ast.Node) *ast.File {
	return s.files[s.fset.Position(n.Pos()).Filename]
}
