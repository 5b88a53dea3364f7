package verdicts

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"maps"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/onsi/ginkgo/v2/types"
)

// FuzzParseExpectations: an expectations file a user passes
// (--expectations) gets a clear error, never a panic.
func FuzzParseExpectations(f *testing.F) {
	f.Add([]byte(testExpectations))
	f.Add([]byte("stack: a-1.1\nexpect:\n- {requirement: DRA-TRANSIENT-RETRIED, verdict: varies, outcomes: [pass, fail], reason: r, reference: https://x, evidence: e}\n"))
	f.Add([]byte("stack: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		x, err := ParseExpectations(data, "fuzz.yaml")
		if err == nil && x.Stack == "" {
			t.Errorf("accepted a file without a stack")
		}
	})
}

// smallGinkgoReport is a recorded report (testdata/<name>.json.gz) cut
// down to its suite setup and two specs of each of Ginkgo's states, without
// what faultline does not read (captured output, timelines, stack traces):
// a few kilobytes, which the fuzzer mutates and minimizes quickly.
func smallGinkgoReport(t testing.TB, name string) []byte {
	t.Helper()
	reports, err := ReadGinkgoReports("testdata/" + name + ".json.gz")
	if err != nil {
		t.Fatal(err)
	}
	var kept []types.SpecReport
	perState := map[types.SpecState]int{}
	for _, sr := range reports[0].SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt || perState[sr.State] < 2 {
			sr.CapturedGinkgoWriterOutput, sr.CapturedStdOutErr = "", ""
			sr.ProgressReports, sr.AdditionalFailures, sr.SpecEvents = nil, nil, nil
			sr.Failure.ProgressReport, sr.Failure.AdditionalFailure = types.ProgressReport{}, nil
			sr.Failure.Location.FullStackTrace = ""
			if len(sr.Failure.Message) > 200 {
				sr.Failure.Message = sr.Failure.Message[:200]
			}
			kept = append(kept, sr)
			perState[sr.State]++
		}
	}
	reports = reports[:1]
	reports[0].SpecReports = kept
	data, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func gzipped(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	if _, err := z.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fuzzLimit holds the fuzz targets' reads well below the real limits, so
// that an input that decompresses to a lot costs milliseconds; every
// recorded report fits.
const fuzzLimit = 4 << 20

// FuzzReadGinkgoReport: a Ginkgo JSON report from anywhere (plain or
// gzipped) reads into a run with a stack, or gives an error; never a panic,
// never more read than the limit. Run it with -fuzzminimizetime 2s: an
// execution takes milliseconds, so the default minute of minimizing each
// finding leaves no time to fuzz.
func FuzzReadGinkgoReport(f *testing.F) {
	// Recorded reports cut down, plain and gzipped: the fuzzer spends a
	// minute minimizing each new finding in a whole one (0.3 to 1.2 MB).
	// TestRecorded* read every whole one.
	for _, name := range []string{"ci-subset-containerd-unlabelled", "repeat-cri-containerd-run1", "full6-containerd", "kep7-crio"} {
		small := smallGinkgoReport(f, name)
		f.Add(small, false)
		f.Add(gzipped(f, small), true)
	}
	f.Add([]byte(`[{"SuiteConfig": {"LabelFilter": "((", "FocusStrings": ["("]}}]`), false)
	f.Add([]byte(`[]`), false)
	f.Fuzz(func(t *testing.T, data []byte, gz bool) {
		name := "fuzz.json"
		if gz {
			name += ".gz"
		}
		src := &countingReader{r: bytes.NewReader(data)}
		reports, used, err := readGinkgoReports(src, name, fuzzLimit)
		if src.n > fuzzLimit+1 || used > 2*fuzzLimit {
			t.Fatalf("read %d bytes (%d counted) with a limit of %d", src.n, used, fuzzLimit)
		}
		if err != nil {
			return
		}
		if len(reports) == 0 {
			t.Fatal("no error and no suite")
		}
		run, err := FromGinkgo(reports, 1, "")
		if err != nil {
			return
		}
		if run.Stack.Key == "" {
			t.Error("a run without a stack")
		}
		for _, specs := range [][]Spec{run.Specs, run.SetupFailures} {
			for _, s := range specs {
				if s.Dump != "" && !filepath.IsLocal(s.Dump) {
					t.Errorf("dump %q leads outside the run's directory", s.Dump)
				}
			}
		}
	})
}

// FuzzReadArtifacts: a run.json from anywhere reads the runs it names
// inside the artifacts directory, or gives an error; never a panic, never a
// file outside (fstest.MapFS refuses names that are not io/fs paths, so a
// path that got past runPath shows as a failed read, and the real os.Root
// is TestManifestPathsStayInside's).
func FuzzReadArtifacts(f *testing.F) {
	small := smallGinkgoReport(f, "ci-subset-containerd-unlabelled")
	fsys := fstest.MapFS{
		"containerd/ginkgo.json":          {Data: small},
		"crio/run-1/ginkgo.json.gz":       {Data: gzipped(f, small)},
		"crio/run-2/ginkgo.json.gz":       {Data: []byte("not gzip")},
		"containerd/dumps/ns/events.txt":  {Data: []byte("x")},
		"outside-the-manifests/README.md": {Data: []byte("x")},
	}
	// The manifest of a real run here (/work/runs/base, interrupted before
	// the suites ran), and ones as runs with results write them.
	f.Add([]byte(`{"header": {"faultline": "devel 22431cd", "date": "2026-11-25T23:24:05.43291474Z", "repeat": 1, "ownClusters": true},
  "stacks": [{"runtime": "containerd", "kubernetes": "v1.37.2", "runs": null, "errors": ["interrupted (SIGINT)"], "nodeImage": "faultline/node-containerd:v1.37.2-d2f15dada73436a8", "fakesImageID": "sha256:4a1b6ce56e4cc3650fdaaeaf27d91719209eda55a8d3f7079a44cfa3d0df6894", "nriVersion": "v0.12.3"},
    {"runtime": "crio", "kubernetes": "v1.37.2", "runs": null, "errors": ["interrupted (SIGINT)"], "nodeImage": "faultline/node-crio:v1.37.2-685180114e789c5e", "nriVersion": "v0.11.0"}]}`))
	f.Add([]byte(`{"stacks": [{"runtime": "containerd", "runs": ["containerd/ginkgo.json"]}, {"runtime": "crio", "kubernetes": "v1.37.2", "variant": "kep-5322", "runs": ["crio/run-1/ginkgo.json.gz", "crio/run-2/ginkgo.json.gz"], "errors": ["the test binary wrote no report"]}]}`))
	f.Add([]byte(`{"stacks": [{"runtime": "containerd", "runs": ["../../etc/passwd", "/etc/passwd", "", ".", "./containerd//ginkgo.json", "containerd/../containerd/ginkgo.json", "containerd"]}]}`))
	f.Add([]byte(`{"stacks": [{"runs": ["containerd/ginkgo.json"]}]}`))
	f.Fuzz(func(t *testing.T, manifest []byte) {
		fsys := maps.Clone(fsys)
		fsys[ManifestFile] = &fstest.MapFile{Data: manifest}
		m, runs, err := readArtifacts(fsys, "fuzz", fuzzLimit, 4*fuzzLimit)
		if err != nil {
			return
		}
		for _, s := range m.Stacks {
			if s.Runtime == "" {
				t.Error("a stack without a runtime")
			}
		}
		for _, r := range runs {
			if r.Stack.Key == "" {
				t.Error("a run without a stack")
			}
			for _, specs := range [][]Spec{r.Specs, r.SetupFailures} {
				for _, s := range specs {
					if s.Dump != "" && !filepath.IsLocal(s.Dump) {
						t.Errorf("dump %q leads outside the artifacts directory", s.Dump)
					}
				}
			}
		}
	})
}

// FuzzReadBaseline: a report.json from anywhere (--baseline) reads into a
// report that compares, or gives an error; never a panic.
func FuzzReadBaseline(f *testing.F) {
	for _, name := range []string{"ci-subset-containerd-unlabelled", "full6-containerd", "repeat-cri-containerd-run1"} {
		run, err := ReadGinkgoFile("testdata/"+name+".json.gz", 1, "containerd-1.36")
		if err != nil {
			f.Fatal(err)
		}
		data, err := json.MarshalIndent(Build([]Run{run}, ExpectationSet{}, Header{Faultline: "devel"}), "", "  ")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"verdicts": [{"requirement": "R", "stack": "s", "state": "pass", "runs": ["pass", "fail"], "varies": true}]}`))
	f.Add([]byte(`{"stacks": [{"key": "s"}], "verdicts": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := parseReport(data, "fuzz.json")
		if err != nil {
			return
		}
		if len(r.Stacks) == 0 && len(r.Verdicts) == 0 {
			t.Fatal("accepted a report without stacks or verdicts")
		}
		if c := Compare(r, r); len(c) != 0 {
			t.Errorf("a report compared with itself changed: %+v", c)
		}
		WriteChanges(io.Discard, Compare(r, &Report{}))
		WriteChanges(io.Discard, Compare(&Report{}, r))
	})
}
