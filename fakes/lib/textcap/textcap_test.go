package textcap

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer message", 10, "a longe..."},
		{"ab\xffcd", 10, "ab\uFFFDcd"},
		{strings.Repeat("é", 10), 8, "éé..."}, // é is 2 bytes: never cut mid-rune
		{"abcdef", 2, ".."},
		{"abcdef", 0, ""},
		{"abcd", 3, "..."},
		{"abcdef", 5, "ab..."},
		{"ééé", 6, "ééé"},
		{"éééé", 6, "é..."},
		{"€€€€", 9, "€€..."},
		{"€€€€", 7, "€..."},
		{"€€€€", 5, "..."},
	} {
		got := Cut(tc.in, tc.limit)
		if got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
		if !utf8.ValidString(got) || len(got) > tc.limit && tc.limit >= 0 && len(tc.in) > tc.limit {
			t.Errorf("Cut(%q, %d) = %q: invalid or too long", tc.in, tc.limit, got)
		}
	}
}

func FuzzCut(f *testing.F) {
	for _, s := range []string{"", "abc", "\xff\xfe", strings.Repeat("€", 100)} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1<<20 {
			return
		}
		got := Cut(s, limit)
		if !utf8.ValidString(got) {
			t.Fatalf("Cut(%q, %d) = %q is not valid UTF-8", s, limit, got)
		}
		if len(got) > limit && len(strings.ToValidUTF8(s, "\uFFFD")) > limit {
			t.Fatalf("Cut(%q, %d) = %q is longer than the limit", s, limit, got)
		}
	})
}
