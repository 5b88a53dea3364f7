package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/drivers/fake/scope"
)

func TestCheckLoopbackNamesTheFlag(t *testing.T) {
	if err := checkLoopback("127.0.0.1:8080"); err != nil {
		t.Error(err)
	}
	if err := checkLoopback(":8080"); err == nil || !strings.Contains(err.Error(), "--http-address") {
		t.Errorf("err = %v, want a refusal naming the flag", err)
	}
}

// The defaults must pass the binary's own check.
func TestDefaultsAreLoopback(t *testing.T) {
	for _, addr := range []string{defaultPluginAddress, defaultRuntimeStateAddress} {
		if err := checkLoopback(addr); err != nil {
			t.Error(err)
		}
	}
}

func TestParseAllowFaultsIn(t *testing.T) {
	if ns, err := parseAllowFaultsIn("api"); err != nil || ns != nil {
		t.Errorf("api: %v %v", ns, err)
	}
	if ns, err := parseAllowFaultsIn("faultline-a, faultline-b"); err != nil || !slices.Equal(ns, []string{"faultline-a", "faultline-b"}) {
		t.Errorf("list: %v %v", ns, err)
	}
	for _, bad := range []string{"", "a,,b", "Not_A_Namespace", "any"} {
		ns, err := parseAllowFaultsIn(bad)
		if bad == "any" {
			// "any" is a valid namespace name, not a wildcard: there is none.
			if err != nil || !slices.Equal(ns, []string{"any"}) {
				t.Errorf("any: %v %v", ns, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q accepted as %v", bad, ns)
		}
	}
	g, err := newGate(context.Background(), []string{"x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.(scope.Static); !ok {
		t.Errorf("a list gives %T, want scope.Static", g)
	}
}

// Both commands refuse a non-loopback address with exit code 2, before
// they touch the runtime. run() defines its flags on the global set: one
// call per test binary.
func TestRefusesPodNetworkAddress(t *testing.T) {
	if code := runRuntimeState([]string{"--http-address=:8083"}); code != 2 {
		t.Errorf("runtime-state exit code %d, want 2", code)
	}
	saved := os.Args
	defer func() { os.Args = saved }()
	os.Args = []string{"fake-nri-plugin", "--name=faultline-a", "--index=10", "--http-address=0.0.0.0:8080", "--allow-faults-in=ns"}
	if code := run(); code != 2 {
		t.Errorf("plugin exit code %d, want 2", code)
	}
}
