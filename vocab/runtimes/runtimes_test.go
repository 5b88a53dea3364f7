package runtimes

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func names(rts []Runtime) []string {
	out := make([]string, len(rts))
	for i, r := range rts {
		out[i] = r.Name
	}
	return out
}

func TestLookup(t *testing.T) {
	for in, want := range map[string]string{
		"":            Default,
		"containerd":  "containerd",
		"Containerd":  "containerd",
		" crio ":      "crio",
		"CRIO":        "crio",
		"cri-o":       "crio",
		"CRI-O":       "crio",
		"containerd ": "containerd",
	} {
		r, err := Lookup(in)
		if err != nil || r.Name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", in, r.Name, err, want)
		}
	}
	for _, in := range []string{"rkt", "docker", "all", "cri"} {
		_, err := Lookup(in)
		if err == nil || !strings.Contains(err.Error(), `unknown runtime "`+in+`"`) || !strings.Contains(err.Error(), "known: containerd, crio") {
			t.Errorf("Lookup(%q) err = %v", in, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustLookup of an unknown runtime does not panic")
		}
	}()
	MustLookup("rkt")
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want []string
	}{
		{nil, []string{Default}},
		{[]string{"crio"}, []string{"crio"}},
		{[]string{"all"}, []string{"containerd", "crio"}},
		{[]string{"ALL"}, []string{"containerd", "crio"}},
		{[]string{"crio,containerd"}, []string{"containerd", "crio"}},     // order follows All
		{[]string{"crio", "containerd"}, []string{"containerd", "crio"}},  // repeated flag
		{[]string{"crio,cri-o", "CRIO"}, []string{"crio"}},                // duplicates collapse
		{[]string{" crio , containerd "}, []string{"containerd", "crio"}}, // spaces
		{[]string{"all,crio"}, []string{"containerd", "crio"}},
	} {
		got, err := Parse(c.in...)
		if err != nil || !reflect.DeepEqual(names(got), c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, names(got), err, c.want)
		}
	}
	for _, in := range [][]string{{"rkt"}, {"crio,rkt"}, {"crio,"}, {""}, {"containerd", ""}} {
		if got, err := Parse(in...); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, names(got))
		}
	}
	if _, err := Parse("crio,rkt"); err == nil || !strings.Contains(err.Error(), `"rkt"`) || !strings.Contains(err.Error(), "or all") {
		t.Errorf("Parse err = %v", err)
	}
}

func TestFromNode(t *testing.T) {
	for in, want := range map[string][2]string{
		"containerd://2.4.2":  {"containerd", "2.4.2"},
		"containerd://v2.4.2": {"containerd", "v2.4.2"},
		"cri-o://1.36.2":      {"crio", "1.36.2"},
		"crio://1.36.2":       {"crio", "1.36.2"},
	} {
		r, v, err := FromNode(in)
		if err != nil || r.Name != want[0] || v != want[1] {
			t.Errorf("FromNode(%q) = %q, %q, %v; want %v", in, r.Name, v, err, want)
		}
	}
	for _, in := range []string{"", "containerd", "://1.0", "docker://24.0.0"} {
		if r, _, err := FromNode(in); err == nil {
			t.Errorf("FromNode(%q) = %q, want an error", in, r.Name)
		}
	}
}

// The entries are consistent: names unique across runtimes, the fields the
// rest of faultline relies on set, the files they name present.
func TestEntries(t *testing.T) {
	seen := map[string]string{}
	for _, r := range All() {
		for _, n := range append([]string{r.Name, r.NodeName}, r.Aliases...) {
			if n != strings.ToLower(n) {
				t.Errorf("%s: name %q is not lower case (Lookup lower-cases)", r.Name, n)
			}
			if other, ok := seen[n]; ok && other != r.Name {
				t.Errorf("name %q is both %s and %s", n, other, r.Name)
			}
			seen[n] = r.Name
		}
		if r.Name == "all" {
			t.Error(`"all" is Parse's word for every runtime`)
		}
		if !strings.HasPrefix(r.CRISocket, "unix:///") || r.Process == "" || r.VersionPin == "" || r.KindConfig == "" || r.RunConfig == "" || r.Images == "" {
			t.Errorf("%s: incomplete entry %+v", r.Name, r)
		}
		if got := r.SocketPath(); !strings.HasPrefix(got, "/") || strings.Contains(got, "unix:") {
			t.Errorf("%s: SocketPath = %q", r.Name, got)
		}
		for _, f := range []string{r.KindConfig, r.RunConfig} {
			if _, err := os.Stat(filepath.Join("..", "..", "clusters", "kindcluster", "configs", f)); err != nil {
				t.Errorf("%s: %v", r.Name, err)
			}
		}
		if r.NodeFilesDir != "" {
			if _, err := os.Stat(filepath.Join("..", "..", "clusters", "nodeimage", "runtimes", r.NodeFilesDir)); err != nil {
				t.Errorf("%s: NodeFilesDir: %v", r.Name, err)
			}
		}
	}
	if _, err := Lookup(Default); err != nil {
		t.Errorf("Default: %v", err)
	}
	if got := names(All()); !reflect.DeepEqual(got, Names()) {
		t.Errorf("Names = %v, All = %v", Names(), got)
	}
	// All returns a copy.
	All()[0].Name = "changed"
	if all[0].Name == "changed" {
		t.Error("All() hands out the table itself")
	}
}

func TestSkew(t *testing.T) {
	crio, _ := Lookup("crio")
	containerd, _ := Lookup("containerd")
	for _, tc := range []struct {
		rt            Runtime
		runtime, kube string
		skew          bool
	}{
		{crio, "1.36.3", "v1.37.2", true},
		{crio, "1.36.2", "v1.36.3", false},
		{crio, "", "v1.37.2", false},
		{containerd, "2.4.2", "v1.37.2", false},
	} {
		got := tc.rt.Skew(tc.runtime, tc.kube)
		if (got != "") != tc.skew {
			t.Errorf("%s %s with %s: skew %q", tc.rt.Name, tc.runtime, tc.kube, got)
		}
	}
}
