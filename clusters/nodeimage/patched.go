package nodeimage

// A pinned release with a vendor's patches applied, laid out as the
// project's checkout so that a patch written against its repository applies
// as it is: containerd's, CRI-O's or NRI's module as it is, Kubernetes' with
// its staging modules (as published at the release's staging tag) under
// staging/src/k8s.io/<name>. The builder compiles the tree as it would a
// --kubernetes-src or --containerd-src checkout; a patched dependency (NRI)
// is a replace to its tree.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/faultline-k8s/faultline/clusters/gomod"
)

// patchesKey identifies a patch series by the patches' contents, in order
// (their names do not matter: renaming a patch rebuilds nothing).
func patchesKey(patches []string) (string, error) {
	parts := map[string]string{}
	for i, p := range patches {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("patch: %w", err)
		}
		parts[fmt.Sprintf("%03d", i)] = string(data)
	}
	return hashKey(parts), nil
}

// checkPatches refuses patch files that cannot be read or are no patch.
func checkPatches(patches []string) error {
	for _, p := range patches {
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("patch: %w", err)
		}
		if !strings.Contains(string(data), "\n+++ ") && !strings.HasPrefix(string(data), "+++ ") {
			return fmt.Errorf("patch %s: not a unified diff (no +++ line)", p)
		}
	}
	return nil
}

// patchedTree returns the directory of module's release with patches
// applied, making it in the cache the first time (keyed by release and
// patches); staging lays Kubernetes' staging modules out beside it.
func (b *Builder) patchedTree(ctx context.Context, name, module, version string, patches []string, staging bool) (string, error) {
	key, err := patchesKey(patches)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(b.CacheDir, "src", name+"-"+version+"-"+key)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return dir, nil
	}
	tmp := dir + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	fmt.Fprintf(b.Log, "making %s %s with %d patch(es) in %s\n", module, version, len(patches), dir)
	done := false
	defer func() {
		if !done {
			_ = os.RemoveAll(tmp) // a release copy that did not take the patches
		}
	}()
	mods, err := downloadModules(ctx, module+"@"+version)
	if err != nil {
		return "", err
	}
	if err := copyTree(mods[0].Dir, tmp); err != nil {
		return "", err
	}
	if staging {
		if err := copyStaging(ctx, tmp, version); err != nil {
			return "", err
		}
	}
	for i, p := range patches {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		// git apply is all-or-nothing per patch and says which hunk does not
		// apply. The ceiling keeps it from taking a repository above the
		// cache for the tree's root.
		cmd := exec.CommandContext(ctx, "git", "apply", "-p1", "--whitespace=nowarn", "--verbose", abs)
		cmd.Dir = tmp
		cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(tmp))
		if err := b.runLogged(cmd, fmt.Sprintf("patch-%s-%d", name, i+1)); err != nil {
			return "", fmt.Errorf("%s does not apply to %s %s: %w", p, module, version, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	done = true
	return dir, nil
}

// copyStaging copies the staging modules a Kubernetes release's go.mod
// (in tree) replaces, at the release's staging tag, into tree's
// staging/src.
func copyStaging(ctx context.Context, tree, version string) error {
	goMod, err := os.ReadFile(filepath.Join(tree, "go.mod"))
	if err != nil {
		return err
	}
	staging, err := gomod.StagingReplaces(goMod, version, "")
	if err != nil {
		return err
	}
	var want []string
	for _, r := range staging {
		want = append(want, r.New+"@"+r.Version)
	}
	stagingMods, err := downloadModules(ctx, want...)
	if err != nil {
		return err
	}
	for _, m := range stagingMods {
		if err := copyTree(m.Dir, filepath.Join(tree, "staging", "src", m.Path)); err != nil {
			return err
		}
	}
	return nil
}

// patchedDep makes d's patched tree and returns the replace of c's build
// to it. Without a version, d is the release c's go.mod requires.
func (b *Builder) patchedDep(ctx context.Context, c GoComponent, d PatchedDep) (gomod.Replace, error) {
	version := d.Version
	if version == "" {
		goMod := filepath.Join(c.Source, "go.mod")
		if c.Source == "" {
			got, err := gomod.Download(ctx, c.Module, c.Version)
			if err != nil {
				return gomod.Replace{}, err
			}
			goMod = got.GoMod
		}
		v, err := gomod.RequiredVersion(goMod, d.Module)
		if err != nil {
			return gomod.Replace{}, err
		}
		version = v
	}
	tree, err := b.patchedTree(ctx, path.Base(d.Module), d.Module, version, d.Patches, false)
	if err != nil {
		return gomod.Replace{}, err
	}
	return gomod.Replace{Old: d.Module, New: tree}, nil
}

type downloaded struct {
	Path, Version, Dir, Error string
}

// downloadModules fetches modules (path@version) into the module cache and
// returns where each is, in order.
func downloadModules(ctx context.Context, mods ...string) ([]downloaded, error) {
	out, err := exec.CommandContext(ctx, "go", append([]string{"mod", "download", "-json"}, mods...)...).Output()
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var got []downloaded
	for {
		var d downloaded
		if derr := dec.Decode(&d); derr == io.EOF {
			break
		} else if derr != nil {
			return nil, fmt.Errorf("go mod download: %v", derr)
		}
		if d.Error != "" {
			return nil, fmt.Errorf("go mod download %s@%s: %s", d.Path, d.Version, d.Error)
		}
		got = append(got, d)
	}
	if err != nil {
		return nil, fmt.Errorf("go mod download %s: %v", strings.Join(mods, " "), err)
	}
	if len(got) != len(mods) {
		return nil, fmt.Errorf("go mod download: asked for %d modules, got %d", len(mods), len(got))
	}
	return got, nil
}

// copyTree copies a module cache directory (read-only files) into dst as
// writable files, keeping the executable bit.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil // module zips hold regular files only
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		return copyFile(path, target, mode)
	})
}
