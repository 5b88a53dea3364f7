package ociruntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGateRequestNames(t *testing.T) {
	for _, ok := range []string{"cri-1234", "a", strings.Repeat("a", 63)} {
		if err := CheckRequest(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "../x", "a/b", ".", "..", "-a", "a-", "A", strings.Repeat("a", 64), "a b", "a\x00"} {
		if err := CheckRequest(bad); err == nil {
			t.Errorf("%q: accepted as a gate's name", bad)
		}
		dir := t.TempDir()
		if err := Release(dir, bad); err == nil {
			t.Errorf("%q: released", bad)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%q: made %v", bad, entries)
		}
	}
}

func TestGateReleasesAHold(t *testing.T) {
	dir := t.TempDir()
	if Released(dir, "cri-1") {
		t.Fatal("released before Release")
	}
	begin := time.Now()
	if Hold(50*time.Millisecond, func() bool { return Released(dir, "cri-1") }) {
		t.Error("a hold nobody released says released")
	}
	if time.Since(begin) < 50*time.Millisecond {
		t.Error("a hold ended before its bound")
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		if err := Release(dir, "cri-1"); err != nil {
			t.Error(err)
		}
	}()
	begin = time.Now()
	if !Hold(time.Minute, func() bool { return Released(dir, "cri-1") }) {
		t.Error("a released hold says it ran to its bound")
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("the hold took %s after its release", took)
	}
	if err := Release(dir, "cri-1"); err != nil {
		t.Errorf("a second release: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cri-1")); err != nil {
		t.Error(err)
	}
}

func TestHoldAnnotationParsing(t *testing.T) {
	base := func() map[string]string {
		return map[string]string{"io.kubernetes.cri.container-type": "sandbox", SandboxDelayAnnotation: "1m", RequestAnnotation: "cri-1"}
	}
	a := base()
	a[HoldAnnotation] = "yes"
	if _, err := SpecFromAnnotations(a); err == nil || !strings.Contains(err.Error(), HoldAnnotation) {
		t.Errorf("hold=yes: %v, want an error naming the annotation", err)
	}
	a = base()
	a[HoldAnnotation] = "true"
	a[RequestAnnotation] = "../etc"
	if _, err := SpecFromAnnotations(a); err == nil {
		t.Error("a hold whose request cannot name a gate was accepted")
	}
}

// A failing release opens the gate and fails exactly one held creation; a
// bad name makes nothing.
func TestGateFailsOnce(t *testing.T) {
	dir := t.TempDir()
	if TakeFailure(dir, "cri-1") {
		t.Fatal("a failure taken before any release")
	}
	if err := ReleaseFailing(dir, "cri-1"); err != nil {
		t.Fatal(err)
	}
	if !Released(dir, "cri-1") {
		t.Error("a failing release left the gate shut")
	}
	if !TakeFailure(dir, "cri-1") {
		t.Error("the first hold did not take the failure")
	}
	if TakeFailure(dir, "cri-1") {
		t.Error("the failure was taken twice")
	}
	if TakeFailure(dir, "cri-2") {
		t.Error("another request took the failure")
	}
	if err := ReleaseFailing(dir, "../x"); err == nil {
		t.Error("a bad name released")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("the gate directory holds %v, want the one release", entries)
	}
}
