package ociruntime

import (
	"testing"
	"time"
)

func TestParseArgs(t *testing.T) {
	cases := []struct {
		args []string
		want Invocation
	}{
		// containerd's shim (go-runc)
		{[]string{"--root", "/run/containerd/runc/k8s.io", "--log", "/x/log.json", "--log-format", "json", "--systemd-cgroup",
			"create", "--bundle", "/run/b", "--pid-file", "/run/b/init.pid", "abc"}, Invocation{"create", "abc", "/run/b"}},
		// CRI-O's conmon
		{[]string{"--systemd-cgroup", "--root=/run/runc", "create", "--bundle", "/b", "--pid-file", "/p", "--console-socket", "/s", "--no-pivot", "def"},
			Invocation{"create", "def", "/b"}},
		{[]string{"--root", "/run/runc", "delete", "--force", "abc"}, Invocation{"delete", "abc", ""}},
		{[]string{"--root", "/run/runc", "kill", "abc", "9"}, Invocation{"kill", "abc", ""}},
		{[]string{"features"}, Invocation{"features", "", ""}},
	}
	for _, c := range cases {
		if got := ParseArgs(c.args); got != c.want {
			t.Errorf("ParseArgs(%q) = %+v, want %+v", c.args, got, c.want)
		}
	}
}

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

func TestParseLogSkipsTornLines(t *testing.T) {
	got := ParseLog([]byte(`{"command":"create","phase":"begin","id":"a"}` + "\n" + `{"command":"del`))
	if len(got) != 1 || got[0].ID != "a" {
		t.Errorf("got %+v", got)
	}
}
