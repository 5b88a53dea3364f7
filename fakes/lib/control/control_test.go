package control

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func newToken(t *testing.T) Token {
	t.Helper()
	tok, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// logLines collects a verifier's log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func TestTokens(t *testing.T) {
	a, b := newToken(t), newToken(t)
	if a == b || a.IsZero() || len(a.Secret()) != 64 {
		t.Fatalf("two tokens: %d hex digits, equal %v", len(a.Secret()), a == b)
	}
	if a.Hash() == b.Hash() || a.Hash() != HashOf(a.Secret()) || len(a.Hash()) != 64 {
		t.Errorf("hashes %s %s", a.Hash(), b.Hash())
	}
	if a.Bearer() != "Bearer "+a.Secret() || (Token{}).Bearer() != "" {
		t.Errorf("Bearer of a token and of no token")
	}
	back, err := ParseToken(a.Secret())
	if err != nil || back != a {
		t.Errorf("ParseToken(Secret) = %v, %v", back, err)
	}
	for _, bad := range []string{"", "xyz", a.Secret()[:62], a.Secret() + "00", strings.ToUpper(a.Secret())[:63] + "g"} {
		if _, err := ParseToken(bad); err == nil || (bad != "" && strings.Contains(err.Error(), bad)) {
			t.Errorf("ParseToken(%q): %v", bad, err)
		}
	}
}

// However a token is printed (an error, a log line, a report entry, a
// failure dump, JSON), it shows a placeholder.
func TestTokenNeverPrints(t *testing.T) {
	tok := newToken(t)
	type holder struct {
		Token Token
		Ptr   *Token
	}
	h := holder{Token: tok, Ptr: &tok}
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		outs = append(outs, fmt.Sprintf(verb, tok), fmt.Sprintf(verb, h), fmt.Sprintf(verb, &tok))
	}
	outs = append(outs, string(raw), fmt.Sprint(tok), fmt.Sprintln(h), tok.GomegaString())
	for _, out := range outs {
		if strings.Contains(out, tok.Secret()) || strings.Contains(strings.ToLower(out), tok.Secret()[:16]) {
			t.Errorf("printed the token: %s", out)
		}
	}
}

func TestNewVerifierWantsAHash(t *testing.T) {
	for _, bad := range []string{"", "abc", strings.Repeat("0", 63), strings.Repeat("0", 66), strings.Repeat("g", 64)} {
		if _, err := NewVerifier(bad, nil); err == nil || !strings.Contains(err.Error(), "--"+Flag) {
			t.Errorf("NewVerifier(%q): %v", bad, err)
		}
	}
}

func TestCheck(t *testing.T) {
	tok, other := newToken(t), newToken(t)
	v, err := NewVerifier(tok.Hash(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Check(tok.Bearer()) {
		t.Error("the right token is refused")
	}
	for name, h := range map[string]string{
		"none":              "",
		"empty bearer":      "Bearer ",
		"other token":       other.Bearer(),
		"the hash":          "Bearer " + tok.Hash(), // what a pod spec shows
		"no scheme":         tok.Secret(),
		"basic":             "Basic " + tok.Secret(),
		"lower-case scheme": "bearer " + tok.Secret(),
		"trailing space":    tok.Bearer() + " ",
		"truncated":         tok.Bearer()[:len(tok.Bearer())-1],
		"garbage":           "Bearer \x00\xff\n\r" + strings.Repeat("\xfe", 1<<16),
	} {
		if v.Check(h) {
			t.Errorf("%s: accepted", name)
		}
	}
	// A verifier for another run's hash refuses this run's token.
	v2, _ := NewVerifier(other.Hash(), nil)
	if v2.Check(tok.Bearer()) || !v2.Check(other.Bearer()) {
		t.Error("a verifier must accept exactly the token of its hash")
	}
}

// FuzzCheck: no Authorization value makes Check panic or accept.
func FuzzCheck(f *testing.F) {
	tok, _ := NewToken()
	v, _ := NewVerifier(tok.Hash(), nil)
	for _, seed := range []string{"", "Bearer", "Bearer ", "Bearer \x00", "Bearer " + tok.Hash(), "\xff\xfe"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if v.Check(h) && h != tok.Bearer() {
			t.Errorf("accepted %q", h)
		}
	})
}

func TestHTTP(t *testing.T) {
	tok, other := newToken(t), newToken(t)
	var log logLines
	v, err := NewVerifier(tok.Hash(), log.logf)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	var mu sync.Mutex
	srv := httptest.NewServer(v.HTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.Method+" "+r.URL.Path)
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	})))
	defer srv.Close()
	do := func(method, path string, headers ...string) int {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range headers {
			req.Header.Add("Authorization", h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return resp.StatusCode
	}

	// The probe's path answers without a token, for GET and HEAD only.
	if code := do("GET", "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz without a token: %d", code)
	}
	if code := do("HEAD", "/healthz"); code != http.StatusOK {
		t.Errorf("HEAD /healthz without a token: %d", code)
	}
	for _, c := range []struct {
		method, path string
		headers      []string
	}{
		{"POST", "/healthz", nil},
		{"GET", "/healthz/", nil},
		{"GET", "//healthz", nil},
		{"GET", "/healthz/../reset", nil},
		{"POST", "/reset", nil},
		{"GET", "/events", nil},
		{"POST", "/reset", []string{other.Bearer()}},
		{"POST", "/reset", []string{"Bearer " + tok.Hash()}},
		{"POST", "/reset", []string{"Bearer "}},
		{"POST", "/reset", []string{tok.Bearer(), other.Bearer()}},
		{"POST", "/reset", []string{other.Bearer(), tok.Bearer()}},
	} {
		if code := do(c.method, c.path, c.headers...); code != http.StatusUnauthorized {
			t.Errorf("%s %s with %d header(s): %d, want 401", c.method, c.path, len(c.headers), code)
		}
	}
	if code := do("POST", "/reset", tok.Bearer()); code != http.StatusOK {
		t.Errorf("POST /reset with the token: %d", code)
	}
	if code := do("GET", "/events", tok.Bearer()); code != http.StatusOK {
		t.Errorf("GET /events with the token: %d", code)
	}
	mu.Lock()
	got := strings.Join(served, ", ")
	mu.Unlock()
	if got != "GET /healthz, HEAD /healthz, POST /reset, GET /events" {
		t.Errorf("served %s", got)
	}
	lines := log.get()
	if len(lines) != 11 {
		t.Errorf("%d log lines for 11 refusals: %q", len(lines), lines)
	}
	for _, l := range lines {
		if strings.Contains(l, tok.Secret()) || strings.Contains(l, other.Secret()) || strings.Contains(l, "\n") {
			t.Errorf("log line shows a token or spans lines: %q", l)
		}
	}
}

// The interceptors guard unary and streaming calls alike.
func TestGRPC(t *testing.T) {
	tok, other := newToken(t), newToken(t)
	var log logLines
	v, err := NewVerifier(tok.Hash(), log.logf)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(v.ServerOptions()...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	call := func(creds ...grpc.DialOption) (unary, stream codes.Code) {
		t.Helper()
		conn, err := grpc.NewClient(ln.Addr().String(), append(creds, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := healthpb.NewHealthClient(conn)
		_, err = c.Check(ctx, &healthpb.HealthCheckRequest{})
		unary = status.Code(err)
		w, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = w.Recv()
		}
		return unary, status.Code(err)
	}
	if u, s := call(grpc.WithPerRPCCredentials(tok.PerRPCCredentials())); u != codes.OK || s != codes.OK {
		t.Errorf("with the token: unary %v, stream %v", u, s)
	}
	for name, opts := range map[string][]grpc.DialOption{
		"no token":    nil,
		"other token": {grpc.WithPerRPCCredentials(other.PerRPCCredentials())},
		"zero token":  {grpc.WithPerRPCCredentials(Token{}.PerRPCCredentials())},
	} {
		if u, s := call(opts...); u != codes.Unauthenticated || s != codes.Unauthenticated {
			t.Errorf("%s: unary %v, stream %v, want Unauthenticated", name, u, s)
		}
	}
	lines := log.get()
	if len(lines) != 6 {
		t.Errorf("%d log lines for 6 refusals: %q", len(lines), lines)
	}
	for _, l := range lines {
		if strings.Contains(l, tok.Secret()) || strings.Contains(l, other.Secret()) {
			t.Errorf("log line shows a token: %q", l)
		}
	}
}
