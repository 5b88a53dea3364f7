package driver

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"

	"github.com/faultline-k8s/faultline/fakes/lib/query"
)

// A device-failure message that is not UTF-8 (from the query string) or is
// cut mid-character must not break the health stream or the prepare
// response: protobuf refuses to marshal invalid UTF-8.
func TestInvalidUTF8NeverReachesTheWire(t *testing.T) {
	for name, message := range map[string]string{
		"invalid bytes":        "GPU \xff\xfe fell off",
		"cut mid-character":    strings.Repeat("é", 2*maxFailMessage), // cut at maxFailMessage, and at 1024 for health
		"invalid and long":     strings.Repeat("\xe2\x82", 3000),
		"valid long non-ASCII": strings.Repeat("€", 1000),
	} {
		t.Run(name, func(t *testing.T) {
			c := newClaim("utf8", []alloc{{"gpu", "dev-1"}})
			h := newHarness(t, c)
			waitHealth := h.healthWatcher()
			// The raw query, as a client would send it: url.Values would not
			// let invalid UTF-8 through unescaped, but %ff decodes to it.
			srv := httptest.NewServer(h.drv.FailHandler())
			defer srv.Close()
			resp, err := http.Post(srv.URL+"?device=dev-1&message="+url.QueryEscape(message), "", nil)
			if err != nil {
				t.Fatal(err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /devices/fail: %s", resp.Status)
			}
			hs := waitHealth("dev-1 unhealthy", func(hs map[string]*drahealthv1alpha1.DeviceHealth) bool {
				return hs["dev-1"] != nil && hs["dev-1"].Health == drahealthv1alpha1.HealthStatus_UNHEALTHY
			})
			if m := hs["dev-1"].Message; !utf8.ValidString(m) || len(m) > 1024 || m == "" {
				t.Errorf("health message of %d bytes, valid %v", len(m), utf8.ValidString(m))
			}
			res := h.prepare(c) // fails the call if the response cannot be marshalled
			if !utf8.ValidString(res.Error) || !strings.Contains(res.Error, "permanent/DeviceFailed") {
				t.Errorf("prepare error %q", res.Error)
			}
			if f, _ := h.drv.devices.failureOf("dev-1"); !utf8.ValidString(f.Message) || len(f.Message) > maxFailMessage {
				t.Errorf("stored message of %d bytes, valid %v", len(f.Message), utf8.ValidString(f.Message))
			}
		})
	}
}

// A FaultSpec message too long for an error text is cut at a rune boundary.
func TestLongFaultMessageCut(t *testing.T) {
	c := newClaim("long", []alloc{{"gpu", "dev-0"}},
		faultConfig(prepareFaultsSpec(`{"type":"Unclassified","message":"`+strings.Repeat("ü", maxErrorText)+`"}`)))
	h := newHarness(t, c)
	res := h.prepare(c)
	if !utf8.ValidString(res.Error) || len(res.Error) > maxErrorText || !strings.HasSuffix(res.Error, "...") {
		t.Errorf("error of %d bytes, valid %v, ends %q", len(res.Error), utf8.ValidString(res.Error), res.Error[max(0, len(res.Error)-8):])
	}
}

// Unknown or repeated query parameters are a 400 naming them and the
// allowed ones; a misspelt effect stays one.
func TestHTTPQueryParameters(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name    string
		handler http.Handler
		method  string
		query   string
		want    int
		body    string
	}{
		{"fail: misspelt parameter", h.drv.FailHandler(), http.MethodPost, "device=dev-1&efect=NoSchedule", 400, `unknown query parameter "efect" (allowed: device, effect, message)`},
		{"fail: misspelt effect", h.drv.FailHandler(), http.MethodPost, "device=dev-1&effect=NoShedule", 400, `invalid taint effect "NoShedule": want NoExecute, NoSchedule or None`},
		{"fail: device twice", h.drv.FailHandler(), http.MethodPost, "device=dev-1&device=dev-2", 400, `query parameter "device" given 2 times`},
		{"fail: no device", h.drv.FailHandler(), http.MethodPost, "effect=None", 400, "unknown device: no device given"},
		{"fail: malformed query", h.drv.FailHandler(), http.MethodPost, "device=dev-1;effect=None", 400, "malformed query"},
		{"fail: empty effect and message", h.drv.FailHandler(), http.MethodPost, "device=dev-3&effect=&message=", 200, `"effect": "NoExecute"`},
		{"repair: unknown parameter", h.drv.RepairHandler(), http.MethodPost, "device=dev-3&all=true", 400, `unknown query parameter "all" (allowed: device)`},
		{"repair", h.drv.RepairHandler(), http.MethodPost, "device=dev-3", 200, `"dev-3"`},
		{"reset: parameter", h.drv.ResetHandler(), http.MethodPost, "device=dev-3", 400, `unknown query parameter "device" (this path takes no parameters)`},
		{"devices: parameter", h.drv.DevicesHandler(), http.MethodGet, "device=dev-3", 400, `unknown query parameter "device"`},
		{"calls: misspelt", h.drv.Recorder().Handler(), http.MethodGet, "claimUid=x", 400, `unknown query parameter "claimUid" (allowed: claimUID)`},
		{"calls", h.drv.Recorder().Handler(), http.MethodGet, "claimUID=x", 200, `"claimUID": "x"`},
		{"calls: all", h.drv.Recorder().Handler(), http.MethodGet, "", 200, `"calls": []`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+"?"+tc.query, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			data, _ := io.ReadAll(resp.Body)
			if body := string(data); resp.StatusCode != tc.want || !strings.Contains(body, tc.body) {
				t.Errorf("%s ?%s: %d %q, want %d and %q", tc.method, tc.query, resp.StatusCode, body, tc.want, tc.body)
			}
		})
	}
}

// FuzzFailQuery: any query of POST /devices/fail is read without panic; an
// accepted one names a published device, a known effect and a message the
// wire takes; a refused one is a 400.
func FuzzFailQuery(f *testing.F) {
	for _, s := range []string{
		"device=dev-1", "device=dev-1&effect=NoSchedule&message=Xid+79", "device=dev-3&effect=&message=",
		"device=dev-1&efect=None", "device=dev-1&device=dev-2", "device=dev-9", "device=%ff", "device=dev-1&message=%ff%fe",
		"device=dev-1&message=" + strings.Repeat("%C3%A9", 600), "device=dev-1;x", "%zz", "&&&", "device", "=dev-1",
		"device=dev-01", "device=dev-1%00", "device=+dev-1",
	} {
		f.Add(s)
	}
	const devices = 4
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := ParseFailQuery(raw, devices)
		if err != nil {
			if statusOf(err) != http.StatusBadRequest {
				t.Errorf("%q refused with %v, which is no 400", raw, err)
			}
			var qerr *query.Error
			if !errors.As(err, &qerr) && !errors.Is(err, ErrUnknownDevice) && !errors.Is(err, ErrInvalidEffect) {
				t.Errorf("%q: unexpected error %v", raw, err)
			}
			return
		}
		if checkDevice(r.Device, devices) != nil {
			t.Errorf("%q: device %q accepted", raw, r.Device)
		}
		if _, err := checkEffect(r.Effect); err != nil || r.Effect == "" {
			t.Errorf("%q: effect %q accepted", raw, r.Effect)
		}
		if !utf8.ValidString(r.Message) || len(r.Message) > maxFailMessage || r.Message == "" {
			t.Errorf("%q: message of %d bytes, valid %v", raw, len(r.Message), utf8.ValidString(r.Message))
		}
		if failMessage(r.Message) != r.Message {
			t.Errorf("%q: message %q not stable", raw, r.Message)
		}
	})
}
