// Package control is the per-run token that gates the fakes' controls and
// the CRI relay. The suite process makes a random token when a run starts
// and holds it in memory only; the fixture sets carry just its SHA-256
// (--control-token-sha256), so a pod spec, an exec into the pod or a
// port-forward (pods/portforward is in the built-in edit and admin roles)
// gives nothing that answers. Every HTTP request but the readiness probe's
// /healthz, and every gRPC call through the relay, must send the token:
// "Authorization: Bearer <token>" (the gRPC metadata key authorization).
package control

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

const (
	// Flag is the fakes' and the relay's flag for the token's hash.
	Flag = "control-token-sha256"
	// FlagUsage is its help text.
	FlagUsage = "hex SHA-256 of the run's control token (the suite holds the token); every request but GET /healthz must send it as Authorization: Bearer <token>"
	// HealthPath answers without the token: the readiness probe (fakes/probe)
	// runs inside the container and holds none. It only reports, never acts.
	HealthPath = "/healthz"
	// MetadataKey carries the token on gRPC calls (lower case, as gRPC
	// metadata keys are).
	MetadataKey = "authorization"

	tokenBytes = 32
	bearer     = "Bearer "
	redacted   = "[control token]"
)

// Token is the secret. Every way fmt, encoding/json and gomega print a value
// prints a placeholder instead, so that a token in an error, a log line, a
// report entry or a failure dump gives nothing away; Secret and Bearer are
// the only ways to read it.
type Token struct{ text string }

// NewToken makes a token from crypto/rand.
func NewToken() (Token, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return Token{}, fmt.Errorf("control token: %w", err)
	}
	return Token{text: hex.EncodeToString(b)}, nil
}

// ParseToken reads what Secret returned (another Ginkgo process's token).
func ParseToken(s string) (Token, error) {
	if b, err := hex.DecodeString(s); err != nil || len(b) != tokenBytes {
		return Token{}, errors.New("control token: want 64 hex digits") // never echo the input
	}
	return Token{text: s}, nil
}

// IsZero reports whether t is no token.
func (t Token) IsZero() bool { return t.text == "" }

// Secret is the token itself, for handing it to another process of the run.
func (t Token) Secret() string { return t.text }

// Bearer is the Authorization header's value; "" for the zero token.
func (t Token) Bearer() string {
	if t.IsZero() {
		return ""
	}
	return bearer + t.text
}

// Hash is what the fixture sets carry: the hex SHA-256 of the token.
func (t Token) Hash() string { return HashOf(t.text) }

// HashOf is the hex SHA-256 of a token's text.
func HashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func (t Token) String() string               { return redacted }
func (t Token) GoString() string             { return redacted }
func (t Token) GomegaString() string         { return redacted }
func (t Token) Format(f fmt.State, _ rune)   { _, _ = f.Write([]byte(redacted)) }
func (t Token) MarshalText() ([]byte, error) { return []byte(redacted), nil }
func (t Token) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// PerRPCCredentials send the token with every gRPC call (grpc.WithPerRPCCredentials).
func (t Token) PerRPCCredentials() credentials.PerRPCCredentials { return perRPC{t} }

// perRPC sends the token with every gRPC call. The relay is reached through
// a port-forward to the pod's loopback, plaintext, so it cannot ask for
// transport security.
type perRPC struct{ t Token }

func (c perRPC) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{MetadataKey: c.t.Bearer()}, nil
}

func (perRPC) RequireTransportSecurity() bool { return false }

// Verifier checks tokens against the hash a fake was started with.
type Verifier struct {
	hash [sha256.Size]byte
	logf func(format string, args ...any)
}

// NewVerifier takes the hex SHA-256 of --control-token-sha256; logf gets
// one line per refused request (never what it sent).
func NewVerifier(hashHex string, logf func(format string, args ...any)) (*Verifier, error) {
	b, err := hex.DecodeString(hashHex)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("--%s: want the 64 hex digits of a SHA-256 (the suite sets it when it deploys the fixtures)", Flag)
	}
	v := &Verifier{logf: logf}
	copy(v.hash[:], b)
	return v, nil
}

// Check reports whether an Authorization value carries the token. Any
// input is fine: the comparison is of hashes, in constant time.
func (v *Verifier) Check(authorization string) bool {
	token, ok := strings.CutPrefix(authorization, bearer)
	if !ok || token == "" {
		return false
	}
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], v.hash[:]) == 1
}

func (v *Verifier) refused(what string) {
	if v.logf != nil {
		v.logf("refused %s: no or wrong control token", what)
	}
}

// HTTP lets GET and HEAD of HealthPath through and answers everything else
// 401 unless it carries the token.
func (v *Verifier) HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == HealthPath && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
			next.ServeHTTP(w, req)
			return
		}
		// One header only: two could mean two parties disagree.
		if values := req.Header.Values("Authorization"); len(values) != 1 || !v.Check(values[0]) {
			v.refused(fmt.Sprintf("%s %q", req.Method, req.URL.Path))
			w.Header().Set("WWW-Authenticate", `Bearer realm="faultline"`)
			http.Error(w, "control token required: only the suite run that deployed this fixture set may call it", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// ServerOptions install the check on every unary and streaming call.
func (v *Verifier) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(v.Unary), grpc.ChainStreamInterceptor(v.Stream)}
}

// Unary is a grpc.UnaryServerInterceptor.
func (v *Verifier) Unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := v.checkContext(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

// Stream is a grpc.StreamServerInterceptor (it also guards a server's
// UnknownServiceHandler, which the relay proxies every call through).
func (v *Verifier) Stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := v.checkContext(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

func (v *Verifier) checkContext(ctx context.Context, method string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	if values := md.Get(MetadataKey); len(values) != 1 || !v.Check(values[0]) {
		v.refused(fmt.Sprintf("gRPC %q", method))
		return status.Error(codes.Unauthenticated, "control token required: only the suite run that deployed this fixture set may call it")
	}
	return nil
}
