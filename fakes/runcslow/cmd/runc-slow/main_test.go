package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
)

// fakeRuntime runs the wrapper against a bundle, a delegate file and a log
// in a temp dir, with exec and sleep recorded instead of done.
type fakeRuntime struct {
	t        *testing.T
	dir      string
	w        wrapper
	execs    [][]string
	slept    []time.Duration
	held     []time.Duration
	execFail error
}

func newFake(t *testing.T) *fakeRuntime {
	dir := t.TempDir()
	delegate := filepath.Join(dir, "runc.delegate")
	if err := os.WriteFile(delegate, []byte("/usr/bin/real-runc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &fakeRuntime{t: t, dir: dir}
	f.w = wrapper{
		logFile:      filepath.Join(dir, "log", "runc-slow.jsonl"),
		delegateFile: delegate,
		exec: func(path string, argv, _ []string) error {
			f.execs = append(f.execs, argv)
			return f.execFail
		},
		sleep:   func(d time.Duration) { f.slept = append(f.slept, d) },
		gateDir: filepath.Join(dir, "gates"),
		hold: func(d time.Duration, released func() bool) bool {
			f.held = append(f.held, d)
			return released()
		},
	}
	return f
}

func (f *fakeRuntime) bundle(annotations string) string {
	b := filepath.Join(f.dir, "bundle")
	if err := os.MkdirAll(b, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "config.json"), []byte(`{"ociVersion":"1.2.0","annotations":{`+annotations+`}}`), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *fakeRuntime) run(cmdline string) error {
	return f.w.run(strings.Fields(cmdline))
}

func (f *fakeRuntime) records() []ociruntime.Record {
	data, _ := os.ReadFile(f.w.logFile)
	return ociruntime.ParseLog(data)
}

// Every create, start, kill and delete is recorded, with or without the
// request annotation, whatever global flags the runtime put first.
func TestEveryCommandRecorded(t *testing.T) {
	f := newFake(t)
	b := f.bundle(`"io.kubernetes.cri.container-type":"sandbox"`)
	for _, cmd := range []string{
		"--root /run/containerd/runc/k8s.io --log " + f.dir + "/log.json --log-format json --systemd-cgroup create --bundle " + b + " --pid-file " + b + "/init.pid abc",
		"--root /run/containerd/runc/k8s.io --log " + f.dir + "/log.json --log-format json --systemd-cgroup start abc",
		"--root=/run/runc --cgroup-manager systemd kill abc KILL",
		"--root=/run/runc --systemd-cgroup delete --force abc",
		"--root=/run/runc state abc",
	} {
		if err := f.run(cmd); err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
	}
	var got []string
	for _, r := range f.records() {
		if r.ID != "abc" || r.Request != "" || r.Phase != "begin" {
			t.Errorf("record %+v", r)
		}
		got = append(got, r.Command)
	}
	if strings.Join(got, ",") != "create,start,kill,delete" {
		t.Errorf("recorded %v, want create,start,kill,delete", got)
	}
	if len(f.execs) != 5 || f.execs[0][0] != "/usr/bin/real-runc" || f.execs[0][1] != "--root" {
		t.Errorf("execs %q", f.execs)
	}
}

func TestDelayedCreate(t *testing.T) {
	f := newFake(t)
	b := f.bundle(`"io.kubernetes.cri-o.ContainerType":"container","cri.faultline.k8s.io/container-create-delay":"8s","cri.faultline.k8s.io/request":"r1"`)
	if err := f.run("--systemd-cgroup --root=/run/runc create --bundle " + b + " --pid-file /p --no-pivot def"); err != nil {
		t.Fatal(err)
	}
	rs := f.records()
	if len(rs) != 2 || rs[0].Phase != "begin" || rs[0].Delay != "8s" || rs[0].Request != "r1" || rs[0].Kind != "container" || rs[1].Phase != "exec" {
		t.Errorf("records %+v", rs)
	}
	if len(f.slept) != 1 || f.slept[0] != 8*time.Second {
		t.Errorf("slept %v", f.slept)
	}
}

// A held create waits for its request's release (here: given before, so the
// hold ends at once), and its exec record says whether the gate opened.
func TestHeldCreate(t *testing.T) {
	for _, released := range []bool{false, true} {
		f := newFake(t)
		if released {
			if err := os.MkdirAll(f.w.gateDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := ociruntime.Release(f.w.gateDir, "r1"); err != nil {
				t.Fatal(err)
			}
		}
		b := f.bundle(`"io.kubernetes.cri.container-type":"sandbox","cri.faultline.k8s.io/sandbox-create-delay":"1m","cri.faultline.k8s.io/hold-until-released":"true","cri.faultline.k8s.io/request":"r1"`)
		if err := f.run("create --bundle " + b + " abc"); err != nil {
			t.Fatal(err)
		}
		rs := f.records()
		if len(rs) != 2 || rs[0].Delay != "1m0s" || rs[1].Phase != "exec" || rs[1].Released != released {
			t.Errorf("released %v: records %+v", released, rs)
		}
		if len(f.slept) != 0 || len(f.held) != 1 || f.held[0] != time.Minute {
			t.Errorf("released %v: slept %v, held %v: want one hold bounded by the delay", released, f.slept, f.held)
		}
		if len(f.execs) != 1 {
			t.Errorf("released %v: execs %q", released, f.execs)
		}
	}
}

// A held create the spec released failing is refused, once: its exec
// record says so and runc never runs; the next create of the request runs.
func TestHeldCreateFailedAtRelease(t *testing.T) {
	f := newFake(t)
	if err := os.MkdirAll(f.w.gateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ociruntime.ReleaseFailing(f.w.gateDir, "r1"); err != nil {
		t.Fatal(err)
	}
	b := f.bundle(`"io.kubernetes.cri.container-type":"sandbox","cri.faultline.k8s.io/sandbox-create-delay":"1m","cri.faultline.k8s.io/hold-until-released":"true","cri.faultline.k8s.io/request":"r1"`)
	if err := f.run("create --bundle " + b + " abc"); !errors.Is(err, errFailedAtRelease) {
		t.Fatalf("the failed create: %v", err)
	}
	rs := f.records()
	if len(rs) != 2 || rs[1].Phase != "error" || !rs[1].Failed || !rs[1].Released {
		t.Errorf("records %+v", rs)
	}
	if len(f.execs) != 0 {
		t.Errorf("runc ran: %q", f.execs)
	}
	if err := f.run("create --bundle " + b + " def"); err != nil {
		t.Fatalf("the next create: %v", err)
	}
	if len(f.execs) != 1 {
		t.Errorf("the next create did not run runc: %q", f.execs)
	}
}

// A command whose record cannot be written is refused: not run, exit
// non-zero, the reason in the runtime's log.
func TestUnwritableWitnessFailsTheCommand(t *testing.T) {
	f := newFake(t)
	blocker := filepath.Join(f.dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f.w.logFile = filepath.Join(blocker, "runc-slow.jsonl") // its directory is a file
	b := f.bundle(`"io.kubernetes.cri.container-type":"sandbox","cri.faultline.k8s.io/sandbox-create-delay":"1s"`)
	runcLog := filepath.Join(f.dir, "log.json")
	for _, cmd := range []string{"create --bundle " + b + " abc", "start abc", "kill abc 9", "delete abc"} {
		err := f.run("--root /r --log " + runcLog + " --log-format json " + cmd)
		if err == nil || !strings.Contains(err.Error(), "cannot record") {
			t.Errorf("%s: err = %v, want a refusal", cmd, err)
		}
	}
	if len(f.execs) != 0 || len(f.slept) != 0 {
		t.Errorf("ran %q, slept %v", f.execs, f.slept)
	}
	data, _ := os.ReadFile(runcLog)
	if !strings.Contains(string(data), `"level":"error","msg":"runc-slow: cannot record create begin`) {
		t.Errorf("runc log: %s", data)
	}
	// Commands that are not recorded still run.
	if err := f.run("--root /r state abc"); err != nil {
		t.Errorf("state: %v", err)
	}
}

// The record after the delay is as much a witness: failing it fails the create.
func TestUnwritableExecRecordFailsTheCreate(t *testing.T) {
	f := newFake(t)
	b := f.bundle(`"io.kubernetes.cri.container-type":"sandbox","cri.faultline.k8s.io/sandbox-create-delay":"1s"`)
	f.w.sleep = func(time.Duration) {
		if err := os.Chmod(f.w.logFile, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(f.w.logFile, f.w.logFile+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(f.w.logFile, 0o755); err != nil { // the log is now a directory
			t.Fatal(err)
		}
	}
	if err := f.run("create --bundle " + b + " abc"); err == nil {
		t.Errorf("err = %v, want a refusal", err)
	}
	if len(f.execs) != 0 {
		t.Errorf("ran %q", f.execs)
	}
}

func TestMalformedDelayRecordedAndRefused(t *testing.T) {
	f := newFake(t)
	b := f.bundle(`"io.kubernetes.cri.container-type":"sandbox","cri.faultline.k8s.io/sandbox-create-delay":"soon","cri.faultline.k8s.io/request":"r"`)
	err := f.run("create --bundle " + b + " abc")
	if err == nil || !strings.Contains(err.Error(), "sandbox-create-delay") {
		t.Errorf("err = %v", err)
	}
	if rs := f.records(); len(rs) != 1 || rs[0].Phase != "error" || rs[0].Request != "r" || len(f.execs) != 0 {
		t.Errorf("records %+v, execs %q", rs, f.execs)
	}
}

func TestFailedExecRecorded(t *testing.T) {
	f := newFake(t)
	f.execFail = errors.New("no such file")
	if err := f.run("start abc"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("err = %v", err)
	}
	if rs := f.records(); len(rs) != 2 || rs[1].Phase != "error" || !strings.Contains(rs[1].Error, "no such file") {
		t.Errorf("records %+v", rs)
	}
}
