package engine

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func TestStopStartedWithoutMarkerLeavesEnginesAlone(t *testing.T) {
	var out bytes.Buffer
	opts := Options{StateDir: t.TempDir(), Out: &out}
	if err := StopStarted(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "leaving any other alone") {
		t.Errorf("output: %q", out.String())
	}
}

// A marker whose PID now belongs to another process must not get that
// process killed.
func TestStopStartedChecksThePIDIsDockerd(t *testing.T) {
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	opts := Options{StateDir: t.TempDir(), Out: &bytes.Buffer{}}
	if err := writeMarker(opts.StateDir, other.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if err := StopStarted(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the process behind a stale marker was signalled: %v", err)
	}
	if _, err := os.Stat(markerPath(opts.StateDir)); !os.IsNotExist(err) {
		t.Errorf("stale marker not removed: %v", err)
	}
}

func TestBadMarkerIsAnError(t *testing.T) {
	opts := Options{StateDir: t.TempDir(), Out: &bytes.Buffer{}}
	if err := os.WriteFile(markerPath(opts.StateDir), []byte("not a pid"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := StopStarted(context.Background(), opts); err == nil {
		t.Fatal("want an error for a garbled marker")
	}
}

func TestNotStartedStopIsANoOp(t *testing.T) {
	var e *Engine
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	(&Engine{}).Keep()
}
