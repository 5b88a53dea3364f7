package conformance

import (
	"context"
	"os"
	"path/filepath"

	"github.com/faultline-k8s/faultline/clusters/gomod"
	"github.com/faultline-k8s/faultline/clusters/images"
)

// The image's programs, as the runner's defaults name them.
var imageBinaries = []struct {
	path, pkg string
	test      bool
}{
	{"/usr/local/bin/conformance-runner", "./cmd/conformance-runner", false},
	{"/usr/local/bin/ginkgo", "github.com/onsi/ginkgo/v2/ginkgo", false},
	{"/usr/local/bin/faultline.test", "./suites", true},
}

// ImageSpec compiles the conformance image's binaries for each of archs
// (static, from the checkout at repoRoot, ldflags for every binary) into
// workDir, and describes the image: the runner as entrypoint, /tmp for
// RESULTS_DIR.
func ImageSpec(ctx context.Context, repoRoot, workDir string, archs []string, ldflags string) (images.Spec, error) {
	spec := images.Spec{
		Entrypoint: []string{"/usr/local/bin/conformance-runner"},
		Env:        []string{"RESULTS_DIR=/tmp/results"},
		Files:      map[string]map[string]string{},
		Dirs:       map[string]os.FileMode{"/tmp": os.ModeSticky | 0o777},
	}
	testFlags := ldflags
	if v, err := gomod.RequiredVersion(filepath.Join(repoRoot, "go.mod"), "k8s.io/kubernetes"); err == nil {
		testFlags += " -X github.com/faultline-k8s/faultline/suites/harness.FrameworkVersion=" + v
	}
	for _, arch := range archs {
		spec.Files[arch] = map[string]string{}
		for _, b := range imageBinaries {
			out := filepath.Join(workDir, arch, filepath.Base(b.path))
			flags := ldflags
			if b.test {
				flags = testFlags
			}
			if err := images.GoBuild(ctx, repoRoot, b.pkg, arch, out, b.test, flags); err != nil {
				return spec, err
			}
			spec.Files[arch][b.path] = out
		}
	}
	return spec, nil
}
