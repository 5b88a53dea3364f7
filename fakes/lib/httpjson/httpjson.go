// Package httpjson writes the fakes' HTTP answers: the records, device
// states and node views the suites read through port-forwards, as indented
// JSON so that a person reading a dump or a curl through a port-forward
// can follow them.
package httpjson

import (
	"encoding/json"
	"net/http"
)

// Write answers v as JSON with status 200. An encoding error after the
// header is sent cannot change the answer; the client sees a short body.
func Write(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
