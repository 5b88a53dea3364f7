package nodesetup

import (
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
)

// TestHandlerText: the handler's text, as node-setup installs it and the
// node image carries it (clusters/nodeimage checks that it does), parses,
// keeps its comment, and has the handler's table where the runtime looks.
func TestHandlerText(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		runtime string
		text    func() (string, error)
		keys    []string
	}{
		{
			"containerd",
			ContainerdHandler{Version: 3, RuntimeType: "io.containerd.runc.v2", SystemdCgroup: &yes}.TOML,
			[]string{"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", HandlerName},
		},
		{"crio", CRIOHandler{RuntimeRoot: "/run/runc", MonitorPath: "/usr/bin/conmon"}.TOML, crioHandlerKeys},
	} {
		text, err := tc.text()
		if err != nil {
			t.Fatal(err)
		}
		tree, err := parseTOML([]byte(text))
		if err != nil {
			t.Fatalf("%s: the handler's text does not parse: %v\n%s", tc.runtime, err, text)
		}
		if _, ok := lookup(tree, tc.keys...); !ok {
			t.Errorf("%s: no table %v in\n%s", tc.runtime, tc.keys, text)
		}
		if !strings.Contains(text, "# "+HandlerName+":") {
			t.Errorf("%s: the handler's text lost its comment:\n%s", tc.runtime, text)
		}
	}
}

// TestAnnotationPrefix: containerd passes on only the annotations its
// handler lists, so the prefix must cover every annotation runc-slow reads.
func TestAnnotationPrefix(t *testing.T) {
	for _, a := range []string{ociruntime.SandboxDelayAnnotation, ociruntime.ContainerDelayAnnotation, ociruntime.RequestAnnotation} {
		if !strings.HasPrefix(a, AnnotationPrefix) {
			t.Errorf("runc-slow reads %s, which the handler's %s* does not pass on", a, AnnotationPrefix)
		}
	}
}

func TestTOMLString(t *testing.T) {
	for _, s := range []string{"plain", `quo"te`, `back\slash`, "new\nline", "tab\t\x7f\x00", "ünï"} {
		tree, err := parseTOML([]byte("k = " + tomlString(s)))
		if err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		if tree["k"] != s {
			t.Errorf("%q reads back as %q", s, tree["k"])
		}
	}
}

func TestContainerdDropInName(t *testing.T) {
	for imports, want := range map[string]string{
		"/etc/containerd/conf.d/*.toml":          "/etc/containerd/conf.d/faultline-slow.toml",
		"conf.d/*.toml":                          "/etc/containerd/conf.d/faultline-slow.toml",
		"/etc/containerd/conf.d/*":               "/etc/containerd/conf.d/faultline-slow",
		"/etc/containerd/conf.d/10-*.toml":       "/etc/containerd/conf.d/10-faultline-slow.toml",
		"/etc/containerd/extra.toml":             "",
		"/etc/containerd/*/x.toml":               "",
		"/etc/containerd/conf.d/[a-f]*.toml":     "",
		"/etc/containerd/one.toml|/etc/c/*.conf": "/etc/c/faultline-slow.conf",
	} {
		got, ok := containerdDropIn(strings.Split(imports, "|"))
		if got != want || ok != (want != "") {
			t.Errorf("imports %q: drop-in %q %v, want %q", imports, got, ok, want)
		}
	}
}
