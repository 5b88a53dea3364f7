// Package gomod writes the small, throwaway Go modules the node image builder
// compiles third-party components in (Kubernetes, containerd, etcd, CoreDNS), and
// the k8s.io staging replace directives those modules and faultline's own go.mod need.
package gomod

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/faultline-k8s/faultline/vocab/versions"
)

// Replace is one replace directive: Old => New (at Version, unless New is a directory).
type Replace struct {
	Old     string
	New     string
	Version string
}

func (r Replace) String() string {
	if r.Version == "" {
		return fmt.Sprintf("%s => %s", r.Old, r.New)
	}
	return fmt.Sprintf("%s => %s %s", r.Old, r.New, r.Version)
}

// StagingReplaces reads a k8s.io/kubernetes release's go.mod and returns, for each
// staging module it requires at v0.0.0 (it resolves them through ./staging
// replaces of its own, which do not apply to a module that imports it), a replace
// to the published tag of that release. With srcDir set, they point into a local
// Kubernetes checkout's staging directory instead.
func StagingReplaces(releaseGoMod []byte, kubernetesVersion, srcDir string) ([]Replace, error) {
	f, err := modfile.ParseLax("go.mod", releaseGoMod, nil)
	if err != nil {
		return nil, fmt.Errorf("parse Kubernetes go.mod: %w", err)
	}
	if f.Module == nil || f.Module.Mod.Path != "k8s.io/kubernetes" {
		return nil, fmt.Errorf("not the go.mod of k8s.io/kubernetes")
	}
	tag := versions.StagingVersionOf(kubernetesVersion)
	var out []Replace
	for _, req := range f.Require {
		if !strings.HasPrefix(req.Mod.Path, "k8s.io/") || req.Mod.Version != "v0.0.0" {
			continue
		}
		if srcDir != "" {
			out = append(out, Replace{Old: req.Mod.Path, New: filepath.Join(srcDir, "staging", "src", req.Mod.Path)})
			continue
		}
		out = append(out, Replace{Old: req.Mod.Path, New: req.Mod.Path, Version: tag})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("the Kubernetes go.mod requires no k8s.io module at v0.0.0: not a release go.mod?")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Old < out[j].Old })
	return out, nil
}

// Module describes a throwaway module that exists only to build Packages from
// Require (at Version, or from the local directory Source).
type Module struct {
	Require  string
	Version  string
	Source   string
	Replaces []Replace
	// Also are further requirements (path => version): a dependency a
	// replace by a directory stands for, at the release the directory was
	// made from, so that the module graph and the binary's build
	// information name that release.
	Also map[string]string
}

// GoMod renders the module's go.mod.
func (m Module) GoMod(goVersion string) ([]byte, error) {
	f := &modfile.File{}
	if err := f.AddModuleStmt("faultline.local/build"); err != nil {
		return nil, err
	}
	if err := f.AddGoStmt(goVersion); err != nil {
		return nil, err
	}
	version := m.Version
	if m.Source != "" {
		// A local tree stands in for the pinned module; the required version is
		// only a placeholder the replace overrides.
		version = "v0.0.0-00010101000000-000000000000"
		if major := majorSuffix(m.Require); major != "" {
			version = major + ".0.0-00010101000000-000000000000"
		}
		if err := f.AddReplace(m.Require, "", m.Source, ""); err != nil {
			return nil, err
		}
	}
	if err := f.AddRequire(m.Require, version); err != nil {
		return nil, err
	}
	for _, path := range slices.Sorted(maps.Keys(m.Also)) {
		if err := f.AddRequire(path, m.Also[path]); err != nil {
			return nil, err
		}
	}
	for _, r := range m.Replaces {
		if err := f.AddReplace(r.Old, "", r.New, r.Version); err != nil {
			return nil, err
		}
	}
	f.Cleanup()
	return f.Format()
}

// majorSuffix returns "v2" for "example.com/x/v2", "" for a v0/v1 path.
func majorSuffix(path string) string {
	_, major, ok := module.SplitPathVersion(path)
	if !ok || major == "" {
		return ""
	}
	return strings.TrimPrefix(major, "/")
}

// Write creates the module in dir (go.mod, plus a tools.go that imports the
// packages to build, so that `go mod tidy` keeps what they need) and resolves its
// dependencies.
func (m Module) Write(dir, goVersion string, packages []string, env []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod, err := m.GoMod(goVersion)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		return err
	}
	var tools strings.Builder
	tools.WriteString("//go:build tools\n\n// Package tools pins the packages this throwaway module builds.\npackage tools\n\nimport (\n")
	for _, p := range packages {
		fmt.Fprintf(&tools, "\t_ %q\n", p)
	}
	tools.WriteString(")\n")
	if err := os.WriteFile(filepath.Join(dir, "tools.go"), []byte(tools.String()), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("go", "mod", "tidy")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod tidy in %s: %w\n%s", dir, err, out)
	}
	return nil
}

// Downloaded is where go mod download put a module version.
type Downloaded struct {
	// Dir is its source; GoMod its go.mod file.
	Dir, GoMod string
}

// Download fetches a module version through the module proxy (or the
// module cache).
func Download(ctx context.Context, module, version string) (Downloaded, error) {
	out, err := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version).Output()
	var info struct{ Dir, GoMod, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil {
		return Downloaded{}, fmt.Errorf("go mod download %s@%s: %v", module, version, errors.Join(err, jerr))
	}
	if info.Error != "" || info.Dir == "" || info.GoMod == "" {
		return Downloaded{}, fmt.Errorf("go mod download %s@%s: %s (is it a release the module proxy serves?)", module, version, info.Error)
	}
	return Downloaded{Dir: info.Dir, GoMod: info.GoMod}, nil
}

// DownloadGoMod fetches a module version's go.mod and returns its content.
func DownloadGoMod(ctx context.Context, module, version string) ([]byte, error) {
	d, err := Download(ctx, module, version)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(d.GoMod)
}

// RequiredVersion is the version a go.mod file requires of module.
func RequiredVersion(goMod, module string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", err
	}
	f, err := modfile.ParseLax(goMod, data, nil)
	if err != nil {
		return "", err
	}
	for _, r := range f.Require {
		if r.Mod.Path == module {
			return r.Mod.Version, nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", goMod, module)
}
