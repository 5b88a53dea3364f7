// Package images builds faultline's images without a container engine
// (go-containerregistry): static Go binaries in one layer on an empty base,
// for each platform, in one index. It saves them as an OCI layout or a
// docker archive (kind load image-archive), or pushes them to a registry.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/faultline-k8s/faultline/internal/proc"
)

// Source is faultline's repository, as the images' source label names it.
const Source = "https://github.com/faultline-k8s/faultline"

// Platforms are those faultline's images are built for.
var Platforms = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// Spec describes one image: its files (path in the image => path on disk,
// per platform) and how it starts.
type Spec struct {
	Entrypoint []string
	Env        []string
	// Files maps a platform's architecture to the files of its image.
	Files map[string]map[string]string
	// Dirs are empty directories the image needs (with their mode): /tmp.
	Dirs map[string]os.FileMode
}

// epoch is every file's time: the same binaries give the same digest.
var epoch = Epoch

// Epoch is the time of every file in the images and archives faultline writes.
var Epoch = time.Unix(0, 0).UTC()

// Index builds the image of every platform Spec has files for, in one index.
func Index(spec Spec) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	archs := make([]string, 0, len(spec.Files))
	for a := range spec.Files {
		archs = append(archs, a)
	}
	sort.Strings(archs)
	for _, arch := range archs {
		img, err := Image(spec, arch)
		if err != nil {
			return nil, err
		}
		p := v1.Platform{OS: "linux", Architecture: arch}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	return mutate.AppendManifests(idx, adds...), nil
}

// Image builds one platform's image.
func Image(spec Spec, arch string) (v1.Image, error) {
	layerTar, err := layerOf(spec.Files[arch], spec.Dirs)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Entrypoint = spec.Entrypoint
	cfg.Config.Env = append([]string{"PATH=/usr/local/bin"}, spec.Env...)
	// Where the image comes from: registries (ghcr.io) link the package to
	// its repository by this label.
	cfg.Config.Labels = map[string]string{"org.opencontainers.image.source": Source}
	return mutate.ConfigFile(img, cfg)
}

// layerOf is the tar of files and dirs, in name order, parents first.
func layerOf(files map[string]string, dirs map[string]os.FileMode) ([]byte, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("an image without files")
	}
	entries := map[string]os.FileMode{}
	addParents := func(p string) {
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			if _, ok := entries[d+"/"]; !ok {
				entries[d+"/"] = 0o755
			}
		}
	}
	for p := range files {
		addParents(p)
		entries[p] = 0
	}
	for d, mode := range dirs {
		addParents(d)
		entries[strings.TrimSuffix(d, "/")+"/"] = mode
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		rel := strings.TrimPrefix(n, "/")
		if strings.HasSuffix(n, "/") {
			mode := int64(entries[n].Perm())
			if entries[n]&os.ModeSticky != 0 {
				mode |= 0o1000 // tar's sticky bit
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: rel, Mode: mode, ModTime: epoch}); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(files[n])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o755, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SaveLayout writes the index as an OCI image layout in dir.
func SaveLayout(dir string, idx v1.ImageIndex) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx)
}

// SaveDockerArchive writes one platform's image as a docker archive tagged
// ref: what `kind load image-archive` takes.
func SaveDockerArchive(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, tag, img)
}

// Push writes the index to ref's registry.
func Push(ctx context.Context, ref string, idx v1.ImageIndex, opts ...remote.Option) error {
	r, err := name.ParseReference(ref)
	if err != nil {
		return err
	}
	return remote.WriteIndex(r, idx, append(opts, remote.WithContext(ctx))...)
}

// GoBuild compiles a static binary of pkg for arch into out: go build, or
// go test -c for a package of tests (test true).
func GoBuild(ctx context.Context, repoRoot, pkg, arch, out string, test bool, ldflags string) error {
	args := []string{"build", "-trimpath", "-o", out}
	if test {
		args = []string{"test", "-c", "-trimpath", "-o", out}
	}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	// In a process group of its own: an interrupt stops the compilers go
	// started too, not go alone.
	cmd := proc.Command(ctx, syscall.SIGTERM, 5*time.Second, "go", append(args, pkg)...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	b, err := cmd.CombinedOutput()
	proc.KillGroup(cmd)
	if err != nil {
		return fmt.Errorf("go %s %s (%s): %w\n%s", strings.Join(args, " "), pkg, arch, err, b)
	}
	return nil
}
