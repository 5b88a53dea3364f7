package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/faultline-k8s/faultline/fakes/dra/driver"
	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/vocab/fakemodes"
)

// testToken is the run's control token in these tests.
var testToken, _ = control.NewToken()

// The whole binary minus flag parsing: readiness follows the kubelet's
// registration answer, and SIGTERM shuts down cleanly, removing the sockets.
func TestRegistrationReadinessAndSIGTERM(t *testing.T) {
	// Short path: Unix socket paths are limited to 108 bytes.
	dir, err := os.MkdirTemp("", "fddm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	regDir := filepath.Join(dir, "r")
	if err := os.Mkdir(regDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pluginDir := filepath.Join(dir, "p") // run must create it

	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(config{
			driverName: driver.DefaultDriverName, nodeName: "node-a", devices: 2, httpAddress: "127.0.0.1:0",
			pluginDataDir: pluginDir, registrarDir: regDir, healthInterval: time.Second, gcInterval: time.Second,
			claimStatus: true, tokenHash: testToken.Hash(),
			client:      fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}),
			onListening: func(a string) { addr <- a },
		})
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("run returned early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("HTTP API did not come up")
	}

	// The readiness probe holds no token.
	if code, body := get(t, base+"/healthz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the kubelet") {
		t.Errorf("before registration: %d %q", code, body)
	}
	// Every control wants this run's token.
	other, _ := control.NewToken()
	for _, path := range []string{"/calls", "/devices", "/healthstream", "/service", "/podresources?namespace=ns&pod=p"} {
		for who, auth := range map[string]string{"no token": "", "another run's token": other.Bearer(), "the hash": "Bearer " + testToken.Hash()} {
			if code, _ := do(t, http.MethodGet, base+path, auth); code != http.StatusUnauthorized {
				t.Errorf("GET %s with %s: %d, want 401", path, who, code)
			}
		}
	}
	for _, path := range []string{"/reset", "/devices/fail?device=dev-0", "/devices/repair?device=dev-0"} {
		for who, auth := range map[string]string{"no token": "", "another run's token": other.Bearer()} {
			if code, _ := do(t, http.MethodPost, base+path, auth); code != http.StatusUnauthorized {
				t.Errorf("POST %s with %s: %d, want 401", path, who, code)
			}
		}
	}
	code, body := get(t, base+"/devices")
	var devices []driver.DeviceState
	if err := json.Unmarshal([]byte(body), &devices); code != http.StatusOK || err != nil || len(devices) != 2 {
		t.Fatalf("GET /devices with the token: %d %s %v", code, body, err)
	}
	for _, d := range devices {
		if !d.Healthy || d.Failure != nil {
			t.Errorf("the refused POSTs must have broken nothing: %+v", d)
		}
	}
	// Started without --pod-resources-socket (as the second driver is).
	if code, body := get(t, base+"/podresources?namespace=ns&pod=p"); code != http.StatusNotImplemented || !strings.Contains(body, "--pod-resources-socket") {
		t.Errorf("GET /podresources without a socket: %d %q", code, body)
	}
	if code, body := do(t, http.MethodPost, base+"/reset", testToken.Bearer()); code != http.StatusOK {
		t.Errorf("POST /reset with the token: %d %s", code, body)
	}

	// Play the kubelet's part of the registration handshake.
	conn, err := grpc.NewClient("unix://"+filepath.Join(regDir, driver.DefaultDriverName+"-reg.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	reg := registerapi.NewRegistrationClient(conn)
	info, err := reg.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != driver.DefaultDriverName || info.Endpoint != filepath.Join(pluginDir, "dra.sock") ||
		!slices.Contains(info.SupportedVersions, drapbv1.DRAPluginService) ||
		!slices.Contains(info.SupportedVersions, drahealthv1alpha1.DRAResourceHealth_ServiceDesc.ServiceName) {
		t.Errorf("GetInfo: %+v", info)
	}
	if _, err := reg.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || strings.TrimSpace(body) != "ok" {
		t.Errorf("after registration: %d %q", code, body)
	}
	if code, body := get(t, base+"/calls"); code != http.StatusOK || !strings.Contains(body, `"calls": []`) {
		t.Errorf("GET /calls: %d %q", code, body)
	}
	if code, body := get(t, base+"/healthstream"); code != http.StatusOK || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /healthstream: %d %q", code, body)
	}

	// The kubelet stops the pod with SIGTERM; run has installed its handler
	// (the HTTP API only starts after that), so this does not kill the test.
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after SIGTERM")
	}
	for _, sock := range []string{filepath.Join(pluginDir, "dra.sock"), filepath.Join(regDir, driver.DefaultDriverName+"-reg.sock")} {
		if _, err := os.Stat(sock); !os.IsNotExist(err) {
			t.Errorf("%s still exists after shutdown: %v", sock, err)
		}
	}
}

// get reads url as the suite does, with the token.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	return do(t, http.MethodGet, url, testToken.Bearer())
}

func do(t *testing.T, method, url, auth string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// The HTTP API breaks devices on request: only loopback IPs are accepted,
// and run refuses anything else before it listens.
func TestLoopbackOnly(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8080":  true,
		"127.0.0.2:8080":  true,
		"[::1]:8080":      true,
		":8080":           false, // every interface
		"0.0.0.0:8080":    false,
		"[::]:8080":       false,
		"10.244.1.7:8080": false,
		"localhost:8080":  false, // a name may resolve to anything
		"127.0.0.1":       false, // no port
	} {
		err := loopbackOnly(addr)
		if (err == nil) != ok {
			t.Errorf("%q: %v", addr, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--http-address") {
			t.Errorf("%q: the error must name the flag: %v", addr, err)
		}
	}
	err := run(config{driverName: driver.DefaultDriverName, nodeName: "node-a", httpAddress: ":0"})
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("run with a non-loopback address: %v", err)
	}
}

// A --cdi-dir that is not a directory is refused at start, not when the
// first claim asks for CDI devices.
func TestCDIDirMustExist(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		err := run(config{driverName: driver.DefaultDriverName, nodeName: "node-a", httpAddress: "127.0.0.1:0",
			pluginDataDir: t.TempDir(), cdiDir: dir, tokenHash: testToken.Hash()})
		if err == nil || !strings.Contains(err.Error(), "--cdi-dir "+dir) {
			t.Errorf("%s: %v", dir, err)
		}
	}
}

// Without the control token's hash (or with a malformed one) the driver
// does not start: its HTTP API would answer anyone who can port-forward.
func TestRunWantsTheTokenHash(t *testing.T) {
	for _, hash := range []string{"", "not-hex", testToken.Secret()[:10]} {
		err := run(config{driverName: driver.DefaultDriverName, nodeName: "node-a", httpAddress: "127.0.0.1:0",
			pluginDataDir: t.TempDir(), tokenHash: hash})
		if err == nil || !strings.Contains(err.Error(), "--"+control.Flag) {
			t.Errorf("hash %q: %v", hash, err)
		}
	}
}

// --fake-mode takes only this fake's documented misbehaviours, each once.
func TestParseFakeModes(t *testing.T) {
	if modes, err := parseFakeModes(""); err != nil || modes != nil {
		t.Errorf("empty: %v %v", modes, err)
	}
	if modes, err := parseFakeModes(fakemodes.FirstFailingDeviceOnly); err != nil || len(modes) != 1 {
		t.Errorf("%v %v", modes, err)
	}
	for _, bad := range []string{",", "crash", fakemodes.FirstFailingDeviceOnly + "," + fakemodes.FirstFailingDeviceOnly, fakemodes.FirstFailingDeviceOnly + ","} {
		if _, err := parseFakeModes(bad); err == nil || !strings.Contains(err.Error(), "--fake-mode") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
