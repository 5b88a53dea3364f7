package nodesetup_test

// A node image without the faultline-slow handler, derived from one of
// faultline's node images (which bake it in): one more layer, with the
// runtime's config file less the handler's tables and whiteouts of runc-slow
// and its delegate file, written with go-containerregistry and loaded with
// `docker load`.

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/faultline-k8s/faultline/clusters/nodeimage"
	"github.com/faultline-k8s/faultline/nodesetup"
	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// handlerFiles are the files of faultline's node images that carry the
// handler, by runtime (the rendered templates of clusters/nodeimage).
var handlerFiles = map[string]string{
	"containerd": nodesetup.ContainerdConfigPath,
	"crio":       nodesetup.CRIODropInDir + "/10-faultline.conf",
}

// bareRepository names the derived images; the tag is a digest of the image.
const bareRepository = "faultline/node-nohandler"

// deriveBareImage makes (or finds) the node image without the handler and
// returns its reference and the runtime of the node image.
func deriveBareImage(ctx context.Context, t *testing.T, ref, runtimeName string) (string, runtimes.Runtime) {
	t.Helper()
	dir := t.TempDir()
	archive := filepath.Join(dir, "node.tar")
	t.Logf("docker save %s (to derive a node image without the handler)", ref)
	if out, err := exec.CommandContext(ctx, "docker", "save", "-o", archive, ref).CombinedOutput(); err != nil {
		t.Fatalf("docker save %s: %v\n%s", ref, err, out)
	}
	manifest, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	if err != nil || len(manifest) != 1 {
		t.Fatalf("the archive of %s: %v (%d images)", ref, err, len(manifest))
	}
	img, err := tarball.ImageFromPath(archive, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The files that matter, as the image has them.
	want := map[string]bool{nodesetup.RuncSlowPath: true, nodesetup.DelegatePath: true}
	for _, f := range handlerFiles {
		want[f] = true
	}
	found := map[string]*tar.Header{}
	content := map[string][]byte{}
	flat := mutate.Extract(img)
	tr := tar.NewReader(flat)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			flat.Close()
			t.Fatalf("read %s: %v", ref, err)
		}
		p := "/" + strings.TrimPrefix(path.Clean(hdr.Name), "/")
		if want[p] {
			found[p] = hdr
			if content[p], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	flat.Close()

	if runtimeName == "" {
		runtimeName = "containerd"
		if _, ok := found[handlerFiles["crio"]]; ok {
			runtimeName = "crio"
		}
	}
	rt, err := runtimes.Lookup(runtimeName)
	if err != nil {
		t.Fatal(err)
	}
	configPath := handlerFiles[rt.Name]
	hdr, ok := found[configPath]
	if !ok {
		t.Fatalf("%s has no %s: is it one of faultline's %s node images?", ref, configPath, rt.Name)
	}
	if _, ok := found[nodesetup.RuncSlowPath]; !ok {
		t.Fatalf("%s has no %s: is it one of faultline's node images?", ref, nodesetup.RuncSlowPath)
	}
	stripped, err := stripHandler(string(content[configPath]))
	if err != nil {
		t.Fatalf("%s of %s: %v", configPath, ref, err)
	}

	// The layer: the config less the handler, whiteouts for the rest.
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	epoch := time.Unix(0, 0)
	files := []*tar.Header{{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(configPath, "/"), Mode: hdr.Mode, Uid: hdr.Uid, Gid: hdr.Gid, Size: int64(len(stripped)), ModTime: epoch}}
	for _, p := range []string{nodesetup.RuncSlowPath, nodesetup.DelegatePath} {
		if _, ok := found[p]; ok {
			dir, base := path.Split(strings.TrimPrefix(p, "/"))
			files = append(files, &tar.Header{Typeflag: tar.TypeReg, Name: dir + ".wh." + base, Mode: 0o644, ModTime: epoch})
		}
	}
	for i, h := range files {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := tw.Write([]byte(stripped)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	layerBytes := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layerBytes)), nil },
		tarball.WithMediaType(types.DockerLayer))
	if err != nil {
		t.Fatal(err)
	}
	bare, err := mutate.Append(img, mutate.Addendum{Layer: l, History: historyEntry()})
	if err != nil {
		t.Fatal(err)
	}
	configName, err := bare.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	bareRef := bareRepository + ":" + configName.Hex[:16]
	if exec.Command("docker", "image", "inspect", bareRef).Run() == nil {
		t.Logf("node image without the handler: %s (already loaded)", bareRef)
		return bareRef, rt
	}
	config, err := bare.RawConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bare.tar")
	if err := writeArchive(archive, out, manifest[0].Layers, layerBytes, config, bareRef); err != nil {
		t.Fatal(err)
	}
	if o, err := exec.CommandContext(ctx, "docker", "load", "-i", out).CombinedOutput(); err != nil {
		t.Fatalf("docker load the node image without the handler: %v\n%s", err, o)
	}
	t.Logf("node image without the handler: %s (from %s, %s without its tables of %s, no %s, no %s)",
		bareRef, ref, configPath, nodesetup.HandlerName, nodesetup.RuncSlowPath, nodesetup.DelegatePath)
	return bareRef, rt
}

func historyEntry() v1.History {
	return v1.History{CreatedBy: "faultline test/nodesetup: the faultline-slow runtime handler removed", Created: v1.Time{Time: time.Unix(0, 0)}}
}

// writeArchive writes a docker archive (docker load's format) of the image
// of the archive from, with one more layer: every entry of from but its
// manifests, then the new config, the layer and a manifest.json. The old
// layers are copied as they are: no recompression of the node image.
func writeArchive(from, to string, layers []string, layer, config []byte, ref string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	defer dst.Close()
	tw := tar.NewWriter(dst)
	tr := tar.NewReader(src)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch path.Clean(hdr.Name) {
		case "manifest.json", "index.json", "oci-layout", "repositories":
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return err
		}
	}
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	const configName, layerName = "faultline-nohandler-config.json", "faultline-nohandler-layer.tar"
	manifest, err := json.Marshal([]tarball.Descriptor{{Config: configName, RepoTags: []string{ref}, Layers: append(append([]string(nil), layers...), layerName)}})
	if err != nil {
		return err
	}
	if _, err := name.NewTag(ref); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{configName, config}, {layerName, layer}, {"manifest.json", manifest}} {
		if err := add(f.name, f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return dst.Close()
}

// stripHandler removes the faultline-slow handler from a runtime config
// file's text: every table whose header names runtimes.faultline-slow (to
// the next header), and the comment lines right above the first of them.
// The result must parse and mean what the file meant less the handler.
func stripHandler(text string) (string, error) {
	var out []string
	skipping, stripped := false, false
	for _, line := range strings.SplitAfter(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "[") {
			skipping = isHandlerHeader(trimmed)
			if skipping && !stripped {
				stripped = true
				for len(out) > 0 && strings.HasPrefix(strings.TrimSpace(out[len(out)-1]), "#") {
					out = out[:len(out)-1]
				}
			}
		}
		if !skipping {
			out = append(out, line)
		}
	}
	if !stripped {
		return "", fmt.Errorf("no %s handler to remove", nodesetup.HandlerName)
	}
	result := strings.Join(out, "")
	var before, after map[string]any
	if _, err := toml.Decode(text, &before); err != nil {
		return "", err
	}
	if _, err := toml.Decode(result, &after); err != nil {
		return "", fmt.Errorf("without the handler it does not parse: %w\n%s", err, result)
	}
	if strings.Contains(result, nodesetup.HandlerName+"]") || strings.Contains(result, nodesetup.RuncSlowPath) {
		return "", fmt.Errorf("the handler is still there:\n%s", result)
	}
	if !dropHandler(before) {
		return "", fmt.Errorf("the handler's table is not where the runtime looks for it")
	}
	if !reflect.DeepEqual(before, after) {
		return "", fmt.Errorf("removing the handler's lines changed more than the handler:\n%s", result)
	}
	return result, nil
}

// isHandlerHeader reports whether a table header names the handler's table
// or one of its subtables.
func isHandlerHeader(header string) bool {
	var tree map[string]any
	if _, err := toml.Decode(header, &tree); err != nil {
		return false
	}
	var keys []string
	for cur := tree; len(cur) == 1; {
		for k, v := range cur {
			keys = append(keys, k)
			cur, _ = v.(map[string]any)
		}
	}
	for i := 0; i+1 < len(keys); i++ {
		if keys[i] == "runtimes" && keys[i+1] == nodesetup.HandlerName {
			return true
		}
	}
	return false
}

// dropHandler deletes runtimes.faultline-slow wherever the tree has it.
func dropHandler(tree map[string]any) bool {
	dropped := false
	for k, v := range tree {
		sub, ok := v.(map[string]any)
		if !ok {
			continue
		}
		if k == "runtimes" {
			if _, ok := sub[nodesetup.HandlerName]; ok {
				delete(sub, nodesetup.HandlerName)
				dropped = true
			}
		}
		dropped = dropHandler(sub) || dropped
	}
	return dropped
}

// TestStripHandler needs no cluster: the node images' config files lose
// the handler and nothing else.
func TestStripHandler(t *testing.T) {
	for runtime, file := range map[string]string{
		"containerd": "etc/containerd/config.toml",
		"crio":       "etc/crio/crio.conf.d/10-faultline.conf",
	} {
		data, err := nodeimage.NodeFile(runtimes.MustLookup(runtime), file, "registry.k8s.io/pause:3.10.2")
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		stripped, err := stripHandler(text)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if strings.Contains(stripped, nodesetup.HandlerName) {
			t.Errorf("%s: the handler's comment is left:\n%s", file, stripped)
		}
		if len(stripped) >= len(text) {
			t.Errorf("%s: nothing was removed", file)
		}
	}
	if _, err := stripHandler("[crio.runtime]\n"); err == nil {
		t.Error("a file without the handler must be an error")
	}
}
