package imageset

import (
	"archive/tar"
	"context"
	"encoding/json"
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
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/faultline-k8s/faultline/clusters/images"
	"github.com/faultline-k8s/faultline/internal/imageref"
)

// smallSet is a set of two images of a file each, for both platforms, named
// as Build names them, without compiling anything.
func smallSet(t *testing.T, reg string) *Set {
	t.Helper()
	dir := t.TempDir()
	spec := func(file string) images.Spec {
		s := images.Spec{Entrypoint: []string{"/usr/local/bin/" + file}, Files: map[string]map[string]string{}}
		for _, arch := range []string{"amd64", "arm64"} {
			p := filepath.Join(dir, arch+"-"+file)
			if err := os.WriteFile(p, []byte(arch+" "+file), 0o755); err != nil {
				t.Fatal(err)
			}
			s.Files[arch] = map[string]string{"/usr/local/bin/" + file: p}
		}
		return s
	}
	return &Set{Registry: reg, Archs: []string{"amd64", "arm64"}, Images: []Image{
		{Name: imageref.FakesName, Ref: imageref.Fakes(reg), Spec: spec("testpod")},
		{Name: imageref.ConformanceName, Ref: imageref.Conformance(reg), Spec: spec("conformance-runner")},
	}}
}

// TestPushToARegistry pushes to go-containerregistry's in-process registry
// and reads both images back by the references a run computes.
func TestPushToARegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	reg := u.Host + "/faultline"
	s := smallSet(t, reg)
	if err := s.Push(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{imageref.Fakes(reg), imageref.Conformance(reg)} {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := remote.Index(r)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		m, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		var archs []string
		for _, d := range m.Manifests {
			archs = append(archs, d.Platform.Architecture)
		}
		sort.Strings(archs)
		if strings.Join(archs, ",") != "amd64,arm64" {
			t.Errorf("%s holds %v, want amd64 and arm64", ref, archs)
		}
	}
}

func TestSaveWritesArchives(t *testing.T) {
	dir := t.TempDir()
	s := smallSet(t, "registry.example/ci")
	files, err := s.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 6 {
		t.Fatalf("files %v, want an OCI archive and two docker archives per image", files)
	}
	// The OCI archive's index names the reference.
	f, err := os.Open(filepath.Join(dir, imageref.FakesName+".oci.tar"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	found := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "index.json" {
			continue
		}
		var index struct {
			Manifests []struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"manifests"`
		}
		if err := json.NewDecoder(tr).Decode(&index); err != nil {
			t.Fatal(err)
		}
		found = len(index.Manifests) == 1 && index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] == imageref.Fakes("registry.example/ci")
	}
	if !found {
		t.Error("the OCI archive's index.json does not name the fakes image's reference")
	}
	// The docker archive is tagged with the reference.
	tag, err := name.NewTag(imageref.Conformance("registry.example/ci"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(filepath.Join(dir, imageref.ConformanceName+"-arm64.docker.tar"), &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "arm64" {
		t.Errorf("arm64 docker archive holds %s", cfg.Architecture)
	}
}
