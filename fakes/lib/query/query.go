// Package query reads the query parameters of the fakes' HTTP endpoints
// strictly, as their FaultSpecs and annotations are read: a misspelt or
// repeated parameter is an error naming it and the allowed ones (HTTP 400),
// never silently ignored, so that a spec cannot ask for something the fake
// does not do.
package query

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// MaxLen bounds a query string; the fakes' parameters are short.
const MaxLen = 64 << 10

// Error is a query a fake refuses; it answers 400 with its text.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Parse reads a raw query string. Each parameter must be one of allowed and
// given at most once; a parameter given empty (effect=) counts as absent.
func Parse(raw string, allowed ...string) (url.Values, error) {
	if len(raw) > MaxLen {
		return nil, &Error{fmt.Sprintf("query of %d bytes is longer than %d", len(raw), MaxLen)}
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, &Error{fmt.Sprintf("malformed query: %v", err)}
	}
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return nil, &Error{fmt.Sprintf("unknown query parameter %q (%s)", k, allowedText(allowed))}
		}
		if len(values[k]) > 1 {
			return nil, &Error{fmt.Sprintf("query parameter %q given %d times, want it at most once", k, len(values[k]))}
		}
	}
	return values, nil
}

func allowedText(allowed []string) string {
	if len(allowed) == 0 {
		return "this path takes no parameters"
	}
	return "allowed: " + strings.Join(allowed, ", ")
}

// Request reads req's query (Parse); on an error it answers 400 with the
// reason and returns ok false.
func Request(w http.ResponseWriter, req *http.Request, allowed ...string) (values url.Values, ok bool) {
	values, err := Parse(req.URL.RawQuery, allowed...)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	return values, true
}
