// Package nodeimage builds kind node images without any registry: a Debian root
// filesystem with systemd, the kubelet and kubeadm built from the pinned Kubernetes
// module, containerd, runc, CNI plugins, and every image kubeadm needs, built
// locally and preloaded into the runtime's store.
//
// Every expensive step is cached by a key of what goes into it (versions, build
// flags, the Go toolchain, the node files), so a second build with the same
// versions does nothing, and a change rebuilds only what it touches.
package nodeimage

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
	"strings"
)

// StepKind says what a step produces.
type StepKind string

const (
	StepGoBinaries StepKind = "go-binaries" // binaries in a cache directory
	StepBaseImage  StepKind = "base-image"  // the Debian root filesystem as an image
	StepNodeImage  StepKind = "node-image"  // the final kind node image
)

// Step is one unit of cached work.
type Step struct {
	Kind   StepKind
	Name   string
	Key    string // content key of everything the step's output depends on
	Output string // where the output lives: a directory or an image reference
	Cached bool   // the output exists for this key and will be reused
}

// Cache answers whether an output already exists.
type Cache interface {
	HasDir(path string) bool
	HasImage(ref string) bool
}

// Plan is the ordered list of steps of one build.
type Plan struct {
	Steps []Step
}

// NodeImage returns the final image reference.
func (p Plan) NodeImage() string {
	for _, s := range p.Steps {
		if s.Kind == StepNodeImage {
			return s.Output
		}
	}
	return ""
}

// ToRun lists the names of the steps that will do work.
func (p Plan) ToRun() []string {
	var names []string
	for _, s := range p.Steps {
		if !s.Cached {
			names = append(names, s.Name)
		}
	}
	return names
}

// Print writes the plan as a table, for the build log.
func (p Plan) Print(w io.Writer) {
	for _, s := range p.Steps {
		state := "build"
		if s.Cached {
			state = "cached"
		}
		fmt.Fprintf(w, "  %-7s %-12s %s\n", state, s.Name, s.Output)
	}
}

// hashKey makes a short, stable key from labelled parts.
func hashKey(parts map[string]string) string {
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, parts[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// componentKey covers everything that changes a component's binaries.
// sourceID identifies a local source tree's state ("" for a pinned module).
func componentKey(c GoComponent, goVersion, sourceID string) string {
	parts := map[string]string{
		"name":     c.Name,
		"module":   c.Module,
		"version":  c.Version,
		"source":   sourceID,
		"packages": strings.Join(c.Packages, ","),
		"names":    strings.Join(c.Names, ","),
		"cgo":      fmt.Sprint(c.CGO),
		"tags":     strings.Join(c.Tags, ","),
		"ldflags":  strings.Join(c.LDFlags, " "),
		"go":       goVersion,
	}
	// Only when set, so that the keys of components without them stay as they were.
	if len(c.Replaces) > 0 {
		var rs []string
		for _, r := range c.Replaces {
			rs = append(rs, r.String())
		}
		parts["replaces"] = strings.Join(rs, ";")
	}
	if len(c.Env) > 0 {
		parts["env"] = strings.Join(c.Env, " ")
	}
	if len(c.CPrograms) > 0 {
		var ps []string
		for _, name := range sortedKeys(c.CPrograms) {
			ps = append(ps, name+"="+c.CPrograms[name])
		}
		parts["cprograms"] = strings.Join(ps, ",")
	}
	return hashKey(parts)
}
