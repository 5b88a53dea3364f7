package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
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

// TestUsageErrors runs the real binary on bad input: each case exits 2 with
// one line, naming the flag at fault (the last one given), before anything
// starts. PATH holds only traps for the tools a stage would run (docker,
// kind, go, ...), which record being called; the working directory, HOME and
// the caches must stay empty.
func TestUsageErrors(t *testing.T) {
	root := t.TempDir()
	bin := filepath.Join(root, "faultline")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	traps := filepath.Join(root, "path")
	called := filepath.Join(root, "called")
	if err := os.MkdirAll(traps, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"docker", "dockerd", "kind", "go", "ginkgo", "apt-get", "debootstrap", "skopeo", "kubectl"} {
		script := "#!/bin/sh\necho \"$0 $*\" >> " + called + "\nexit 1\n"
		if err := os.WriteFile(filepath.Join(traps, tool), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A directory a name could reach from faultline's state, which must survive.
	victim := filepath.Join(root, "victim", "file")
	if err := os.MkdirAll(filepath.Dir(victim), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 60)
	checkout, err := filepath.Abs("../..") // a Go module
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"create-cluster"},
		{"create-cluster", "--node-image", "img", "--kubeconfig", "k", "--name", long},
		{"create-cluster", "--node-image", "img", "--kubeconfig", "k", "--name", ""},
		{"create-cluster", "--node-image", "img", "--kubeconfig", "k", "--nri-request-timeout", "3ns"},
		{"create-cluster", "--node-image", "img", "--kubeconfig", "k", "--runtime", "bogus"},
		{"export-logs"},
		{"export-logs", "--dir", "logs", "--name", "../x"},
		{"engine", "foo"},
		{"engine"},
		{"build-node-image", "--runtime", "bogus"},
		{"build-node-image", "extra"},
		{"delete-cluster", "a", "b"},
		{"delete-cluster", "--name", "../../../victim"},
		{"delete-cluster", "--name", ""},
		{"delete-cluster", "--name", "a/b"},
		{"delete-cluster", "--name", ".."},
		{"e2e", "--kubernetes-version", ","},
		{"e2e", "--label-filter", "(("},
		{"e2e", "--nri-request-timeout", "3ns"},
		{"e2e", "--runtime-request-timeout", "1ns"},
		{"e2e", "--cluster-name", long},
		{"e2e", "--cluster-name", ""},
		{"e2e", "--procs", "-1"},
		{"e2e", "--workers", "11"},
		{"e2e", "--runtime", "bogus"},
		{"e2e", "--expectations", "/nonexistent"},
		{"e2e", "--kubernetes-patch", os.DevNull, "--kubernetes-src", checkout},
		{"load-images"},
		{"load-images", "--name", "", "img"},
		{"load-archive", "--name", "../x", "file", "ref"},
		{"images", "load", "../x"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			work := filepath.Join(root, "work")
			for _, dir := range []string{work, filepath.Join(root, "home"), filepath.Join(root, "cache")} {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(bin, args...)
			cmd.Dir = work
			cmd.Env = []string{
				"PATH=" + traps, "HOME=" + filepath.Join(root, "home"), "XDG_CACHE_HOME=" + filepath.Join(root, "cache"),
				"FAULTLINE_CACHE_DIR=" + filepath.Join(root, "cache", "faultline"), "KUBECONFIG=" + filepath.Join(root, "home", "kubeconfig"),
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Errorf("exit: %v, want 2", err)
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if msg == "" || strings.Contains(msg, "\n") {
				t.Errorf("stderr is not one line: %q", stderr.String())
			}
			if flag := lastFlag(args); flag != "" && !strings.Contains(msg, flag) {
				t.Errorf("stderr does not name %s: %q", flag, msg)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: %q", stdout.String())
			}
			if calls, err := os.ReadFile(called); err == nil {
				t.Errorf("a stage started:\n%s", calls)
				os.Remove(called)
			}
			for _, dir := range []string{work, filepath.Join(root, "home"), filepath.Join(root, "cache")} {
				if entries, _ := os.ReadDir(dir); len(entries) > 0 {
					t.Errorf("%s was written: %v", dir, entries)
				}
				os.RemoveAll(dir)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Errorf("victim: %v", err)
			}
		})
	}
}

// lastFlag is the last flag of a command line ("" for none).
func lastFlag(args []string) string {
	flag := ""
	for _, a := range args {
		if strings.HasPrefix(a, "--") {
			flag = a
		}
	}
	return flag
}
