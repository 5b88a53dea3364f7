package nodeimage

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// slowHandlerFiles are the node files that carry the faultline-slow
// handler, and where in each the runtime finds it and its default runtime.
var slowHandlerFiles = []struct {
	runtime, file string
	text          func() (string, error) // nodesetup's text of the handler
	indent        int                    // how deep the template nests it
	runtimesTable []string
	// likeRunc are the settings, under the runtime's table, the handler
	// copies from runc's.
	likeRunc [][]string
}{
	{
		"containerd", "etc/containerd/config.toml", containerdSlowHandler.TOML, 4,
		[]string{"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes"},
		[][]string{{"runtime_type"}, {"options", "SystemdCgroup"}},
	},
	{
		"crio", "etc/crio/crio.conf.d/10-faultline.conf", crioSlowHandler.TOML, 0,
		[]string{"crio", "runtime", "runtimes"},
		[][]string{{"runtime_type"}, {"runtime_root"}, {"monitor_path"}},
	},
}

// TestNodeFilesCarryNodesetupsHandler: the node image's runtime configs
// hold node-setup's text of the handler (nodesetup), still parse, and
// configure the handler where the runtime looks for it, like runc beside it.
func TestNodeFilesCarryNodesetupsHandler(t *testing.T) {
	for _, tc := range slowHandlerFiles {
		t.Run(tc.runtime, func(t *testing.T) {
			data, err := NodeFile(runtimes.MustLookup(tc.runtime), tc.file, "registry.k8s.io/pause:3.10.2")
			if err != nil {
				t.Fatal(err)
			}
			text, err := tc.text()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(data), indent(tc.indent, strings.TrimSuffix(text, "\n"))+"\n") {
				t.Errorf("%s lacks nodesetup's handler:\n%s\nin\n%s", tc.file, text, data)
			}
			file, handler := parse(t, tc.file, string(data)), parse(t, "the handler", text)
			table, runcTable := keyPath(tc.runtimesTable, nodesetup.HandlerName), keyPath(tc.runtimesTable, "runc")
			want, got := at(handler, table...), at(file, table...)
			if want == nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s configures the handler as\n%v\nnodesetup as\n%v", tc.file, got, want)
			}
			for _, key := range tc.likeRunc {
				runc, slow := at(file, keyPath(runcTable, key...)...), at(file, keyPath(table, key...)...)
				if runc == nil || slow != runc {
					t.Errorf("%s: the handler's %s is %v, runc's %v", tc.file, strings.Join(key, "."), slow, runc)
				}
			}
		})
	}
}

func parse(t *testing.T, what, text string) map[string]any {
	t.Helper()
	tree := map[string]any{}
	if _, err := toml.Decode(text, &tree); err != nil {
		t.Fatalf("%s does not parse: %v\n%s", what, err, text)
	}
	return tree
}

// keyPath is keys followed by more, in a slice of its own.
func keyPath(keys []string, more ...string) []string {
	return append(slices.Clone(keys), more...)
}

// at walks tables by key; nil where there is nothing.
func at(tree map[string]any, keys ...string) any {
	var cur any = tree
	for _, k := range keys {
		table, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = table[k]
	}
	return cur
}

func TestIndent(t *testing.T) {
	for in, want := range map[string]string{"a": "  a", "a\n b": "  a\n   b", "": "  "} {
		if got := indent(2, in); got != want {
			t.Errorf("indent(2, %q) = %q, want %q", in, got, want)
		}
	}
}

// The node files' key hashes them rendered: a change of nodesetup's handler
// must give a new node image, of the runtime whose file carries it.
func TestNodeKeyFollowsTheHandler(t *testing.T) {
	nodefs, crio := keysOf(t)
	saved := containerdSlowHandler
	containerdSlowHandler.RuntimeType = "io.containerd.other.v1"
	changedNodefs, sameCRIO := keysOf(t)
	containerdSlowHandler = saved
	if changedNodefs == nodefs || sameCRIO != crio {
		t.Errorf("containerd's handler changed: nodefs key %s -> %s, CRI-O's %s -> %s", nodefs, changedNodefs, crio, sameCRIO)
	}
	savedCRIO := crioSlowHandler
	crioSlowHandler.MonitorPath = "/other/conmon"
	sameNodefs, changedCRIO := keysOf(t)
	crioSlowHandler = savedCRIO
	if sameNodefs != nodefs || changedCRIO == crio {
		t.Errorf("CRI-O's handler changed: nodefs key %s -> %s, CRI-O's %s -> %s", nodefs, sameNodefs, crio, changedCRIO)
	}
}

func keysOf(t *testing.T) (nodefs, crio string) {
	t.Helper()
	nodefs, err := nodeFilesKey()
	if err != nil {
		t.Fatal(err)
	}
	crio, err = runtimeFilesKey(runtimes.MustLookup("crio").NodeFilesDir)
	if err != nil {
		t.Fatal(err)
	}
	return nodefs, crio
}
