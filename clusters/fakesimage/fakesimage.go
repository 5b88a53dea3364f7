// Package fakesimage builds the image that holds faultline's own binaries used inside
// clusters: the fake DRA driver, the fake NRI plugin, the test workload, the
// CRI relay, and what node-setup installs. They are static Go binaries on an
// empty base, put together without a container engine (clusters/images).
package fakesimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/faultline-k8s/faultline/clusters/images"
	"github.com/faultline-k8s/faultline/internal/cachelock"
)

// Binaries maps each binary in the image (/usr/local/bin/<name>) to the
// package it is built from.
var Binaries = map[string]string{
	"testpod":         "./fakes/testpod",
	"cri-relay":       "./fakes/crirelay",
	"probe":           "./fakes/probe",
	"fake-dra-driver": "./fakes/dra/cmd/fake-dra-driver",
	"fake-nri-plugin": "./fakes/nri/cmd/fake-nri-plugin",
	"node-setup":      "./nodesetup/cmd/node-setup",
	"runc-slow":       "./fakes/runcslow/cmd/runc-slow",
}

// Repository is the local image's name; its tag is a hash of the image, so
// a code change always yields a new tag and nodes never run a stale copy.
const Repository = "faultline/fakes"

// Spec compiles the binaries for each of archs from the checkout at
// repoRoot into workDir (ldflags for every binary) and describes the image.
func Spec(ctx context.Context, repoRoot, workDir string, archs []string, ldflags string) (images.Spec, error) {
	names := make([]string, 0, len(Binaries))
	for name := range Binaries {
		names = append(names, name)
	}
	sort.Strings(names)
	spec := images.Spec{Entrypoint: []string{"/usr/local/bin/testpod"}, Files: map[string]map[string]string{}}
	for _, arch := range archs {
		spec.Files[arch] = map[string]string{}
		for _, name := range names {
			out := filepath.Join(workDir, arch, name)
			if err := images.GoBuild(ctx, repoRoot, Binaries[name], arch, out, false, "-s -w "+ldflags); err != nil {
				return spec, err
			}
			spec.Files[arch]["/usr/local/bin/"+name] = out
		}
	}
	return spec, nil
}

// Built is the fakes image of one architecture as Build left it.
type Built struct {
	// Ref is Repository:<hash of the image>.
	Ref string
	// ID is the image's config digest: its ID once loaded.
	ID string
	// Archive is a docker archive of the image, tagged Ref, in the cache:
	// what kind nodes load.
	Archive string
}

// Build compiles the binaries for arch from the checkout at repoRoot and
// writes the image's docker archive into cacheDir/images, unless an archive
// of the same image is there.
func Build(ctx context.Context, repoRoot, cacheDir, arch string, log io.Writer) (Built, error) {
	work, err := os.MkdirTemp("", "faultline-fakes-")
	if err != nil {
		return Built{}, err
	}
	defer os.RemoveAll(work)
	spec, err := Spec(ctx, repoRoot, work, []string{arch}, "")
	if err != nil {
		return Built{}, err
	}
	img, err := images.Image(spec, arch)
	if err != nil {
		return Built{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Built{}, err
	}
	id, err := img.ConfigName()
	if err != nil {
		return Built{}, err
	}
	b := Built{Ref: Repository + ":" + digest.Hex[:16], ID: id.String()}
	// Only now: the binaries compile outside the cache, and two runs
	// writing the same archive's .tmp would corrupt it.
	lock, err := cachelock.Acquire(ctx, cacheDir, log)
	if err != nil {
		return Built{}, err
	}
	defer lock.Release()
	b.Archive = filepath.Join(cacheDir, "images", "fakes-"+digest.Hex[:16]+".tar")
	if _, err := os.Stat(b.Archive); err == nil {
		fmt.Fprintf(log, "fakes image %s is up to date\n", b.Ref)
		return b, nil
	}
	if err := os.MkdirAll(filepath.Dir(b.Archive), 0o755); err != nil {
		return Built{}, err
	}
	// Written aside and renamed: an interrupted build leaves no half archive.
	tmp := b.Archive + ".tmp"
	if err := images.SaveDockerArchive(tmp, b.Ref, img); err != nil {
		os.Remove(tmp)
		return Built{}, err
	}
	if err := os.Rename(tmp, b.Archive); err != nil {
		return Built{}, err
	}
	fmt.Fprintf(log, "built fakes image %s (%s)\n", b.Ref, b.Archive)
	return b, nil
}
