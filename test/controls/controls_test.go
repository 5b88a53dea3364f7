// Package controls runs the mutants and fake modes of
// judge/controls/controls.yaml: each builds its stack with faultline e2e
// (the patched component or the misbehaving fake, the suite of its
// requirement) and must turn its requirement red with the cause named,
// every other requirement keeping its verdict on the stack it varies. make
// run-controls; each takes 7 to 10 minutes here (a cold build more).
package controls

import (
	"compress/gzip"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline-k8s/faultline/judge/controls"
	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
)

const repoRoot = "../.."

// TestControlsRun: FAULTLINE_CONTROLS_RUN=1 runs every mutant, or those
// whose requirement or series FAULTLINE_CONTROLS (a regular expression)
// matches; FAULTLINE_CONTROLS_RECORD=1 also writes each red run to
// judge/verdicts/testdata/<series>.json.gz, for controls.yaml to name.
func TestControlsRun(t *testing.T) {
	if os.Getenv("FAULTLINE_CONTROLS_RUN") != "1" {
		t.Skip("set FAULTLINE_CONTROLS_RUN=1 (and FAULTLINE_CONTROLS=<regexp> to pick some) to build and run the mutants of judge/controls/controls.yaml on kind clusters (needs root; 7-10 minutes each)")
	}
	pick := regexp.MustCompile(os.Getenv("FAULTLINE_CONTROLS"))
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	x, err := expectations.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "faultline")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd", "faultline")).CombinedOutput(); err != nil {
		t.Fatalf("build faultline: %v\n%s", err, out)
	}
	for _, e := range controls.All() {
		req, _ := requirements.Lookup(e.Requirement)
		for _, c := range e.Controls {
			// A run is named after the mutant's series or the fake mode's
			// variant part; its recording gets the same name.
			var series string
			switch c.Kind {
			case controls.Mutant:
				series = filepath.Base(filepath.Dir(c.Patch))
			case controls.FakeMode:
				series = fakemodes.VariantPart(c.Mode)
			default:
				continue
			}
			if !pick.MatchString(e.Requirement) && !pick.MatchString(series) {
				continue
			}
			t.Run(e.Requirement+"/"+series, func(t *testing.T) {
				runMutant(t, bin, root, req, c, series, x)
			})
		}
	}
}

func runMutant(t *testing.T, bin, root string, req requirements.Requirement, c controls.Control, series string, x verdicts.ExpectationSet) {
	args, err := c.E2EArgs(root, req.Area)
	if err != nil {
		t.Fatal(err)
	}
	artifacts := filepath.Join(root, "_artifacts", "controls", series)
	if err := os.RemoveAll(artifacts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"e2e", "--artifacts", artifacts}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	// The mutant's red verdict is unexpected by the stack's expectations:
	// exit 1 is the run working.
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		t.Fatalf("faultline e2e %s: %v\n%s", strings.Join(args, " "), err, tail(out))
	}
	runtime, _, _ := strings.Cut(c.Stack, "-")
	report := filepath.Join(artifacts, runtime, "ginkgo.json")
	run, err := verdicts.ReadGinkgoFile(report, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	if run.Stack.Key != c.Stack {
		t.Fatalf("the run is of stack %s, not %s", run.Stack.Key, c.Stack)
	}
	var base *verdicts.Run
	if name := baseRecording(c); name != "" {
		b, err := verdicts.ReadGinkgoFile(filepath.Join(root, controls.RecordingPath(name)), 1, "")
		if err != nil {
			t.Fatal(err)
		}
		base = &b
	} else {
		t.Logf("no recorded run of the stack %s varies: precision not checked", c.Stack)
	}
	problems := controls.Judge(c, req.ID, run, base, x)
	for _, p := range problems {
		t.Error(p)
	}
	if len(problems) == 0 && os.Getenv("FAULTLINE_CONTROLS_RECORD") == "1" {
		if err := gzipFile(report, filepath.Join(root, controls.RecordingPath(series))); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s: in controls.yaml, recording: %s and base: %s", controls.RecordingPath(series), series, baseRecording(c))
	}
}

// baseRecording is the recording of the stack a mutant varies: the one
// controls.yaml names, or that of a recorded control of that stack.
func baseRecording(c controls.Control) string {
	if c.Base != "" {
		return c.Base
	}
	series := filepath.Base(filepath.Dir(c.Patch))
	stack := strings.TrimSuffix(c.Stack, "+"+series)
	for _, e := range controls.All() {
		for _, o := range e.Controls {
			if o.Kind == controls.Recorded && o.Stack == stack && o.IsRecorded() {
				return o.Recording
			}
		}
	}
	return ""
}

func gzipFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	if _, err := zw.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tail(out []byte) string {
	const n = 4000
	if len(out) > n {
		return "..." + string(out[len(out)-n:])
	}
	return string(out)
}
