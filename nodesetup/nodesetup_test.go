package nodesetup

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

var (
	containerd = runtimes.MustLookup("containerd")
	crio       = runtimes.MustLookup("crio")
)

// kindContainerdConfig is a containerd config as kind leaves it on a node
// after patching it (re-encoded, double quotes, nested indentation), without
// the handler.
const kindContainerdConfig = `version = 3

[plugins]

  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"

    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = "registry.k8s.io/pause:3.10.2"

  [plugins."io.containerd.cri.v1.runtime"]
    cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
    restrict_oom_score_adj = true

    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = ["/usr/lib/cni", "/opt/cni/bin"]
      conf_dir = "/etc/cni/net.d"

    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"

      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes]

        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
            SystemdCgroup = true

  [plugins."io.containerd.nri.v1.nri"]
    disable = false
    plugin_request_timeout = "2s"`

// node is a fake node's root: the files given (path => content; a mode
// other than 0644 as "mode:content"), and runc in /usr/sbin.
func node(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	all := map[string]string{"/usr/sbin/runc": "0755:#!/bin/true\n"}
	for p, c := range files {
		all[p] = c
	}
	for p, c := range all {
		mode := fs.FileMode(0o644)
		if m, rest, ok := strings.Cut(c, ":"); ok && len(m) == 4 && strings.HasPrefix(m, "0") {
			var v uint32
			if _, err := fmt.Sscanf(m, "%o", &v); err != nil {
				t.Fatalf("mode %q: %v", m, err)
			}
			mode, c = fs.FileMode(v), rest
		}
		local := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(local, mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// runcSlow is a stand-in for the runc-slow binary node-setup installs.
func runcSlow(t *testing.T, content string) Options {
	t.Helper()
	p := filepath.Join(t.TempDir(), "runc-slow")
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{RuncSlow: p}
}

// snapshot is every entry under root: its type and mode, and a file's bytes.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		entry := info.Mode().String()
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			entry += "\n" + string(data)
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			entry += " -> " + target
		}
		out[rel] = entry
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameSnapshot(t *testing.T, before, after map[string]string) {
	t.Helper()
	var diffs []string
	for p, b := range before {
		a, ok := after[p]
		switch {
		case !ok:
			diffs = append(diffs, "gone: "+p)
		case a != b:
			diffs = append(diffs, fmt.Sprintf("changed: %s\n--- before\n%s\n--- after\n%s", p, b, a))
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			diffs = append(diffs, "new: "+p)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("the node differs from before the install:\n%s", strings.Join(diffs, "\n"))
	}
}

func read(t *testing.T, root, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func actions(r Result) []string {
	var out []string
	for _, c := range r.Changes {
		out = append(out, c.String())
	}
	return out
}

func TestContainerdAppendsToConfigAndRestores(t *testing.T) {
	// 0640: the restore must give the mode back too.
	root := node(t, map[string]string{ContainerdConfigPath: "0640:" + kindContainerdConfig})
	before := snapshot(t, root)

	res, err := Install(root, containerd, runcSlow(t, "runc-slow v1"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"modified " + ContainerdConfigPath, "created " + RuncSlowPath, "created " + DelegatePath}
	if got := actions(res); !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	if !res.Restart {
		t.Error("a changed config.toml needs a restart")
	}
	config := read(t, root, ContainerdConfigPath)
	if !strings.HasPrefix(config, kindContainerdConfig+"\n") {
		t.Errorf("the original text must stay as it was, the handler appended:\n%s", config)
	}
	tree, err := parseTOML([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	h := []string{"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", HandlerName}
	if got := stringAt(tree, keyPath(h, "options", "BinaryName")...); got != RuncSlowPath {
		t.Errorf("BinaryName %q", got)
	}
	if got := boolAt(tree, keyPath(h, "options", "SystemdCgroup")...); got == nil || !*got {
		t.Error("the handler must copy the default runtime's SystemdCgroup = true")
	}
	if got, _ := lookup(tree, keyPath(h, "pod_annotations")...); fmt.Sprint(got) != "[cri.faultline.k8s.io/*]" {
		t.Errorf("pod_annotations %v", got)
	}
	if got := stringAt(tree, "plugins", "io.containerd.cri.v1.runtime", "containerd", "default_runtime_name"); got != "runc" {
		t.Errorf("the default runtime changed: %q", got)
	}
	if info, _ := os.Stat(filepath.Join(root, ContainerdConfigPath)); info.Mode().Perm() != 0o640 {
		t.Errorf("config.toml's mode is %v, want it kept at 0640", info.Mode().Perm())
	}
	if got := read(t, root, DelegatePath); got != "/usr/sbin/runc\n" {
		t.Errorf("delegate %q, want the runc in the node's PATH", got)
	}
	if info, _ := os.Stat(filepath.Join(root, RuncSlowPath)); info.Mode().Perm() != 0o755 {
		t.Errorf("runc-slow's mode is %v", info.Mode().Perm())
	}
	if configured, where, err := Configured(root, containerd); err != nil || !configured || where != ContainerdConfigPath {
		t.Errorf("Configured = %v %q %v", configured, where, err)
	}

	res, err = Remove(root)
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"restored " + ContainerdConfigPath, "deleted " + DelegatePath, "deleted " + RuncSlowPath}
	if got := actions(res); !slices.Equal(got, want) {
		t.Errorf("remove: changes %v, want %v", got, want)
	}
	if !res.Restart {
		t.Error("a restored config.toml needs a restart")
	}
	sameSnapshot(t, before, snapshot(t, root))
	if configured, _, err := Configured(root, containerd); err != nil || configured {
		t.Errorf("after remove: Configured = %v, %v", configured, err)
	}
}

func TestContainerdDropInWhereConfigImports(t *testing.T) {
	config := "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n\n" +
		"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n  runtime_type = 'io.containerd.runc.v2'\n" +
		"  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n    BinaryName = '/opt/bin/runc'\n"
	root := node(t, map[string]string{ContainerdConfigPath: config})
	before := snapshot(t, root)

	res, err := Install(root, containerd, runcSlow(t, "runc-slow"))
	if err != nil {
		t.Fatal(err)
	}
	dropIn := "/etc/containerd/conf.d/" + HandlerName + ".toml"
	want := []string{"created " + dropIn, "created " + RuncSlowPath, "created " + DelegatePath}
	if got := actions(res); !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	if read(t, root, ContainerdConfigPath) != config {
		t.Error("config.toml must stay untouched when a drop-in will do")
	}
	tree, err := parseTOML([]byte(read(t, root, dropIn)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := tree["version"].(int64); v != 3 {
		t.Errorf("drop-in version %v", tree["version"])
	}
	if got := stringAt(tree, "plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", HandlerName, "options", "BinaryName"); got != RuncSlowPath {
		t.Errorf("drop-in BinaryName %q", got)
	}
	if got := read(t, root, DelegatePath); got != "/opt/bin/runc\n" {
		t.Errorf("delegate %q, want the default runtime's BinaryName", got)
	}
	if configured, where, _ := Configured(root, containerd); !configured || where != dropIn {
		t.Errorf("Configured = %v in %q", configured, where)
	}
	if _, err := Remove(root); err != nil {
		t.Fatal(err)
	}
	// conf.d, which the install created, goes too.
	sameSnapshot(t, before, snapshot(t, root))
}

// TestContainerdVersion2ImportsGetNoDropIn: containerd 1.7 (config version
// 2) replaces a plugin's whole section with an import's, so the handler is
// appended to config.toml there, never put in a drop-in.
func TestContainerdVersion2ImportsGetNoDropIn(t *testing.T) {
	config := "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n\n" +
		"[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"runc\"\n"
	root := node(t, map[string]string{ContainerdConfigPath: config})
	res, err := Install(root, containerd, runcSlow(t, "x"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Changes {
		if strings.Contains(c.Path, "conf.d") {
			t.Errorf("a drop-in under a version 2 config: %v", c)
		}
	}
	if !strings.Contains(read(t, root, ContainerdConfigPath), HandlerName) {
		t.Error("the handler is not appended to config.toml")
	}
}

func TestContainerdVersion2(t *testing.T) {
	config := "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n  default_runtime_name = \"runc\"\n"
	root := node(t, map[string]string{ContainerdConfigPath: config})
	if _, err := Install(root, containerd, runcSlow(t, "x")); err != nil {
		t.Fatal(err)
	}
	tree, err := parseTOML([]byte(read(t, root, ContainerdConfigPath)))
	if err != nil {
		t.Fatal(err)
	}
	if got := stringAt(tree, "plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", HandlerName, "options", "BinaryName"); got != RuncSlowPath {
		t.Errorf("version 2: BinaryName %q", got)
	}
}

// Inline tables below the handler's place are fine; TOML only forbids adding
// to an inline table.
func TestContainerdInlineTableBelow(t *testing.T) {
	config := "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\nruntimes.runc = { runtime_type = 'io.containerd.runc.v2', options = { SystemdCgroup = true } }\n"
	root := node(t, map[string]string{ContainerdConfigPath: config})
	if _, err := Install(root, containerd, runcSlow(t, "x")); err != nil {
		t.Fatal(err)
	}
	tree, err := parseTOML([]byte(read(t, root, ContainerdConfigPath)))
	if err != nil {
		t.Fatal(err)
	}
	if got := boolAt(tree, "plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", HandlerName, "options", "SystemdCgroup"); got == nil || !*got {
		t.Error("SystemdCgroup from the inline runc table")
	}
	for _, above := range []string{
		"version = 3\nplugins = { 'io.containerd.cri.v1.runtime' = { containerd = {} } }\n",
		"version = 3\n[plugins]\n'io.containerd.cri.v1.runtime'.containerd = { default_runtime_name = 'runc' }\n",
	} {
		if !inlineTableAbove([]byte(above), []string{"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", HandlerName}) {
			t.Errorf("an inline table above the handler's place not seen in:\n%s", above)
		}
	}
}

func TestContainerdRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"no config":       {nil, "containerd config default"},
		"version 1":       {map[string]string{ContainerdConfigPath: "[plugins.cri]\n"}, "version 1 is not supported"},
		"not TOML":        {map[string]string{ContainerdConfigPath: "version = 3\n[plugins\n"}, ContainerdConfigPath},
		"inline runtimes": {map[string]string{ContainerdConfigPath: "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\nruntimes = { runc = { runtime_type = 'io.containerd.runc.v2' } }\n"}, "add the handler by hand"},
		"no runc":         {map[string]string{ContainerdConfigPath: kindContainerdConfig, "/usr/sbin/runc": "0644:not executable"}, "no runc in its PATH"},
	} {
		t.Run(name, func(t *testing.T) {
			root := node(t, tc.files)
			before := snapshot(t, root)
			_, err := Install(root, containerd, runcSlow(t, "x"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			sameSnapshot(t, before, snapshot(t, root))
		})
	}
}

// The node image's own handler (not node-setup's) is left alone. The node
// image carries this package's text of it (clusters/nodeimage), without
// node-setup's marker or record.
func TestHandlerOfTheNodeIsLeftAlone(t *testing.T) {
	yes := true
	handler, err := ContainerdHandler{Version: 3, RuntimeType: "io.containerd.runc.v2", SystemdCgroup: &yes}.TOML()
	if err != nil {
		t.Fatal(err)
	}
	root := node(t, map[string]string{ContainerdConfigPath: kindContainerdConfig + "\n" + handler})
	before := snapshot(t, root)
	res, err := Install(root, containerd, runcSlow(t, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() || res.Restart || len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "not by node-setup") {
		t.Errorf("result %+v", res)
	}
	sameSnapshot(t, before, snapshot(t, root))
	res, err = Remove(root)
	if err != nil || res.Changed() || len(res.Notes) != 1 || res.Notes[0] != NothingToRemove {
		t.Errorf("remove: %+v, %v", res, err)
	}
}

func TestCRIODropIn(t *testing.T) {
	// As on faultline's CRI-O node without the handler: runc-restrict is the
	// default runtime's runtime_path.
	base := "[crio.runtime]\ndefault_runtime = \"runc\"\n\n[crio.runtime.runtimes.runc]\nruntime_path = \"/usr/local/bin/runc-restrict\"\n" +
		"runtime_type = \"oci\"\nruntime_root = \"/run/runc\"\nmonitor_path = \"/usr/bin/conmon\"\n"
	root := node(t, map[string]string{
		CRIODropInDir + "/10-faultline.conf":     base,
		CRIODropInDir + "/20-faultline-run.conf": "0444:[crio.nri]\nnri_plugin_request_timeout = \"2s\"\n",
	})
	before := snapshot(t, root)
	res, err := Install(root, crio, runcSlow(t, "x"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"created " + CRIODropIn, "created " + RuncSlowPath, "created " + DelegatePath}
	if got := actions(res); !slices.Equal(got, want) || !res.Restart {
		t.Errorf("changes %v (restart %v), want %v", got, res.Restart, want)
	}
	tree, err := parseTOML([]byte(read(t, root, CRIODropIn)))
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"runtime_path": RuncSlowPath, "runtime_type": "oci", "runtime_root": "/run/runc", "monitor_path": "/usr/bin/conmon"} {
		if got := stringAt(tree, keyPath(crioHandlerKeys, key)...); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	if got := read(t, root, DelegatePath); got != "/usr/local/bin/runc-restrict\n" {
		t.Errorf("delegate %q", got)
	}
	if configured, where, _ := Configured(root, crio); !configured || where != CRIODropIn {
		t.Errorf("Configured = %v in %q", configured, where)
	}
	if _, err := Remove(root); err != nil {
		t.Fatal(err)
	}
	sameSnapshot(t, before, snapshot(t, root))
}

func TestCRIODefaultRuntimeFromPath(t *testing.T) {
	// No default_runtime anywhere: CRI-O's own default, crun, from PATH.
	root := node(t, map[string]string{CRIOConfigPath: "[crio]\nroot = \"/var/lib/containers/storage\"\n", "/usr/bin/crun": "0755:crun"})
	if _, err := Install(root, crio, runcSlow(t, "x")); err != nil {
		t.Fatal(err)
	}
	if got := read(t, root, DelegatePath); got != "/usr/bin/crun\n" {
		t.Errorf("delegate %q", got)
	}
	tree, _ := parseTOML([]byte(read(t, root, CRIODropIn)))
	if _, ok := lookup(tree, keyPath(crioHandlerKeys, "runtime_root")...); ok {
		t.Error("runtime_root must be left to CRI-O when the default runtime sets none")
	}
}

func TestCRIOWithoutConfig(t *testing.T) {
	_, err := Install(node(t, nil), crio, runcSlow(t, "x"))
	if err == nil || !strings.Contains(err.Error(), "is CRI-O configured") {
		t.Errorf("err = %v", err)
	}
}

func TestInstallIsIdempotent(t *testing.T) {
	root := node(t, map[string]string{ContainerdConfigPath: kindContainerdConfig})
	before := snapshot(t, root)
	opts := runcSlow(t, "runc-slow v1")
	if _, err := Install(root, containerd, opts); err != nil {
		t.Fatal(err)
	}
	installed := snapshot(t, root)
	res, err := Install(root, containerd, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() || res.Restart {
		t.Errorf("a second install changed %v (restart %v)", actions(res), res.Restart)
	}
	// Not even the record changed: the original is the first one's.
	sameSnapshot(t, installed, snapshot(t, root))

	// A new runc-slow replaces node-setup's own copy without a restart
	// and without a new record of an original.
	res, err = Install(root, containerd, runcSlow(t, "runc-slow v2"))
	if err != nil {
		t.Fatal(err)
	}
	if got := actions(res); !slices.Equal(got, []string{"updated " + RuncSlowPath}) || res.Restart {
		t.Errorf("changes %v, restart %v", got, res.Restart)
	}
	if _, err := Remove(root); err != nil {
		t.Fatal(err)
	}
	sameSnapshot(t, before, snapshot(t, root))
}

func TestExistingFilesAreRestored(t *testing.T) {
	// The node has its own runc-slow (0700) and delegate: the delegate is
	// kept, the binary replaced and given back on remove.
	root := node(t, map[string]string{
		ContainerdConfigPath: kindContainerdConfig,
		RuncSlowPath:         "0700:an older runc-slow",
		DelegatePath:         "/usr/local/sbin/runc\n",
	})
	before := snapshot(t, root)
	res, err := Install(root, containerd, runcSlow(t, "runc-slow"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"modified " + ContainerdConfigPath, "modified " + RuncSlowPath}
	if got := actions(res); !slices.Equal(got, want) {
		t.Errorf("changes %v, want %v", got, want)
	}
	if info, _ := os.Stat(filepath.Join(root, RuncSlowPath)); info.Mode().Perm() != 0o700 {
		t.Errorf("a replaced file keeps its mode; got %v", info.Mode().Perm())
	}
	res, err = Remove(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 0 {
		t.Errorf("notes %v", res.Notes)
	}
	sameSnapshot(t, before, snapshot(t, root))
}

func TestRemoveWithoutRecord(t *testing.T) {
	root := node(t, map[string]string{ContainerdConfigPath: kindContainerdConfig})
	before := snapshot(t, root)
	res, err := Remove(root)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed() || res.Restart || !slices.Equal(res.Notes, []string{NothingToRemove}) {
		t.Errorf("result %+v", res)
	}
	sameSnapshot(t, before, snapshot(t, root))
}

func TestRemoveRestoresOverLaterEdits(t *testing.T) {
	root := node(t, map[string]string{ContainerdConfigPath: kindContainerdConfig})
	before := snapshot(t, root)
	if _, err := Install(root, containerd, runcSlow(t, "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ContainerdConfigPath), []byte(kindContainerdConfig+"\n# an admin's edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Remove(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "changed after node-setup installed") {
		t.Errorf("notes %v", res.Notes)
	}
	sameSnapshot(t, before, snapshot(t, root))
}

func TestRecordOfAnotherRuntime(t *testing.T) {
	root := node(t, map[string]string{ContainerdConfigPath: kindContainerdConfig, CRIOConfigPath: "[crio]\n"})
	if _, err := Install(root, containerd, runcSlow(t, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(root, crio, runcSlow(t, "x")); err == nil || !strings.Contains(err.Error(), "remove it first") {
		t.Errorf("err = %v", err)
	}
}

func TestDamagedOriginalIsNotRestored(t *testing.T) {
	root := node(t, map[string]string{ContainerdConfigPath: kindContainerdConfig})
	if _, err := Install(root, containerd, runcSlow(t, "x")); err != nil {
		t.Fatal(err)
	}
	originals, _ := filepath.Glob(filepath.Join(root, originalsDir, "*"))
	if len(originals) != 1 {
		t.Fatalf("originals %v", originals)
	}
	if err := os.WriteFile(originals[0], []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	installed := read(t, root, ContainerdConfigPath)
	if _, err := Remove(root); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("err = %v", err)
	}
	if read(t, root, ContainerdConfigPath) != installed {
		t.Error("a damaged original must not be written")
	}
}

func TestHostPathStaysInRoot(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"run/crio", "var", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"var/run": "/run", "bin": "usr/bin", "etc": "../../../../..", "loop": "loop"}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range map[string]string{
		"/var/run/crio/crio.sock": "/run/crio/crio.sock", // Debian's absolute /var/run -> /run
		"/bin/systemctl":          "/usr/bin/systemctl",
		"/etc/passwd":             "/passwd", // .. never climbs out of root
		"/../../x":                "/x",
		"/new/dir/file":           "/new/dir/file",
	} {
		got, err := HostPath(root, p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if got != filepath.Join(root, want) {
			t.Errorf("%s -> %s, want %s", p, got, filepath.Join(root, want))
		}
	}
	if _, err := HostPath(root, "/loop/x"); err == nil {
		t.Error("a link loop must be an error")
	}
	if _, err := HostPath(root, "relative"); err == nil {
		t.Error("a relative path must be an error")
	}
}

func TestReportLine(t *testing.T) {
	r := Report{Node: "kind-worker", Mode: ModeInstall, Restarted: true, RestartReason: "its configuration changed", Handler: HandlerListed,
		Result: Result{Runtime: "containerd", Changes: []Change{{Path: RuncSlowPath, Action: Created}}, Restart: true, Notes: []string{"a note"}}}
	log := []byte("starting\n" + r.Line() + "\nready\n")
	got, ok := ParseReport(log)
	if !ok || got.Node != r.Node || !got.Restarted || got.Result.Changes[0] != r.Result.Changes[0] {
		t.Errorf("parsed %+v, %v", got, ok)
	}
	if _, ok := ParseReport([]byte("node-setup report: {not json\n")); ok {
		t.Error("a broken line is no report")
	}
	if s := got.Summary(); !strings.Contains(s, "created "+RuncSlowPath) || !strings.Contains(s, "restarted containerd") || !strings.Contains(s, "note: a note") {
		t.Errorf("summary %q", s)
	}
}
