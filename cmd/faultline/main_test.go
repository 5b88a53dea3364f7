package main

import (
	"flag"
	"io"
	"reflect"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		positional []string
		arch       string
	}{
		{[]string{"save", "dir", "--arch", "arm64"}, []string{"save", "dir"}, "arm64"},
		{[]string{"--arch", "arm64", "save", "dir"}, []string{"save", "dir"}, "arm64"},
		{[]string{"save", "--", "--arch", "x"}, []string{"save", "--arch", "x"}, "amd64"},
		{[]string{"--", "-v"}, []string{"-v"}, "amd64"},
		{nil, nil, "amd64"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		arch := fs.String("arch", "amd64", "")
		got, err := parseInterspersed(fs, tc.args)
		if err != nil || !reflect.DeepEqual(got, tc.positional) || *arch != tc.arch {
			t.Errorf("%q: positional %q arch %q err %v, want %q %q", tc.args, got, *arch, err, tc.positional, tc.arch)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := parseInterspersed(fs, []string{"save", "--nope"}); err == nil {
		t.Error("an unknown flag after an argument must be an error")
	}
}
