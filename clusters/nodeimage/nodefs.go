package nodeimage

import (
	"archive/tar"
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"text/template"

	"github.com/faultline-k8s/faultline/vocab/runtimes"
)

// nodeFiles is the part of the node's filesystem faultline owns: systemd units,
// the containerd config, the CNI config and the entrypoint. Files ending in .tmpl
// are rendered with nodeFileValues and templateFuncs (nodesetup's handler).
//
//go:embed all:nodefs
var nodeFiles embed.FS

// runtimeFiles are a runtime's node files beyond nodefs (runtimes/<dir>/...,
// rooted at / like nodefs; <dir> is its runtimes.Runtime.NodeFilesDir). A file
// there replaces nodefs' file of the same path; nodefs files its node leaves
// out are its NodeLeavesOut. They are outside nodefs so that the containerd
// node's key does not see them.
//
//go:embed all:runtimes
var runtimeFiles embed.FS

type nodeFileValues struct {
	PauseImage string
}

// runtimeFilesKey hashes a runtime's own node files (runtimes/<dir>).
func runtimeFilesKey(dir string) (string, error) {
	return filesKey(runtimeFiles, path.Join("runtimes", dir))
}

// extraFile is a file the builder adds beside nodeFiles.
type extraFile struct {
	Path    string
	Mode    int64
	Content []byte
	Source  string // a host file to copy instead of Content
	Link    string // a symlink target instead of content
}

// nodeFilesKey hashes the embedded files, so any edit rebuilds the node image.
func nodeFilesKey() (string, error) {
	return filesKey(nodeFiles, "nodefs")
}

// keyPauseImage stands in for the pause image when a template is rendered
// for the key: the pins key the real one.
const keyPauseImage = "pause-image-of-the-pins"

// filesKey hashes the files under root as the node gets them: a template
// rendered, so that what it takes from elsewhere (nodesetup's handler) keys
// the image too.
func filesKey(files embed.FS, root string) (string, error) {
	parts := map[string]string{}
	err := fs.WalkDir(files, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err == nil && strings.HasSuffix(p, ".tmpl") {
			data, err = render(p, data, nodeFileValues{PauseImage: keyPauseImage})
		}
		parts[p] = string(data)
		return err
	})
	return hashKey(parts), err
}

// writeNodeFilesTar renders nodefs (plus extras) as a tar stream rooted at /.
func writeNodeFilesTar(w io.Writer, values nodeFileValues, extras []extraFile) error {
	return writeRuntimeNodeFilesTar(w, runtimes.Runtime{}, values, extras)
}

// writeRuntimeNodeFilesTar renders nodefs, less what the runtime leaves out or
// replaces, then the runtime's own files, then extras.
func writeRuntimeNodeFilesTar(w io.Writer, rt runtimes.Runtime, values nodeFileValues, extras []extraFile) error {
	tw := tar.NewWriter(w)
	skip := map[string]bool{}
	for _, p := range rt.NodeLeavesOut {
		skip[p] = true
	}
	runtimeRoot := path.Join("runtimes", rt.NodeFilesDir)
	var own []string
	if rt.NodeFilesDir != "" {
		err := fs.WalkDir(runtimeFiles, runtimeRoot, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel := strings.TrimPrefix(p, runtimeRoot+"/")
			skip[rel] = true
			own = append(own, p)
			return nil
		})
		if err != nil {
			return err
		}
	}
	add := func(files embed.FS, p, name string) error {
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasSuffix(name, ".tmpl") {
			name = strings.TrimSuffix(name, ".tmpl")
			if data, err = render(name, data, values); err != nil {
				return err
			}
		}
		mode := int64(0o644)
		if strings.HasPrefix(name, "usr/local/bin/") {
			mode = 0o755
		}
		return writeTarFile(tw, extraFile{Path: name, Mode: mode, Content: data})
	}
	err := fs.WalkDir(nodeFiles, "nodefs", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := strings.TrimPrefix(p, "nodefs/")
		if skip[name] {
			return nil
		}
		return add(nodeFiles, p, name)
	})
	if err != nil {
		return err
	}
	for _, p := range own {
		if err := add(runtimeFiles, p, strings.TrimPrefix(p, runtimeRoot+"/")); err != nil {
			return err
		}
	}
	for _, f := range extras {
		if err := writeTarFile(tw, f); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeTarFile(tw *tar.Writer, f extraFile) error {
	name := strings.TrimPrefix(path.Clean(f.Path), "/")
	if f.Link != "" {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: f.Link, Mode: 0o777})
	}
	if f.Source == "" {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.Mode, Size: int64(len(f.Content))}); err != nil {
			return err
		}
		_, err := tw.Write(f.Content)
		return err
	}
	src, err := os.Open(f.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: f.Mode, Size: info.Size()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}

// render fills a node file's template.
func render(name string, data []byte, values nodeFileValues) ([]byte, error) {
	tmpl, err := template.New(name).Option("missingkey=error").Funcs(templateFuncs).Parse(string(data))
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = tmpl.Execute(&out, values)
	return out.Bytes(), err
}

// NodeFile is one of the files faultline puts on a node of runtime (its
// path on the node, without the leading /), as the node image has it:
// the runtime's own file, else nodefs', rendered with pauseImage. Tests of
// what is installed on nodes read the node images' configuration here.
func NodeFile(rt runtimes.Runtime, nodePath, pauseImage string) ([]byte, error) {
	candidates := []struct {
		files embed.FS
		path  string
	}{{nodeFiles, path.Join("nodefs", nodePath)}}
	if rt.NodeFilesDir != "" {
		candidates = append([]struct {
			files embed.FS
			path  string
		}{{runtimeFiles, path.Join("runtimes", rt.NodeFilesDir, nodePath)}}, candidates...)
	}
	for _, c := range candidates {
		for _, p := range []string{c.path, c.path + ".tmpl"} {
			data, err := c.files.ReadFile(p)
			if err != nil {
				continue
			}
			if strings.HasSuffix(p, ".tmpl") {
				return render(nodePath, data, nodeFileValues{PauseImage: pauseImage})
			}
			return data, nil
		}
	}
	return nil, fmt.Errorf("no node file %s for %s", nodePath, rt.Name)
}
