package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/internal/artifactdir"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// TestReportOutRefusesADirectoryItDidNotMake: a combined report goes only
// into a directory faultline made (or an empty one), never over a user's
// report.md; both refusals are bad input.
func TestReportOutRefusesADirectoryItDidNotMake(t *testing.T) {
	runs := []string{t.TempDir(), t.TempDir()}
	for _, dir := range runs {
		if err := os.WriteFile(filepath.Join(dir, verdicts.ManifestFile), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	report := func(out string) error {
		fs := flag.NewFlagSet("faultline report", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		run := commands["report"].setup(fs)
		if err := fs.Parse([]string{"--artifacts", strings.Join(runs, ","), "--out", out}); err != nil {
			t.Fatal(err)
		}
		return run(context.Background(), nil)
	}

	unmarked := t.TempDir()
	if err := os.WriteFile(filepath.Join(unmarked, "report.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	marked := t.TempDir()
	if _, err := artifactdir.Claim(marked, "--out", "test"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(marked, "report.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{unmarked, marked} {
		err := report(out)
		var usage usageError
		if !errors.As(err, &usage) || !errors.Is(err, artifactdir.ErrNotOurs) || !strings.Contains(err.Error(), "--out") {
			t.Errorf("--out %s: err = %v, want a usage error naming --out", out, err)
		}
		if data, _ := os.ReadFile(filepath.Join(out, "report.md")); string(data) != "mine" {
			t.Errorf("--out %s: report.md = %q", out, data)
		}
	}
}
