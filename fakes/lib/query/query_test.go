package query

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		allowed []string
		want    string // "" accepted
	}{
		{"", nil, ""},
		{"podUID=u1", []string{"podUID"}, ""},
		{"podUID=", []string{"podUID"}, ""},
		{"poduid=u1", []string{"podUID"}, `unknown query parameter "poduid" (allowed: podUID)`},
		{"podUID=u1&podUID=u2", []string{"podUID"}, `query parameter "podUID" given 2 times`},
		{"x=1", nil, `unknown query parameter "x" (this path takes no parameters)`},
		{"device=dev-1&efect=None", []string{"device", "effect", "message"}, `unknown query parameter "efect" (allowed: device, effect, message)`},
		{"a=1;b=2", []string{"a", "b"}, "malformed query"},
		{"%zz=1", []string{"a"}, "malformed query"},
		{strings.Repeat("a", MaxLen+1), []string{"a"}, "longer than"},
	} {
		_, err := Parse(tc.raw, tc.allowed...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Parse(%.40q): %v", tc.raw, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Parse(%.40q) = %v, want %q", tc.raw, err, tc.want)
		}
	}
}

func TestRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if q, ok := Request(w, req, "podUID"); ok {
			_, _ = w.Write([]byte("pod " + q.Get("podUID")))
		}
	}))
	defer srv.Close()
	for query, want := range map[string]int{"podUID=u": 200, "": 200, "pod=u": 400} {
		resp, err := http.Get(srv.URL + "/events?" + query)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("?%s: %d, want %d", query, resp.StatusCode, want)
		}
	}
}

// FuzzParse: any query string is read without panic; an accepted one holds
// only allowed parameters, each once, and reads back the same after
// encoding; a refused one names what is wrong.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "podUID=u1", "podUID=", "claimUID=x&claimUID=y", "device=dev-1&effect=NoSchedule&message=Xid+79%3A+fell",
		"device=dev-1&efect=None", "a=1;b=2", "%zz", "&&", "=", "==", "podUID", "podUID=%ff%fe", "podUID=a+b%20c",
		"message=" + strings.Repeat("%C3%A9", 100),
	} {
		f.Add(s)
	}
	allowed := []string{"device", "effect", "message", "podUID", "claimUID"}
	f.Fuzz(func(t *testing.T, raw string) {
		if len(raw) > 2*MaxLen {
			t.Skip()
		}
		q, err := Parse(raw, allowed...)
		if err != nil {
			if e := (*Error)(nil); !errors.As(err, &e) || err.Error() == "" {
				t.Errorf("%q: error %T %v", raw, err, err)
			}
			return
		}
		for k, v := range q {
			if !slices.Contains(allowed, k) || len(v) != 1 {
				t.Errorf("%q: accepted %s=%q", raw, k, v)
			}
		}
		again, err := url.ParseQuery(q.Encode())
		if err != nil || len(again) != len(q) {
			t.Fatalf("%q: re-encoded %q reads %v, %v", raw, q.Encode(), again, err)
		}
		for k := range q {
			if again.Get(k) != q.Get(k) {
				t.Errorf("%q: %s=%q reads back %q", raw, k, q.Get(k), again.Get(k))
			}
		}
	})
}
