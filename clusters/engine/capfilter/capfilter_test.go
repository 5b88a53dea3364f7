package capfilter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestMissing(t *testing.T) {
	// 000001fffeffffff: every capability but bit 24, CAP_SYS_RESOURCE.
	got, err := Missing("000001fffeffffff")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"CAP_SYS_RESOURCE"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Missing = %v, want %v", got, want)
	}
	if got, _ := Missing("000001ffffffffff"); len(got) != 0 {
		t.Fatalf("full set: Missing = %v, want none", got)
	}
	if _, err := Missing("zz"); err == nil {
		t.Fatal("want an error for a malformed CapBnd")
	}
}

func TestFilesToRewrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"create with bundle", []string{"--root", "/r", "--log", "/l", "create", "--bundle", "/b", "id"}, []string{"/b/config.json"}},
		{"create with bundle=", []string{"create", "--bundle=/b2", "id"}, []string{"/b2/config.json"}},
		{"run in working dir", []string{"run", "id"}, []string{"/wd/config.json"}},
		{"exec with process", []string{"--root", "/r", "exec", "--process", "/tmp/p.json", "--detach", "id"}, []string{"/tmp/p.json"}},
		{"exec without process", []string{"exec", "id", "ls"}, nil},
		{"exec's own command line is not runc's", []string{"exec", "id", "sh", "--process", "/x.json"}, nil},
		{"shim exec", []string{"--root", "/r", "--log", "/l", "--log-format", "json", "exec", "--process", "/tmp/runc-process1", "--pid-file", "/p", "--detach", "id"}, []string{"/tmp/runc-process1"}},
		{"a global value named like a command", []string{"--root", "run", "start", "id"}, nil},
		{"start needs nothing", []string{"start", "id"}, nil},
		{"delete needs nothing", []string{"delete", "--force", "id"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FilesToRewrite(tc.args, "/wd"); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("FilesToRewrite(%v) = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

func TestRewriteFileDropsOnlyMissingCapabilities(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	in := `{"ociVersion":"1.0.2","process":{"args":["sh"],"capabilities":{
		"bounding":["CAP_CHOWN","CAP_SYS_RESOURCE"],"effective":["CAP_SYS_RESOURCE"],
		"permitted":["CAP_CHOWN"]}},"hostname":"node"}`
	if err := os.WriteFile(config, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RewriteFile(config, []string{"CAP_SYS_RESOURCE"}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hostname string
		Process  struct {
			Args         []string
			Capabilities map[string][]string
		}
	}
	data, _ := os.ReadFile(config)
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"bounding": {"CAP_CHOWN"}, "effective": {}, "permitted": {"CAP_CHOWN"}}
	if !reflect.DeepEqual(got.Process.Capabilities, want) {
		t.Fatalf("capabilities = %v, want %v", got.Process.Capabilities, want)
	}
	if got.Hostname != "node" || !reflect.DeepEqual(got.Process.Args, []string{"sh"}) {
		t.Fatalf("other fields changed: %s", data)
	}
	if info, _ := os.Stat(config); info.Mode().Perm() != 0o600 {
		t.Fatalf("mode changed to %v", info.Mode().Perm())
	}
}

func TestRewriteProcessFileAtTopLevel(t *testing.T) {
	out, changed, err := Rewrite([]byte(`{"args":["ls"],"capabilities":{"bounding":["CAP_SYS_RESOURCE","CAP_KILL"]}}`), []string{"CAP_SYS_RESOURCE"})
	if err != nil || !changed {
		t.Fatalf("Rewrite: changed=%v err=%v", changed, err)
	}
	if string(out) != `{"args":["ls"],"capabilities":{"bounding":["CAP_KILL"]}}` {
		t.Fatalf("Rewrite = %s", out)
	}
	if _, changed, _ := Rewrite([]byte(`{"capabilities":{"bounding":["CAP_KILL"]}}`), []string{"CAP_SYS_RESOURCE"}); changed {
		t.Fatal("nothing to drop must leave the file alone")
	}
}

func TestClampOOMScoreAdj(t *testing.T) {
	for _, tc := range []struct {
		in      string
		min     int
		want    string
		changed bool
	}{
		{`{"ociVersion":"1.0","process":{"oomScoreAdj":-998,"args":["/pause"]}}`, 0, `"oomScoreAdj":0`, true},
		{`{"process":{"oomScoreAdj":-997}}`, -500, `"oomScoreAdj":-500`, true},
		{`{"process":{"oomScoreAdj":1000}}`, 0, `"oomScoreAdj":1000`, false},
		{`{"process":{"args":["sh"]}}`, 0, `"args"`, false},
		{`{"oomScoreAdj":-998,"args":["sh"]}`, 0, `"oomScoreAdj":0`, true}, // exec's process.json
	} {
		out, changed, err := ClampOOMScoreAdj([]byte(tc.in), tc.min)
		if err != nil {
			t.Fatal(err)
		}
		if changed != tc.changed || !strings.Contains(string(out), tc.want) {
			t.Errorf("ClampOOMScoreAdj(%s, %d) = %s, %v; want %s, %v", tc.in, tc.min, out, changed, tc.want, tc.changed)
		}
	}
}
