package nodesetup

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzContainerdPlan: any config.toml (and drop-in) gives a plan or an error,
// never a panic, and a plan's config parses and configures the handler.
func FuzzContainerdPlan(f *testing.F) {
	f.Add([]byte(kindContainerdConfig), []byte(""))
	f.Add([]byte("version = 3\nimports = [\"conf.d/*.toml\"]\n"), []byte("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.faultline-slow]\n"))
	f.Add([]byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\nruntimes = 1\n"), []byte("x"))
	f.Add([]byte("version = 3\nimports = 7\n"), []byte(""))
	f.Add([]byte("version = 3\n[plugins]\n'io.containerd.cri.v1.runtime' = 'x'\n"), []byte(""))
	f.Fuzz(func(t *testing.T, config, dropIn []byte) {
		root := t.TempDir()
		write := func(p string, data []byte) {
			local := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(local, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write(ContainerdConfigPath, config)
		write("/etc/containerd/conf.d/other.toml", dropIn)
		p, err := containerdPlan(host{root}, false)
		if err != nil {
			return
		}
		for _, o := range p.Ops {
			cfg, err := parseContainerdConfig(o.Data)
			if err != nil {
				t.Fatalf("%s as planned does not parse: %v\n%s", o.Path, err, o.Data)
			}
			keys, err := cfg.handlerKeys()
			if err != nil {
				t.Fatal(err)
			}
			if stringAt(cfg.Tree, keyPath(keys, "options", "BinaryName")...) != RuncSlowPath {
				t.Fatalf("%s as planned lacks the handler:\n%s", o.Path, o.Data)
			}
		}
	})
}

// FuzzCRIOPlan: any CRI-O config gives a plan or an error, never a panic.
func FuzzCRIOPlan(f *testing.F) {
	f.Add([]byte("[crio.runtime]\ndefault_runtime = \"runc\"\n[crio.runtime.runtimes.runc]\nruntime_path = \"/x\"\nruntime_root = \"a\\\"b\"\n"))
	f.Add([]byte("[crio.runtime]\nruntimes = []\n"))
	f.Add([]byte("crio = 1\n"))
	f.Fuzz(func(t *testing.T, config []byte) {
		root := t.TempDir()
		local := filepath.Join(root, CRIODropInDir, "10-x.conf")
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(local, config, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := crioPlan(host{root}, false)
		if err != nil {
			return
		}
		for _, o := range p.Ops {
			tree, err := parseTOML(o.Data)
			if err != nil {
				t.Fatalf("%s as planned does not parse: %v\n%s", o.Path, err, o.Data)
			}
			if stringAt(tree, keyPath(crioHandlerKeys, "runtime_path")...) != RuncSlowPath {
				t.Fatalf("%s as planned lacks the handler:\n%s", o.Path, o.Data)
			}
		}
	})
}

// FuzzParseReport: any log gives a report or none, never a panic.
func FuzzParseReport(f *testing.F) {
	f.Add([]byte(Report{Mode: ModeInstall}.Line()))
	f.Add([]byte(ReportPrefix + `{"result": {"changes": 3}}`))
	f.Fuzz(func(t *testing.T, log []byte) {
		if r, ok := ParseReport(log); ok {
			_ = r.Summary()
		}
	})
}
