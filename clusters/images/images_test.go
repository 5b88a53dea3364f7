package images

import (
	"archive/tar"
	"context"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// testSpec is an image of two small files per architecture.
func testSpec(t *testing.T) Spec {
	t.Helper()
	dir := t.TempDir()
	spec := Spec{Entrypoint: []string{"/usr/local/bin/runner"}, Env: []string{"RESULTS_DIR=/tmp/results"},
		Files: map[string]map[string]string{}, Dirs: map[string]os.FileMode{"/tmp": os.ModeSticky | 0o777}}
	for _, arch := range []string{"amd64", "arm64"} {
		spec.Files[arch] = map[string]string{}
		for _, f := range []string{"runner", "faultline.test"} {
			p := filepath.Join(dir, arch+"-"+f)
			if err := os.WriteFile(p, []byte(f+" for "+arch), 0o755); err != nil {
				t.Fatal(err)
			}
			spec.Files[arch]["/usr/local/bin/"+f] = p
		}
	}
	return spec
}

// filesOf lists an image's entries: name, mode and content.
func filesOf(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %v, %v", layers, err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = strings.TrimSpace(os.FileMode(h.Mode).String() + " " + string(b))
	}
}

// TestIndexPushAndPull pushes both platforms to a registry (go-containerregistry's,
// in process) and reads each back: the right files, entrypoint and platform.
func TestIndexPushAndPull(t *testing.T) {
	spec := testSpec(t)
	idx, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	ref := u.Host + "/faultline/conformance:test"
	if err := Push(context.Background(), ref, idx); err != nil {
		t.Fatal(err)
	}
	r, _ := name.ParseReference(ref)
	pulled, err := remote.Index(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := pulled.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var archs []string
	for _, d := range m.Manifests {
		archs = append(archs, d.Platform.Architecture)
		img, err := pulled.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Architecture != d.Platform.Architecture || strings.Join(cfg.Config.Entrypoint, " ") != "/usr/local/bin/runner" {
			t.Errorf("%s: config %+v", d.Platform.Architecture, cfg.Config)
		}
		files := filesOf(t, img)
		if got := files["usr/local/bin/runner"]; got != "-rwxr-xr-x runner for "+d.Platform.Architecture {
			t.Errorf("%s: runner %q", d.Platform.Architecture, got)
		}
		if got := files["tmp/"]; got != "dtrwxrwxrwx" && got != "-rwxrwxrwx" && !strings.Contains(got, "rwxrwxrwx") {
			t.Errorf("/tmp: %q", got)
		}
	}
	sort.Strings(archs)
	if strings.Join(archs, ",") != "amd64,arm64" {
		t.Errorf("platforms %v", archs)
	}
}

// TestSameInputSameDigest: builds are reproducible, so a cache by digest works.
func TestSameInputSameDigest(t *testing.T) {
	spec := testSpec(t)
	a, _ := Index(spec)
	b, _ := Index(spec)
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("digests %s and %s", da, db)
	}
}

func TestSaveLayoutAndDockerArchive(t *testing.T) {
	spec := testSpec(t)
	idx, err := Index(spec)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	if err := SaveLayout(dir, idx); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.ImageIndex(); err != nil {
		t.Fatal(err)
	}
	img, err := Image(spec, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	if err := SaveDockerArchive(archive, "faultline/conformance:test", img); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("faultline/conformance:test")
	back, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if files := filesOf(t, back); files["usr/local/bin/faultline.test"] == "" {
		t.Errorf("the archive's image lacks the test binary: %v", files)
	}
}

func TestImageWithoutFiles(t *testing.T) {
	if _, err := Image(Spec{}, "amd64"); err == nil {
		t.Error("no error")
	}
}
