package verdicts

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// countingReader counts what a reader took from its source.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// gzipBomb is a gzip stream of "[" and then size spaces: valid JSON as far
// as it goes, so only the limit stops a reader, and about a thousandth of
// size compressed.
func gzipBomb(t *testing.T, size int) []byte {
	t.Helper()
	var b bytes.Buffer
	z, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.Write([]byte("[")); err != nil {
		t.Fatal(err)
	}
	spaces := bytes.Repeat([]byte(" "), 1<<20)
	for written := 0; written < size; written += len(spaces) {
		if _, err := z.Write(spaces); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestGzipBombRefused: a gzipped report that decompresses to four times
// MaxGinkgoReportBytes is refused with the limit's error, naming the file,
// having read only about a quarter of it.
func TestGzipBombRefused(t *testing.T) {
	bomb := gzipBomb(t, 4*MaxGinkgoReportBytes)
	t.Logf("bomb: %d bytes compressed, %d MiB decompressed", len(bomb), 4*MaxGinkgoReportBytes>>20)
	path := filepath.Join(t.TempDir(), "ginkgo.json.gz")
	if err := os.WriteFile(path, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := ReadGinkgoReports(path)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != MaxGinkgoReportBytes || tl.File != path {
		t.Fatalf("got %v, want a TooLargeError for %s at %d bytes", err, path, MaxGinkgoReportBytes)
	}
	if want := path + ": decompresses to more than 64 MiB"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want it to start %q", err, want)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %v to refuse", d)
	}
	// It stops at the limit rather than decompressing everything.
	src := &countingReader{r: bytes.NewReader(bomb)}
	if _, _, err := readGinkgoReports(src, "bomb.json.gz", MaxGinkgoReportBytes); !errors.As(err, &tl) {
		t.Fatalf("got %v, want a TooLargeError", err)
	}
	if src.n > int64(len(bomb))/2 {
		t.Errorf("read %d of the bomb's %d compressed bytes: it did not stop at the limit", src.n, len(bomb))
	}
}

// TestLimitsAreExact: a file of exactly the limit reads, one byte more is
// refused; the compressed file has its own cap (a stream of empty gzip
// members decompresses to nothing but still takes reading).
func TestLimitsAreExact(t *testing.T) {
	doc := []byte(`[{"SuiteDescription": "s"}]`)
	limit := int64(len(doc))
	if _, _, err := readGinkgoReports(bytes.NewReader(doc), "exact.json", limit); err != nil {
		t.Errorf("a report of exactly the limit: %v", err)
	}
	var tl *TooLargeError
	_, _, err := readGinkgoReports(bytes.NewReader(append(doc, ' ')), "over.json", limit)
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "over.json: larger than 27 bytes") {
		t.Errorf("a report one byte over the limit: %v", err)
	}
	var empty bytes.Buffer
	z := gzip.NewWriter(&empty)
	z.Close()
	members := bytes.Repeat(empty.Bytes(), 1000)
	_, _, err = readGinkgoReports(bytes.NewReader(members), "empty.json.gz", 1000)
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "empty.json.gz: larger than 1000 bytes") {
		t.Errorf("empty gzip members past the limit: %v", err)
	}
	_, err = readCapped(strings.NewReader(strings.Repeat(" ", MaxManifestBytes+1)), "run.json", MaxManifestBytes, "a run manifest")
	if !errors.As(err, &tl) || err.Error() != "run.json: larger than 1 MiB, the most faultline reads of a run manifest" {
		t.Errorf("a run.json over the limit: %v", err)
	}
}

// artifactsDir lays out root/artifacts as a run writes it, with the
// smallest recorded report as containerd/ginkgo.json.gz, and the same report
// outside it (root/outside/ginkgo.json.gz): a path that escaped would read.
func artifactsDir(t *testing.T) (dir, outside string) {
	t.Helper()
	root := t.TempDir()
	data, err := os.ReadFile("testdata/ci-subset-containerd-unlabelled.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	dir, outside = filepath.Join(root, "artifacts"), filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(dir, "containerd"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "ginkgo.json.gz"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, outside
}

func writeManifest(t *testing.T, dir string, runs ...string) {
	t.Helper()
	m := Manifest{Stacks: []ManifestStack{{Runtime: "containerd", Runs: runs}}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// TestManifestPathsStayInside: a run.json whose run paths lead outside the
// artifacts directory (climbing out, absolute, through a symbolic link) is
// refused with an error naming the entry; links that stay inside are
// followed.
func TestManifestPathsStayInside(t *testing.T) {
	dir, outside := artifactsDir(t)
	target := filepath.Join(outside, "ginkgo.json.gz")
	if err := os.Symlink(target, filepath.Join(dir, "containerd", "absolute-link.json.gz")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../outside/ginkgo.json.gz", filepath.Join(dir, "containerd", "relative-link.json.gz")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linked-dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ginkgo.json.gz", filepath.Join(dir, "containerd", "inside-link.json.gz")); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{
		"../../etc/passwd",
		"/etc/passwd",
		"../outside/ginkgo.json.gz",
		"containerd/../../outside/ginkgo.json.gz",
		target,
		"",
		"containerd/absolute-link.json.gz",
		"containerd/relative-link.json.gz",
		"linked-dir/ginkgo.json.gz",
	} {
		t.Run(rel, func(t *testing.T) {
			writeManifest(t, dir, "containerd/ginkgo.json.gz", rel)
			_, runs, err := ReadArtifacts(dir)
			want := filepath.Join(dir, ManifestFile) + `: stack "containerd", run 2: `
			if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
				t.Fatalf("got %v, want one error starting %q", err, want)
			}
			t.Log(err)
			if len(runs) != 1 {
				t.Errorf("read %d runs, want the one inside", len(runs))
			}
			if !strings.Contains(err.Error(), "not a path inside") && !strings.Contains(err.Error(), "path escapes") {
				t.Errorf("the error does not say the path leads outside: %v", err)
			}
		})
	}
	writeManifest(t, dir, "containerd/inside-link.json.gz", "./containerd//ginkgo.json.gz")
	if _, runs, err := ReadArtifacts(dir); err != nil || len(runs) != 2 {
		t.Errorf("links and paths that stay inside: %d runs, %v", len(runs), err)
	}
	writeManifest(t, dir, "containerd/missing.json.gz")
	if _, _, err := ReadArtifacts(dir); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing report: %v", err)
	}
	if err := os.Remove(filepath.Join(dir, ManifestFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, ManifestFile), filepath.Join(dir, ManifestFile)); err != nil {
		t.Fatal(err)
	}
	writeManifest(t, outside, "ginkgo.json.gz")
	if _, _, err := ReadArtifacts(dir); err == nil || !strings.Contains(err.Error(), "path escapes") {
		t.Errorf("a run.json that links outside: %v", err)
	}
}

// TestArtifactsReadAsBefore: a recorded report read through run.json gives
// the run ReadGinkgoFile gives, its dumps placed under the run's directory.
func TestArtifactsReadAsBefore(t *testing.T) {
	const recordedName = "full6-containerd"
	want, err := ReadGinkgoFile("testdata/"+recordedName+".json.gz", 1, "containerd")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("testdata/" + recordedName + ".json.gz")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "containerd", "run-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "containerd", "run-1", "ginkgo.json.gz"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeManifest(t, dir, "containerd/run-1/ginkgo.json.gz")
	_, runs, err := ReadArtifacts(dir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs, %v", len(runs), err)
	}
	dumps := 0
	for _, specs := range [][]Spec{want.Specs, want.SetupFailures} {
		for i := range specs {
			if specs[i].Dump != "" {
				specs[i].Dump = "containerd/run-1/" + specs[i].Dump
				dumps++
			}
		}
	}
	if !reflect.DeepEqual(runs[0], want) {
		t.Errorf("read through run.json:\n%+v\nwant:\n%+v", runs[0], want)
	}
	t.Logf("%d specs, %d dumps", len(want.Specs), dumps)
}

// TestArtifactsTotalCapped: a run.json that names one report many times is
// refused once the reports add up to the total, naming the limit.
func TestArtifactsTotalCapped(t *testing.T) {
	report := smallGinkgoReport(t, "ci-subset-containerd-unlabelled")
	fsys := fstest.MapFS{"containerd/ginkgo.json": {Data: report}}
	var runs []string
	for range 100 {
		runs = append(runs, "containerd/ginkgo.json")
	}
	m, err := json.Marshal(Manifest{Stacks: []ManifestStack{{Runtime: "containerd", Runs: runs}}})
	if err != nil {
		t.Fatal(err)
	}
	fsys[ManifestFile] = &fstest.MapFile{Data: m}
	total := int64(len(report))*10 + 1
	_, _, err = readArtifacts(fsys, "a", MaxGinkgoReportBytes, total)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Limit != total || !strings.Contains(err.Error(), "the Ginkgo reports run.json names add up to more than") {
		t.Errorf("got %v, want the total's TooLargeError", err)
	}
	if _, got, err := readArtifacts(fsys, "a", MaxGinkgoReportBytes, int64(len(report))*100); err != nil || len(got) != 100 {
		t.Errorf("within the total: %d runs, %v", len(got), err)
	}
}

// TestBaselineRead: report.json is capped, and what faultline never writes
// (two verdicts of one requirement and stack, a verdict of no requirement)
// is refused.
func TestBaselineRead(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), MaxReportBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	var tl *TooLargeError
	if _, err := ReadReportFile(big); !errors.As(err, &tl) || !strings.Contains(err.Error(), "larger than 64 MiB, the most faultline reads of a faultline report") {
		t.Errorf("a report.json over the limit: %v", err)
	}
	for doc, want := range map[string]string{
		`{"verdicts": [{"requirement": "R", "stack": "s", "state": "pass"}, {"requirement": "R", "stack": "s", "state": "fail"}]}`: "R on s has two verdicts",
		`{"verdicts": [{"requirement": "", "stack": "s", "state": "pass"}]}`:                                                       "names no requirement",
		`{"stacks": []}`: "no stacks, no verdicts",
	} {
		if _, err := parseReport([]byte(doc), "report.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want %q", doc, err, want)
		}
	}
	r, err := parseReport([]byte(`{"verdicts": [{"requirement": "R", "stack": "s", "state": "pass"}]}`), "report.json")
	if err != nil || len(Compare(r, r)) != 0 {
		t.Errorf("a valid report: %v", err)
	}
}
