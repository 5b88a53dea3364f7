package nodesetup

import (
	"reflect"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/clusters/nodeimage"
	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// nodeImageFile is one of the node image's config files, as the node
// image builder renders it.
func nodeImageFile(t *testing.T, runtime, nodePath string) string {
	t.Helper()
	data, err := nodeimage.NodeFile(runtimes.MustLookup(runtime), nodePath, "registry.k8s.io/pause:3.10.2")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestHandlerAsInTheNodeImage: until the node image's templates take the
// handler's text from here, the two must configure the same handler.
func TestHandlerAsInTheNodeImage(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		runtime, file string
		text          func() (string, error)
		keys          []string
	}{
		{
			"containerd", "etc/containerd/config.toml",
			ContainerdHandler{Version: 3, RuntimeType: "io.containerd.runc.v2", SystemdCgroup: &yes}.TOML,
			[]string{"plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", HandlerName},
		},
		{
			"crio", "etc/crio/crio.conf.d/10-faultline.conf",
			CRIOHandler{RuntimeRoot: "/run/runc", MonitorPath: "/usr/bin/conmon"}.TOML,
			crioHandlerKeys,
		},
	} {
		image, err := parseTOML([]byte(nodeImageFile(t, tc.runtime, tc.file)))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		text, err := tc.text()
		if err != nil {
			t.Fatal(err)
		}
		ours, err := parseTOML([]byte(text))
		if err != nil {
			t.Fatalf("the handler's text does not parse: %v\n%s", err, text)
		}
		want, _ := lookup(image, tc.keys...)
		got, _ := lookup(ours, tc.keys...)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s configures the handler as\n%v\nnode-setup as\n%v", tc.file, want, got)
		}
		if !strings.Contains(text, "# faultline-slow:") {
			t.Errorf("the handler's text lost its comment:\n%s", text)
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
