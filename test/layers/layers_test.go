// Package layers guards the layout the README's Layout section describes: each
// top-level folder is a layer, and a package imports only packages of lower
// layers or of its own folder. It parses imports only, so it needs no build.
package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/faultline-k8s/faultline/"

// layers lists the top-level folders from the bottom up; folders on one line
// share a layer and do not import each other.
var layers = [][]string{
	{"vocab"},                           // the shared vocabulary: runtimes, pins, facts, wire names
	{"internal"},                        // process plumbing
	{"fakes", "judge"},                  // what the fakes image carries; catalogue, expectations, verdicts, rendering
	{"fixtures"},                        // the manifests the suites deploy, and the access they need
	{"nodesetup"},                       // the faultline-slow handler: its configuration, installed on a node
	{"clusters", "preflight", "suites"}, // building clusters, checking what a cluster can run, the suites
	{"conformance", "pipeline"},         // the conformance image and faultline e2e, over everything below
	{"cmd", "test"},                     // what a user runs, and the end-to-end tests
}

// testsOnly are packages only tests may import: verdictstest matches
// failure messages of runs recorded before specs named their causes, and
// judging a real run never does.
var testsOnly = []string{module + "judge/verdicts/verdictstest"}

func layerOf(top string) (int, bool) {
	for i, folders := range layers {
		for _, f := range folders {
			if f == top {
				return i, true
			}
		}
	}
	return 0, false
}

func topFolder(rel string) string {
	top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return top
}

// TestImportsGoDown fails when a package imports a package of its own
// layer's other folders or of a higher layer, or lives in a folder no layer
// names, or when code that is not a test imports a package for tests only.
func TestImportsGoDown(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
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
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		from := topFolder(rel)
		fromLayer, ok := layerOf(from)
		if !ok {
			t.Errorf("%s: folder %s is in no layer (test/layers)", rel, from)
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if slices.Contains(testsOnly, p) && !strings.HasSuffix(path, "_test.go") {
				t.Errorf("%s imports %s, which is for tests only", rel, p)
			}
			target, ok := strings.CutPrefix(p, module)
			if !ok {
				continue
			}
			to := topFolder(target)
			if to == from {
				continue
			}
			toLayer, ok := layerOf(to)
			switch {
			case !ok:
				t.Errorf("%s imports %s, in no layer", rel, p)
			case toLayer >= fromLayer:
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s): imports go down the layers", rel, fromLayer, from, p, toLayer, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked %d Go files: the walk missed the tree", checked)
	}
}

// TestLayersNameEveryFolderOnce: a folder in two layers, or a layer naming a
// folder that is gone, would make the guard above say nothing.
func TestLayersNameEveryFolderOnce(t *testing.T) {
	seen := map[string]bool{}
	for _, folders := range layers {
		for _, f := range folders {
			if seen[f] {
				t.Errorf("%s is in two layers", f)
			}
			seen[f] = true
			if _, err := os.Stat(filepath.Join("..", "..", f)); err != nil {
				t.Errorf("layer folder %s: %v", f, err)
			}
		}
	}
}
