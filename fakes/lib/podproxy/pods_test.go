package podproxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
)

// testPods forwards every pod to the addresses in order, one per forward
// opened, and counts the forwards.
func testPods(addrs ...string) (*Pods, *int) {
	opened := 0
	p := NewPodsWith(nil, func(_ context.Context, _ *v1.Pod, _ int) (string, func(), <-chan struct{}, error) {
		if opened >= len(addrs) {
			return "", nil, nil, errors.New("no more forwards")
		}
		opened++
		return addrs[opened-1], func() {}, nil, nil
	}, control.Token{})
	return p, &opened
}

var pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "fake-0", UID: "uid-0"}}

func TestPodsReuseForwardAndReportRefusals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("device") == "bad" {
			http.Error(w, "unknown device \"bad\"", http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(`{"method":"` + r.Method + `","path":"` + r.URL.Path + `"}`))
	}))
	defer srv.Close()
	p, opened := testPods(srv.Listener.Addr().String())
	var out struct{ Method, Path string }
	if err := p.GetJSON(context.Background(), pod, "8080", "/calls", nil, &out); err != nil || out.Method != "GET" || out.Path != "/calls" {
		t.Fatalf("GET: %+v %v", out, err)
	}
	if err := p.PostJSON(context.Background(), pod, "8080", "/reset", nil, &out); err != nil || out.Method != "POST" {
		t.Fatalf("POST: %+v %v", out, err)
	}
	_, err := p.Post(context.Background(), pod, "8080", "/devices/fail", map[string]string{"device": "bad"})
	var httpErr *HTTPError
	if !errors.As(err, &httpErr) || httpErr.Status != http.StatusBadRequest || httpErr.Body != `unknown device "bad"` {
		t.Errorf("refusal: %v", err)
	}
	if *opened != 1 {
		t.Errorf("opened %d forwards, want 1 reused", *opened)
	}
}

// A forward that broke (the container restarted) is replaced once.
func TestPodsReplaceBrokenForward(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	p, opened := testPods(deadAddr, srv.Listener.Addr().String())
	if raw, err := p.Get(context.Background(), pod, "8080", "/healthz", nil); err != nil || string(raw) != "ok" {
		t.Fatalf("got %q %v", raw, err)
	}
	if *opened != 2 {
		t.Errorf("opened %d forwards, want 2", *opened)
	}
}

func TestPodsRefuseNamedPorts(t *testing.T) {
	p, _ := testPods()
	if _, err := p.Get(context.Background(), pod, "http", "/", nil); err == nil {
		t.Error("a port name must be refused: port-forward takes numbers")
	}
}

// A POST whose forward refused the connection never reached the pod and is
// sent once more; a POST that may have reached it is not sent again (a
// restart that cut its own forward).
func TestPodsRetryPostOnlyWhenItNeverLeft(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	posted := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { posted++ }))
	defer srv.Close()
	p, opened := testPods(deadAddr, srv.Listener.Addr().String())
	if _, err := p.Post(context.Background(), pod, "8080", "/reset", nil); err != nil {
		t.Fatal(err)
	}
	if *opened != 2 || posted != 1 {
		t.Errorf("opened %d forwards and posted %d times, want 2 and 1", *opened, posted)
	}

	// The answer is cut after the request went out: no second POST.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		posted++
		hj, _ := w.(http.Hijacker)
		conn, _, _ := hj.Hijack()
		conn.Close()
	}))
	defer cut.Close()
	posted = 0
	p, opened = testPods(cut.Listener.Addr().String(), srv.Listener.Addr().String())
	if _, err := p.Post(context.Background(), pod, "8080", "/restart-runtime", nil); err == nil {
		t.Fatal("a POST without an answer must fail")
	}
	if *opened != 1 || posted != 1 {
		t.Errorf("opened %d forwards and posted %d times, want 1 and 1", *opened, posted)
	}
}

// A forward that ends by itself leaves the cache.
func TestPodsForgetEndedForward(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	defer srv.Close()
	done := make(chan struct{})
	opened := 0
	p := NewPodsWith(nil, func(context.Context, *v1.Pod, int) (string, func(), <-chan struct{}, error) {
		opened++
		if opened == 1 {
			return srv.Listener.Addr().String(), func() {}, done, nil
		}
		return srv.Listener.Addr().String(), func() {}, nil, nil
	}, control.Token{})
	if _, err := p.Get(context.Background(), pod, "8080", "/", nil); err != nil {
		t.Fatal(err)
	}
	close(done)
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		n := len(p.forwards)
		p.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ended forward is still cached")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := p.Get(context.Background(), pod, "8080", "/", nil); err != nil || opened != 2 {
		t.Errorf("after the forward ended: %v, %d forwards opened", err, opened)
	}
}

// Every request carries the run's control token, GETs and POSTs alike, and
// a fake that refuses it is an HTTPError (401) that says why but not the token.
func TestPodsSendTheControlToken(t *testing.T) {
	token, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	v, err := control.NewVerifier(token.Hash(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	srv := httptest.NewServer(v.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path)
		_, _ = w.Write([]byte(`{}`))
	})))
	defer srv.Close()
	forward := func(context.Context, *v1.Pod, int) (string, func(), <-chan struct{}, error) {
		return srv.Listener.Addr().String(), func() {}, nil, nil
	}
	p := NewPodsWith(nil, forward, token)
	if p.Token() != token {
		t.Error("Token must return the token Pods sends")
	}
	var out struct{}
	if err := p.GetJSON(context.Background(), pod, "8080", "/calls", nil, &out); err != nil {
		t.Errorf("GET with the token: %v", err)
	}
	if _, err := p.Post(context.Background(), pod, "8080", "/reset", nil); err != nil {
		t.Errorf("POST with the token: %v", err)
	}
	if len(seen) != 2 {
		t.Errorf("the fake served %v, want a GET and a POST", seen)
	}

	other, _ := control.NewToken()
	for name, p := range map[string]*Pods{
		"no token":    NewPodsWith(nil, forward, control.Token{}),
		"other token": NewPodsWith(nil, forward, other),
	} {
		_, err := p.Post(context.Background(), pod, "8080", "/reset", nil)
		var httpErr *HTTPError
		if !errors.As(err, &httpErr) || httpErr.Status != http.StatusUnauthorized {
			t.Errorf("%s: %v, want a 401", name, err)
		}
		if err != nil && (strings.Contains(err.Error(), token.Secret()) || strings.Contains(err.Error(), other.Secret())) {
			t.Errorf("%s: the error shows a token: %v", name, err)
		}
	}
	if len(seen) != 2 {
		t.Errorf("the fake acted without the token: %v", seen)
	}
}

// A witness read outlives its caller's deadline (a poll's window on a
// loaded node), is sent again when an attempt gets no answer in time, and
// ends with its caller's cancel.
func TestPodsReadOnTheirOwnBudget(t *testing.T) {
	defer func(a, b time.Duration) { attemptTimeout, firstBackOff = a, b }(attemptTimeout, firstBackOff)
	attemptTimeout, firstBackOff = 200*time.Millisecond, 10*time.Millisecond
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if calls == 1 {
			// The first attempt gets no answer in time.
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
		_, _ = w.Write([]byte("records"))
	}))
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	p, opened := testPods(addr, addr, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	raw, err := p.Get(ctx, pod, "8080", "/records", nil)
	if err != nil || string(raw) != "records" {
		t.Fatalf("got %q %v; want the records after the caller's deadline", raw, err)
	}
	if calls != 2 || *opened != 2 {
		t.Errorf("%d requests on %d forwards, want 2 on 2", calls, *opened)
	}

	stuck := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stuck.Close()
	p, _ = testPods(stuck.Listener.Addr().String())
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	if _, err := p.Get(ctx, pod, "8080", "/records", nil); err == nil {
		t.Fatal("a cancelled read must fail")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the cancelled read took %s", d)
	}
}

// A forward that cannot be opened (the pod is gone) is tried a few times,
// not for the whole budget.
func TestPodsGiveUpOnForwardsThatCannotOpen(t *testing.T) {
	defer func(b time.Duration) { firstBackOff = b }(firstBackOff)
	firstBackOff = time.Millisecond
	p, _ := testPods()
	_, err := p.Get(context.Background(), pod, "8080", "/records", nil)
	if err == nil || !strings.Contains(err.Error(), "no more forwards") || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("err = %v, want the forward's error after 3 attempts", err)
	}
}
