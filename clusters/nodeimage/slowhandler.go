package nodeimage

// The faultline-slow runtime handler in the node image's runtime configs
// (nodefs/etc/containerd/config.toml.tmpl,
// runtimes/crio/etc/crio/crio.conf.d/10-faultline.conf.tmpl): nodesetup
// writes its text, for node-setup and for the node image alike, so that the
// two cannot drift apart.

import (
	"strings"
	"text/template"

	"k8s.io/utils/ptr"

	"github.com/faultline-k8s/faultline/nodesetup"
)

// The handler as each node image configures it: like the node's default
// runtime (runc) in the same file, so that the handler runs pods the way
// runc does apart from runc-slow's delays.
var (
	containerdSlowHandler = nodesetup.ContainerdHandler{Version: 3, RuntimeType: "io.containerd.runc.v2", SystemdCgroup: ptr.To(true)}
	crioSlowHandler       = nodesetup.CRIOHandler{RuntimeRoot: "/run/runc", MonitorPath: "/usr/bin/conmon"}
)

// templateFuncs are what the node files' templates call besides their
// values. The handler's text comes without its final newline: it stands on
// a template line of its own.
var templateFuncs = template.FuncMap{
	"containerdSlowHandler": func() (string, error) { return withoutFinalNewline(containerdSlowHandler.TOML()) },
	"crioSlowHandler":       func() (string, error) { return withoutFinalNewline(crioSlowHandler.TOML()) },
	"indent":                indent,
}

func withoutFinalNewline(text string, err error) (string, error) {
	return strings.TrimSuffix(text, "\n"), err
}

// indent puts n spaces before every line of text, to nest it in a section
// of the template that is indented (TOML does not care; readers do).
func indent(n int, text string) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(text, "\n", "\n"+pad)
}
