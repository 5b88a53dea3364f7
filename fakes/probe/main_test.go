package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
)

// The probe holds no token: it passes on a guarded server's /healthz, and
// asks nothing else.
func TestProbeAsksOnlyTheHealthPath(t *testing.T) {
	if healthPath != control.HealthPath {
		t.Fatalf("the probe asks %s, the fakes answer %s without a token", healthPath, control.HealthPath)
	}
	token, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	v, err := control.NewVerifier(token.Hash(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(v.HTTP(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })))
	defer srv.Close()
	base := srv.URL // httptest listens on 127.0.0.1
	if err := probe(base + "/healthz"); err != nil {
		t.Errorf("/healthz without a token: %v", err)
	}
	for _, bad := range []string{base + "/events", base + "/reset", base + "/healthz?x=1", base + "/", "http://10.0.0.1:8080/healthz"} {
		if err := probe(bad); err == nil || !strings.Contains(err.Error(), "want http://127.0.0.1:<port>/healthz") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
