package controls

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/faultline-k8s/faultline/vocab/fakemodes"
	"github.com/faultline-k8s/faultline/vocab/versions"
)

// patchFlags is the faultline e2e option that applies a patch series to
// each component a mutant patches (Control.PatchOf).
var patchFlags = map[string]string{
	"kubernetes": "--kubernetes-patch",
	"containerd": "--containerd-patch",
	"crio":       "--crio-patch",
	"nri":        "--nri-patch",
}

var (
	nriReleasePart        = regexp.MustCompile(`^nri-(v[0-9]+\.[0-9]+\.[0-9]+)$`)
	containerdReleasePart = regexp.MustCompile(`^containerd-(v[0-9]+\.[0-9]+\.[0-9]+)$`)
)

// E2EArgs are the arguments of faultline e2e that build and run mutant or
// fake mode c's stack, on the suite of its requirement's area (every suite
// for faultline's own): the runtime and Kubernetes release of its stack,
// and each part of its variant in order, a release (nri-v0.12.5,
// containerd-v2.3.7), a fake mode (fake-dra-first-device-only) or a patch
// series under root/clusters/patches of the component the mutant patches
// (a base series such as kep-5322 first, the mutant's own last).
func (c Control) E2EArgs(root, area string) ([]string, error) {
	if c.Kind != Mutant && c.Kind != FakeMode {
		return nil, fmt.Errorf("a %s is no build of faultline's", c.Kind)
	}
	flag, patchable := patchFlags[c.PatchOf]
	if !patchable && c.Kind == Mutant {
		return nil, fmt.Errorf("patchOf %q: want one of kubernetes, containerd, crio, nri", c.PatchOf)
	}
	base, variant, _ := strings.Cut(c.Stack, "+")
	i := strings.LastIndex(base, "-")
	runtime, minor := base[:i], base[i+1:]
	kube := c.Kubernetes
	if kube == "" {
		for _, v := range versions.Kubernetes() {
			if versions.Minor(v) == minor {
				kube = v
			}
		}
		if kube == "" {
			return nil, fmt.Errorf("no pinned Kubernetes release of %s", minor)
		}
	}
	args := []string{"--runtime", runtime, "--kubernetes-version", kube}
	if area != "faultline" {
		args = append(args, "--suite", area)
	}
	for _, part := range strings.Split(variant, "+") {
		if m := nriReleasePart.FindStringSubmatch(part); m != nil {
			args = append(args, "--nri-version", m[1])
			continue
		}
		if m := containerdReleasePart.FindStringSubmatch(part); m != nil {
			args = append(args, "--containerd-version", m[1])
			continue
		}
		if mode, ok := fakemodes.FromVariantPart(part); ok {
			args = append(args, "--fake-mode", mode)
			continue
		}
		if !patchable {
			return nil, fmt.Errorf("variant part %s: a %s patches nothing; want a release or a fake mode", part, c.Kind)
		}
		patches, err := filepath.Glob(filepath.Join(root, "clusters", "patches", part, "[0-9][0-9][0-9][0-9]-*.patch"))
		if err != nil || len(patches) == 0 {
			return nil, fmt.Errorf("variant part %s: no release, and no patch series clusters/patches/%s", part, part)
		}
		slices.Sort(patches)
		for _, p := range patches {
			args = append(args, flag, p)
		}
	}
	if c.Kind == Mutant {
		if _, err := os.Stat(filepath.Join(root, c.Patch)); err != nil {
			return nil, err
		}
	}
	return args, nil
}
