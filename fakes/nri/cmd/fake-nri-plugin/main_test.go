package main

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fakes/lib/scope"
	"github.com/faultline-k8s/faultline/fakes/nri/record"
	"github.com/faultline-k8s/faultline/fakes/nri/runtimestate"
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

// runtime-state refuses to start without the control token's hash, and
// with a malformed one: its state would answer anyone who can port-forward.
func TestRuntimeStateWantsTheTokenHash(t *testing.T) {
	for _, args := range [][]string{nil, {"--" + control.Flag + "=abc"}} {
		if code := runRuntimeState(args); code != 2 {
			t.Errorf("%v: exit code %d, want 2", args, code)
		}
	}
}

// Both HTTP sides answer only the run's token; /healthz answers the
// readiness probe without one.
func TestHTTPWantsTheControlToken(t *testing.T) {
	token, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := control.NewToken()
	quiet := slog.New(slog.NewTextHandler(&strings.Builder{}, nil))
	v, err := newVerifier(token.Hash(), quiet)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Plugin: "faultline-a", Index: "10", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	// Never connects: no runtime here. /runtime then fails, but after the token check.
	state, err := runtimestate.Dial("unix://"+filepath.Join(t.TempDir(), "none.sock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer state.Close()
	for name, c := range map[string]struct {
		h    http.Handler
		path string
	}{
		"plugin":        {pluginHandler(v, rec, func() error { return nil }), "/events"},
		"runtime-state": {runtimeStateHandler(v, state), "/runtime"},
	} {
		srv := httptest.NewServer(c.h)
		get := func(path, auth string) int {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		for who, auth := range map[string]string{"no token": "", "another run's token": other.Bearer(), "the hash": "Bearer " + token.Hash()} {
			if code := get(c.path, auth); code != http.StatusUnauthorized {
				t.Errorf("%s: GET %s with %s: %d, want 401", name, c.path, who, code)
			}
		}
		if code := get(c.path, token.Bearer()); code == http.StatusUnauthorized || (name == "plugin" && code != http.StatusOK) {
			t.Errorf("%s: GET %s with the token: %d", name, c.path, code)
		}
		if code := get("/healthz", ""); code == http.StatusUnauthorized || (name == "plugin" && code != http.StatusOK) {
			t.Errorf("%s: GET /healthz without a token: %d", name, code)
		}
		srv.Close()
	}
}
