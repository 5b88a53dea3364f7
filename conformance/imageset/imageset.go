// Package imageset builds faultline's two images together, for every
// platform, without a container engine: the fakes (what the suites deploy)
// and the conformance image (the suites and their runner). They are named
// by internal/imageref, tagged with this build's version, and the
// conformance image knows the registry they are for, so a run started from
// it finds the fakes image of its own build there.
package imageset

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/faultline-k8s/faultline/clusters/fakesimage"
	"github.com/faultline-k8s/faultline/clusters/images"
	"github.com/faultline-k8s/faultline/conformance"
	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/internal/version"
)

// Image is one of the set: its reference and its spec (one image per
// platform).
type Image struct {
	// Name is the repository's last element (imageref.FakesName, ...).
	Name string
	Ref  string
	Spec images.Spec
}

// Set is both images, for Archs, named for Registry.
type Set struct {
	Registry string
	Archs    []string
	Images   []Image
}

// Build compiles every binary of both images for archs from the checkout at
// repoRoot into workDir (which must outlive the set's use). Every binary
// carries this build's version, so the suites inside compute the same
// image references as this binary.
func Build(ctx context.Context, repoRoot, workDir, registry string, archs []string) (*Set, error) {
	if registry == "" {
		registry = imageref.DefaultRegistry
	}
	ldflags := version.LinkFlag(version.String())
	fakesSpec, err := fakesimage.Spec(ctx, repoRoot, filepath.Join(workDir, "fakes"), archs, ldflags)
	if err != nil {
		return nil, err
	}
	confSpec, err := conformance.ImageSpec(ctx, repoRoot, filepath.Join(workDir, "conformance"), archs, ldflags)
	if err != nil {
		return nil, err
	}
	// The runner's default fakes image is this build's in this registry.
	confSpec.Env = append(confSpec.Env, "FAULTLINE_IMAGE_REGISTRY="+registry)
	return &Set{Registry: registry, Archs: archs, Images: []Image{
		{Name: imageref.FakesName, Ref: imageref.Fakes(registry), Spec: fakesSpec},
		{Name: imageref.ConformanceName, Ref: imageref.Conformance(registry), Spec: confSpec},
	}}, nil
}

// Save writes into dir, for each image, an OCI archive of every platform
// (<name>.oci.tar: a tar of an OCI image layout whose index names the
// reference) and a docker archive per platform (<name>-<arch>.docker.tar,
// for docker load or kind load image-archive). It returns the files.
func (s *Set) Save(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	for _, im := range s.Images {
		idx, err := images.Index(im.Spec)
		if err != nil {
			return files, err
		}
		oci := filepath.Join(dir, im.Name+".oci.tar")
		if err := writeOCIArchive(oci, im.Ref, idx); err != nil {
			return files, fmt.Errorf("%s: %w", oci, err)
		}
		files = append(files, oci)
		for _, arch := range s.Archs {
			img, err := images.Image(im.Spec, arch)
			if err != nil {
				return files, err
			}
			docker := filepath.Join(dir, im.Name+"-"+arch+".docker.tar")
			if err := images.SaveDockerArchive(docker, im.Ref, img); err != nil {
				return files, fmt.Errorf("%s: %w", docker, err)
			}
			files = append(files, docker)
		}
	}
	return files, nil
}

// Push writes both images' indexes to the registry, with the credentials
// of the docker config (docker login) unless opts say otherwise.
func (s *Set) Push(ctx context.Context, opts ...remote.Option) error {
	opts = append([]remote.Option{remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	for _, im := range s.Images {
		idx, err := images.Index(im.Spec)
		if err != nil {
			return err
		}
		if err := images.Push(ctx, im.Ref, idx, opts...); err != nil {
			return fmt.Errorf("push %s: %w", im.Ref, err)
		}
	}
	return nil
}

// DockerArchive writes one platform's image of the set (by name) as a docker
// archive: what a kind node loads.
func (s *Set) DockerArchive(name, arch, path string) (string, error) {
	for _, im := range s.Images {
		if im.Name == name {
			img, err := images.Image(im.Spec, arch)
			if err != nil {
				return "", err
			}
			return im.Ref, images.SaveDockerArchive(path, im.Ref, img)
		}
	}
	return "", fmt.Errorf("no image %q in the set", name)
}

// writeOCIArchive tars an OCI image layout holding idx, its index entry
// annotated with ref (org.opencontainers.image.ref.name), as skopeo's and
// containerd's oci-archive readers expect.
func writeOCIArchive(path, ref string, idx v1.ImageIndex) error {
	tmp, err := os.MkdirTemp("", "faultline-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": ref,
		"io.containerd.image.name":          ref,
	})); err != nil {
		return err
	}
	return tarDir(path, tmp)
}

// tarDir writes dir's tree as a tar at path, in name order (WalkDir's), with
// fixed times, so the same layout gives the same archive.
func tarDir(path, dir string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name, h.ModTime, h.Uid, h.Gid, h.Uname, h.Gname = filepath.ToSlash(rel), epoch, 0, 0, "", ""
		if d.IsDir() {
			h.Name += "/"
			return tw.WriteHeader(h)
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err := tw.Close(); walkErr == nil {
		walkErr = err
	}
	if err := f.Close(); walkErr == nil {
		walkErr = err
	}
	return walkErr
}

var epoch = images.Epoch
