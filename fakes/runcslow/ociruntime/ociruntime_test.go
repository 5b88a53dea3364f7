package ociruntime

import (
	"testing"
	"time"
)

func TestSpecFromAnnotations(t *testing.T) {
	spec, err := SpecFromAnnotations(map[string]string{
		"io.kubernetes.cri-o.ContainerType": "sandbox", SandboxDelayAnnotation: "8s",
		ContainerDelayAnnotation: "3s", RequestAnnotation: "r1",
	})
	if err != nil || spec != (Spec{Kind: "sandbox", Request: "r1", Delay: 8 * time.Second}) {
		t.Errorf("sandbox: got %+v, %v", spec, err)
	}
	spec, err = SpecFromAnnotations(map[string]string{
		"io.kubernetes.cri.container-type": "container", SandboxDelayAnnotation: "8s",
	})
	if err != nil || spec.Delay != 0 || spec.Kind != "container" {
		t.Errorf("a container does not take the sandbox's delay: got %+v, %v", spec, err)
	}
	for _, bad := range []string{"eight", "-1s", "1h"} {
		if _, err := SpecFromAnnotations(map[string]string{
			"io.kubernetes.cri.container-type": "container", ContainerDelayAnnotation: bad,
		}); err == nil {
			t.Errorf("delay %q: want an error", bad)
		}
	}
}
