package httpjson

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, map[string]int{"calls": 2})
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("code %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	var got map[string]int
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got["calls"] != 2 {
		t.Fatalf("body %q: %v", rec.Body.String(), err)
	}
}
