package ociruntime

// Building the annotations that ask runc-slow for a slow creation: the
// inverse of SpecFromAnnotations, next to it so that the two cannot drift
// apart (annotations_test.go checks that what Annotations writes,
// SpecFromAnnotations reads back identically).

import "time"

// SlowCreate is what a sandbox or container config (or a pod, whose
// annotations the runtime passes on) asks of runc-slow.
type SlowCreate struct {
	// Request identifies the records of the objects (RequestAnnotation).
	Request string
	// SandboxDelay delays the OCI create of the sandbox
	// (SandboxDelayAnnotation); 0: not at all.
	SandboxDelay time.Duration
	// ContainerDelay delays the OCI create of the containers
	// (ContainerDelayAnnotation); 0: not at all.
	ContainerDelay time.Duration
	// Hold makes each delay the bound of a hold the spec ends with a
	// release (HoldAnnotation).
	Hold bool
}

// Annotations returns the annotations that ask for s: the request, and each
// delay that is not zero.
func (s SlowCreate) Annotations() map[string]string {
	a := map[string]string{RequestAnnotation: s.Request}
	if s.SandboxDelay > 0 {
		a[SandboxDelayAnnotation] = s.SandboxDelay.String()
	}
	if s.ContainerDelay > 0 {
		a[ContainerDelayAnnotation] = s.ContainerDelay.String()
	}
	if s.Hold && (s.SandboxDelay > 0 || s.ContainerDelay > 0) {
		a[HoldAnnotation] = "true"
	}
	return a
}
