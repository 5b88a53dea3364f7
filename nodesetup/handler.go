package nodesetup

// The faultline-slow runtime handler's configuration text, for each runtime:
// the one place it is written. node-setup renders it into a node's runtime
// configuration; the node image's templates
// (clusters/nodeimage/nodefs/etc/containerd/config.toml.tmpl and
// runtimes/crio/etc/crio/crio.conf.d/10-faultline.conf.tmpl) take it from
// here (ContainerdHandler.TOML, CRIOHandler.TOML, through
// clusters/nodeimage's template functions).

import (
	"bytes"
	"fmt"
	"strings"
	"text/template"
)

const (
	// HandlerName is the runtime handler (and RuntimeClass) of runc-slow.
	HandlerName = "faultline-slow"
	// RuncSlowPath is where runc-slow lives on a node.
	RuncSlowPath = "/usr/local/bin/runc-slow"
	// DelegatePath names the real OCI runtime runc-slow execs (fakes/runcslow/cmd/runc-slow).
	DelegatePath = "/etc/faultline/runc-slow.delegate"
	// AnnotationPrefix starts every annotation runc-slow reads
	// (fakes/runcslow/ociruntime); containerd passes on only the annotations
	// its handler lists.
	AnnotationPrefix = "cri.faultline.k8s.io/"
)

// ContainerdHandler is the faultline-slow handler in a containerd config.
type ContainerdHandler struct {
	// Version is the config's version: 3 (containerd 2.x) or 2.
	Version int
	// RuntimeType is the shim, as the node's default runtime has it
	// (io.containerd.runc.v2).
	RuntimeType string
	// SystemdCgroup is the default runtime's option of that name; nil: unset.
	SystemdCgroup *bool
}

// containerdPlugin is the CRI runtime plugin's table of a config version.
func containerdPlugin(version int) (string, error) {
	switch version {
	case 3:
		return "io.containerd.cri.v1.runtime", nil
	case 2:
		return "io.containerd.grpc.v1.cri", nil
	}
	return "", fmt.Errorf("containerd config version %d is not supported (want 2 or 3)", version)
}

var containerdHandlerTemplate = template.Must(template.New("containerd").Parse(
	`# faultline-slow: runc behind runc-slow (fakes/runcslow/cmd/runc-slow), which delays the OCI
# create of a pod that asks for it in {{ .Prefix }} annotations. The
# CRI suite selects it per request (RuntimeClass faultline-slow). containerd
# passes only the annotations listed here into the OCI spec.
[plugins.'{{ .Plugin }}'.containerd.runtimes.{{ .Name }}]
  runtime_type = {{ .RuntimeType }}
  pod_annotations = [{{ .Annotations }}]
  container_annotations = [{{ .Annotations }}]
  [plugins.'{{ .Plugin }}'.containerd.runtimes.{{ .Name }}.options]
{{- if .SystemdCgroup }}
    SystemdCgroup = {{ .SystemdCgroup }}
{{- end }}
    BinaryName = {{ .BinaryName }}
`))

// TOML is the handler's tables, to append to a config of h.Version or to
// stand in a drop-in of its own (after a version line).
func (h ContainerdHandler) TOML() (string, error) {
	plugin, err := containerdPlugin(h.Version)
	if err != nil {
		return "", err
	}
	runtimeType := h.RuntimeType
	if runtimeType == "" {
		runtimeType = "io.containerd.runc.v2"
	}
	systemd := ""
	if h.SystemdCgroup != nil {
		systemd = fmt.Sprint(*h.SystemdCgroup)
	}
	var out bytes.Buffer
	err = containerdHandlerTemplate.Execute(&out, map[string]string{
		"Prefix":        AnnotationPrefix,
		"Plugin":        plugin,
		"Name":          HandlerName,
		"RuntimeType":   tomlString(runtimeType),
		"Annotations":   tomlString(AnnotationPrefix + "*"),
		"SystemdCgroup": systemd,
		"BinaryName":    tomlString(RuncSlowPath),
	})
	return out.String(), err
}

// CRIOHandler is the faultline-slow handler in a CRI-O config.
type CRIOHandler struct {
	// RuntimeRoot and MonitorPath are the default runtime's, where it sets
	// them; empty: left to CRI-O.
	RuntimeRoot string
	MonitorPath string
}

var crioHandlerTemplate = template.Must(template.New("crio").Parse(
	`# faultline-slow: runc-slow (fakes/runcslow/cmd/runc-slow) delays the OCI create of a pod that
# asks for it in {{ .Prefix }} annotations, then execs the node's OCI
# runtime ({{ .Delegate }}). The CRI suite selects it per request
# (RuntimeClass faultline-slow). CRI-O copies a sandbox's annotations into its
# containers' OCI specs.
[crio.runtime.runtimes.{{ .Name }}]
runtime_path = {{ .RuntimePath }}
runtime_type = "oci"
{{- if .RuntimeRoot }}
runtime_root = {{ .RuntimeRoot }}
{{- end }}
{{- if .MonitorPath }}
monitor_path = {{ .MonitorPath }}
{{- end }}
`))

// TOML is the handler's table.
func (h CRIOHandler) TOML() (string, error) {
	quote := func(s string) string {
		if s == "" {
			return ""
		}
		return tomlString(s)
	}
	var out bytes.Buffer
	err := crioHandlerTemplate.Execute(&out, map[string]string{
		"Prefix":      AnnotationPrefix,
		"Delegate":    DelegatePath,
		"Name":        HandlerName,
		"RuntimePath": tomlString(RuncSlowPath),
		"RuntimeRoot": quote(h.RuntimeRoot),
		"MonitorPath": quote(h.MonitorPath),
	})
	return out.String(), err
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
