// Package textcap bounds the text the fakes take from outside (annotations,
// query strings, runtime errors) before they store or send it: valid UTF-8
// (protobuf refuses anything else, and a record must read back), at most a
// given number of bytes. It uses the standard library only: runc-slow links
// it, and the node image's key hashes its directory.
package textcap

import (
	"strings"
	"unicode/utf8"
)

// Cut makes s valid UTF-8 (invalid bytes become U+FFFD) of at most limit
// bytes, cut at a rune boundary and marked with "..." when cut, as the
// kubelet shortens messages.
func Cut(s string, limit int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= limit {
		return s
	}
	n := max(limit-3, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."[:min(3, limit)]
}
