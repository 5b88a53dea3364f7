package ociruntime

import (
	"maps"
	"testing"
	"time"
)

// What the builder writes, runc-slow must read back as the same request and
// delay, for a sandbox and for a container, as containerd and CRI-O name
// the object's kind.
func TestAnnotationsRoundTrip(t *testing.T) {
	for _, s := range []SlowCreate{
		{Request: "cri-1234"},
		{Request: "cri-1234", SandboxDelay: 10 * time.Second},
		{Request: "cri-1234", ContainerDelay: 1500 * time.Millisecond},
		{Request: "slow-pod", SandboxDelay: 65 * time.Second, ContainerDelay: 35 * time.Second},
		{Request: "max", SandboxDelay: MaxDelay, ContainerDelay: time.Millisecond},
		{Request: "cri-1234", SandboxDelay: time.Minute, Hold: true},
		{Request: "cri-1234", SandboxDelay: time.Minute, ContainerDelay: time.Minute, Hold: true},
	} {
		for kind, delay := range map[string]time.Duration{"sandbox": s.SandboxDelay, "container": s.ContainerDelay} {
			for _, typeKey := range containerTypeAnnotations {
				a := s.Annotations()
				a[typeKey] = kind
				got, err := SpecFromAnnotations(a)
				if err != nil {
					t.Errorf("%+v as %s (%s): %v", s, kind, typeKey, err)
					continue
				}
				if want := (Spec{Kind: kind, Request: s.Request, Delay: delay, Hold: s.Hold && delay > 0}); got != want {
					t.Errorf("%+v as %s (%s): read back %+v, want %+v", s, kind, typeKey, got, want)
				}
			}
		}
	}
}

// The builder writes what the CRI suite wrote by hand before it existed.
func TestAnnotationsAsWrittenBefore(t *testing.T) {
	got := SlowCreate{Request: "r", SandboxDelay: 25 * time.Second, ContainerDelay: 15 * time.Second}.Annotations()
	want := map[string]string{
		RequestAnnotation:        "r",
		SandboxDelayAnnotation:   "25s",
		ContainerDelayAnnotation: "15s",
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := (SlowCreate{Request: "r"}).Annotations(); !maps.Equal(got, map[string]string{RequestAnnotation: "r"}) {
		t.Errorf("no delay: got %v", got)
	}
}
