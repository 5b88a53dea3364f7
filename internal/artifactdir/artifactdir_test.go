package artifactdir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// claimed is a directory a first run marked and wrote report.md and
// containerd/ into.
func claimed(t *testing.T) (string, *Dir) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "artifacts")
	d, err := Claim(dir, "--artifacts", "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reserve("report.md", "containerd"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "report.md"), "first run")
	write(t, filepath.Join(dir, "containerd", "junit_01.xml"), "first run")
	return dir, d
}

func TestMissingAndEmptyDirectoriesAreMarked(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "a", "b")
	empty := t.TempDir()
	for _, dir := range []string{missing, empty} {
		d, err := Claim(dir, "--artifacts", "faultline e2e test")
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if d.Path() != dir {
			t.Errorf("path %s, want %s", d.Path(), dir)
		}
		data, err := os.ReadFile(filepath.Join(dir, MarkerFile))
		if err != nil {
			t.Fatal(err)
		}
		var m marker
		if err := json.Unmarshal(data, &m); err != nil || m.Tool != "faultline" || m.MadeBy != "faultline e2e test" || m.Made.IsZero() {
			t.Errorf("marker %s: %+v, %v", data, m, err)
		}
		// Marked, it is faultline's from now on, also with files in it.
		write(t, filepath.Join(dir, "notes.txt"), "mine")
		if _, err := Claim(dir, "--artifacts", "again"); err != nil {
			t.Errorf("second claim of %s: %v", dir, err)
		}
	}
}

func TestUnmarkedDirectoryWithFilesIsRefused(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "report.md"), "by hand")
	_, err := Claim(dir, "--artifacts", "test")
	if !errors.Is(err, ErrNotOurs) {
		t.Fatalf("err = %v, want ErrNotOurs", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, dir) || strings.Count(msg, "--artifacts") != 2 {
		t.Errorf("want one line naming %s and --artifacts: %q", dir, msg)
	}
	if exists(filepath.Join(dir, MarkerFile)) {
		t.Error("a refused directory got a marker")
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "report.md")); string(data) != "by hand" {
		t.Errorf("report.md = %q", data)
	}
}

// TestSourceTreeIsRefused: --artifacts . in a tree with a containerd/
// folder (the runtime's results directory's name) touches nothing.
func TestSourceTreeIsRefused(t *testing.T) {
	tree := t.TempDir()
	write(t, filepath.Join(tree, "containerd", "main.go"), "package main")
	t.Chdir(tree)
	if _, err := Claim(".", "--artifacts", "test"); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), tree) {
		t.Fatalf("err = %v, want ErrNotOurs naming %s", err, tree)
	}
	if !exists(filepath.Join(tree, "containerd", "main.go")) {
		t.Error("containerd/main.go is gone")
	}
}

func TestFileIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	write(t, file, "x")
	if _, err := Claim(file, "--out", "test"); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("err = %v", err)
	}
}

// TestForeignMarkerIsNoMarker: only a marker faultline wrote, as a regular
// file, makes a directory faultline's.
func TestForeignMarkerIsNoMarker(t *testing.T) {
	for name, plant := range map[string]func(dir string){
		"empty file":   func(dir string) { write(t, filepath.Join(dir, MarkerFile), "") },
		"another tool": func(dir string) { write(t, filepath.Join(dir, MarkerFile), `{"tool":"other","written":["x"]}`) },
		"a link to a marker": func(dir string) {
			other := t.TempDir()
			if _, err := Claim(other, "--artifacts", "test"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(other, MarkerFile), filepath.Join(dir, MarkerFile)); err != nil {
				t.Fatal(err)
			}
		},
	} {
		dir := t.TempDir()
		plant(dir)
		if _, err := Claim(dir, "--artifacts", "test"); !errors.Is(err, ErrNotOurs) {
			t.Errorf("%s: err = %v, want ErrNotOurs", name, err)
		}
	}
}

// TestCleanRemovesOnlyWhatWasRecorded: a second run removes the first run's
// outputs, and a file a user put beside them survives.
func TestCleanRemovesOnlyWhatWasRecorded(t *testing.T) {
	dir, _ := claimed(t)
	write(t, filepath.Join(dir, "notes.md"), "by hand")
	write(t, filepath.Join(dir, "crio", "mine.txt"), "by hand")

	d, err := Claim(dir, "--artifacts", "second run")
	if err != nil {
		t.Fatal(err)
	}
	left, err := d.Clean()
	if err != nil || len(left) > 0 {
		t.Fatalf("clean: left %v, %v", left, err)
	}
	for _, gone := range []string{"report.md", "containerd"} {
		if exists(filepath.Join(dir, gone)) {
			t.Errorf("the first run's %s survived", gone)
		}
	}
	for _, kept := range []string{"notes.md", "crio/mine.txt", MarkerFile} {
		if !exists(filepath.Join(dir, kept)) {
			t.Errorf("%s is gone", kept)
		}
	}
	// The record is empty now: a third run removes nothing more.
	write(t, filepath.Join(dir, "report.md"), "by hand, after the cleanup")
	if _, err := d.Clean(); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(dir, "report.md")) {
		t.Error("a report.md written by hand after the cleanup was removed")
	}
}

// TestHandWrittenReportSurvives: a report.md a user put into a marked
// directory is not removed, and a run that would write report.md is told
// it is in the way instead of overwriting it.
func TestHandWrittenReportSurvives(t *testing.T) {
	dir := t.TempDir()
	d, err := Claim(dir, "--artifacts", "test")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "report.md"), "by hand")
	if _, err := d.Clean(); err != nil {
		t.Fatal(err)
	}
	if err := d.Check("run.json", "report.md"); !errors.Is(err, ErrNotOurs) {
		t.Errorf("check: %v", err)
	}
	err = d.Reserve("run.json", "report.md")
	if !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), filepath.Join(dir, "report.md")+" was not written by faultline") {
		t.Errorf("err = %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "report.md")); string(data) != "by hand" {
		t.Errorf("report.md = %q", data)
	}
	// Nothing of a refused reservation is recorded.
	if m, _, _ := readMarker(dir); len(m.Written) != 0 {
		t.Errorf("recorded %v", m.Written)
	}
}

// TestRecordedPathNowALinkIsNotFollowed: a recorded path that a user
// replaced by a symbolic link to outside, or one under such a link, is
// neither followed nor removed, and is no longer faultline's.
func TestRecordedPathNowALinkIsNotFollowed(t *testing.T) {
	dir, _ := claimed(t)
	outside := t.TempDir()
	write(t, filepath.Join(outside, "precious"), "keep")
	write(t, filepath.Join(outside, "report.md"), "keep")
	if err := os.RemoveAll(filepath.Join(dir, "containerd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "containerd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "report.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "report.md"), filepath.Join(dir, "report.md")); err != nil {
		t.Fatal(err)
	}
	d, err := Claim(dir, "--artifacts", "second run")
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reserve("containerd/dumps"); err == nil {
		t.Error("reserved a path under a link")
	}
	left, err := d.Clean()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(left, ",") != "report.md,containerd" {
		t.Errorf("left %v, want report.md and containerd", left)
	}
	for _, p := range []string{filepath.Join(outside, "precious"), filepath.Join(outside, "report.md"), filepath.Join(dir, "containerd"), filepath.Join(dir, "report.md")} {
		if !exists(p) {
			t.Errorf("%s is gone", p)
		}
	}
	// A run that wants to write there is refused rather than write through
	// the link.
	if err := d.Reserve("containerd"); !errors.Is(err, ErrNotOurs) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("reserve through a link: %v", err)
	}
}

// TestRecordOutsideIsNotFollowed: a marker edited to name paths outside
// the directory (or the marker itself) removes none of them.
func TestRecordOutsideIsNotFollowed(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "artifacts")
	if _, err := Claim(dir, "--artifacts", "test"); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(parent, "precious"), "keep")
	write(t, filepath.Join(dir, "sub", "x"), "keep")
	m, _, _ := readMarker(dir)
	m.Written = []string{"../precious", filepath.Join(parent, "precious"), "sub/../../precious", ".", "", MarkerFile}
	data, _ := json.Marshal(m)
	write(t, filepath.Join(dir, MarkerFile), string(data))

	d, err := Claim(dir, "--artifacts", "test")
	if err != nil {
		t.Fatal(err)
	}
	left, err := d.Clean()
	if err != nil || len(left) != len(m.Written) {
		t.Errorf("left %q, %v; want every entry left", left, err)
	}
	for _, p := range []string{filepath.Join(parent, "precious"), filepath.Join(dir, "sub", "x"), filepath.Join(dir, MarkerFile)} {
		if !exists(p) {
			t.Errorf("%s is gone", p)
		}
	}
	if err := d.Reserve("../x"); err == nil {
		t.Error("reserved a path outside")
	}
}

// TestReserveIsIdempotent: a path reserved (and written) in this run may be
// reserved again, and is recorded once.
func TestReserveIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	d, err := Claim(dir, "--artifacts", "test")
	if err != nil {
		t.Fatal(err)
	}
	p, err := d.Mkdir("containerd")
	if err != nil || p != filepath.Join(dir, "containerd") {
		t.Fatalf("mkdir: %s, %v", p, err)
	}
	if _, err := d.Mkdir("containerd"); err != nil {
		t.Fatal(err)
	}
	if err := d.Reserve("containerd", "report.md", "report.md"); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := readMarker(dir); strings.Join(m.Written, ",") != "containerd,report.md" {
		t.Errorf("recorded %v", m.Written)
	}
}
