package ociruntime

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// maxFuzzInput bounds a fuzz input: a command line or an annotation longer
// than this tells nothing new.
const maxFuzzInput = 4096

// FuzzParseArgs: any command line (words separated by NUL) is read without
// panic; what it finds are words of the command line; the canonical command
// line of the result reads back to the same result.
func FuzzParseArgs(f *testing.F) {
	for _, c := range realCommandLines {
		f.Add(strings.Join(strings.Fields(c.args), "\x00"))
	}
	for _, s := range []string{
		"--root\x00--\x00create", "-\x00create", "--=x\x00create\x00-b", "---root\x00x\x00start\x00id",
		"create\x00--bundle", "create\x00--bundle=\x00id", "--\x00--\x00--\x00--", "create\x00-b\x00-b\x00-b",
		"exec\x00id\x00--bundle\x00x", "--root=\x00start\x00\x00id", "kill\x00--\x00-9",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmdline string) {
		if len(cmdline) > maxFuzzInput {
			t.Skip()
		}
		args := strings.Split(cmdline, "\x00")
		inv := ParseArgs(args)
		isWord := func(s string) bool { return slices.Contains(args, s) }
		if inv.Command != "" && !isWord(inv.Command) {
			t.Errorf("command %q is no word of %q", inv.Command, args)
		}
		if inv.ID != "" && !isWord(inv.ID) {
			t.Errorf("ID %q is no word of %q", inv.ID, args)
		}
		if inv.Command == "" && (inv.ID != "" || inv.Bundle != "" || inv.Process != "") {
			t.Errorf("no command, yet ID %q, bundle %q, process %q", inv.ID, inv.Bundle, inv.Process)
		}
		for what, value := range map[string]string{"bundle": inv.Bundle, "process": inv.Process} {
			if value != "" && !slices.ContainsFunc(args, func(a string) bool { return strings.HasSuffix(a, value) }) {
				t.Errorf("%s %q is in no word of %q", what, value, args)
			}
		}
		if again := ParseArgs(inv.Args()); again != inv {
			t.Errorf("ParseArgs(%q) = %+v, but its canonical form %q reads %+v", args, inv, inv.Args(), again)
		}
	})
}

// FuzzSpecFromAnnotations (runc-slow's delay annotations): any kind, delay
// and request are read without panic; an accepted delay is within
// [0, MaxDelay]; what SlowCreate writes reads back the same; an error names
// the annotation and stays short.
func FuzzSpecFromAnnotations(f *testing.F) {
	for _, s := range []struct{ kind, delay, request string }{
		{"sandbox", "8s", "r1"}, {"container", "1m30s", ""}, {"container", "10m", "x"}, {"sandbox", "10m0.000000001s", ""},
		{"sandbox", "-1s", ""}, {"sandbox", "0", ""}, {"container", "9223372036854775807ns", ""}, {"container", "1e3s", ""},
		{"sandbox", "", ""}, {"pod", "5s", ""}, {"", "5s", ""}, {"sandbox", " 5s", ""}, {"container", "5s\xff", "\xff"},
		{"sandbox", strings.Repeat(`"`, 1000), strings.Repeat("é", 1000)}, {"container", strings.Repeat("\xe0", 600), ""},
	} {
		f.Add(s.kind, s.delay, s.request)
	}
	f.Fuzz(func(t *testing.T, kind, delay, request string) {
		if len(kind)+len(delay)+len(request) > maxFuzzInput {
			t.Skip()
		}
		for _, typeKey := range containerTypeAnnotations {
			a := map[string]string{typeKey: kind, RequestAnnotation: request, SandboxDelayAnnotation: delay, ContainerDelayAnnotation: delay}
			spec, err := SpecFromAnnotations(a)
			if spec.Request != request {
				t.Errorf("request %q read as %q", request, spec.Request)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "cri.faultline.k8s.io/") || len(err.Error()) > 512 {
					t.Errorf("error %q: want it short and naming the annotation", err)
				}
				continue
			}
			if spec.Delay < 0 || spec.Delay > MaxDelay {
				t.Errorf("delay %q accepted as %s, outside [0, %s]", delay, spec.Delay, MaxDelay)
			}
			if spec.Delay > 0 && kind != "sandbox" && kind != "container" {
				t.Errorf("kind %q got a delay", kind)
			}
			// What the builder writes for the accepted delay reads back the same.
			s := SlowCreate{Request: spec.Request}
			switch spec.Kind {
			case "sandbox":
				s.SandboxDelay = spec.Delay
			case "container":
				s.ContainerDelay = spec.Delay
			default:
				continue
			}
			b := s.Annotations()
			b[typeKey] = spec.Kind
			if again, err := SpecFromAnnotations(b); err != nil || again != spec {
				t.Errorf("%+v written as %v reads back %+v, %v", spec, b, again, err)
			}
		}
	})
}

// FuzzParseLog: any log is read without panic, and every record it finds
// survives a write and a read.
func FuzzParseLog(f *testing.F) {
	line, _ := json.Marshal(Record{Time: time.Unix(1, 0).UTC(), Command: "create", Phase: "begin", ID: "a", Request: "r"})
	f.Add(string(line) + "\n")
	f.Add(`{"time":"2026-01-01T00:00:00Z","command":"cre` + string(line) + "\n")
	f.Add("null\n{}\n\x00\x00\n" + `{"command":"del`)
	f.Add(`{"time":{"time":` + string(line))
	f.Fuzz(func(t *testing.T, data string) {
		if len(data) > maxFuzzInput {
			t.Skip()
		}
		for _, r := range ParseLog([]byte(data)) {
			if r.Command == "" {
				t.Errorf("record without a command: %+v", r)
			}
			line, err := json.Marshal(r.Capped())
			if err != nil {
				t.Fatal(err)
			}
			got := ParseLog(line)
			if len(got) != 1 || !got[0].Time.Equal(r.Time) {
				t.Errorf("%+v written as %s reads back %+v", r, line, got)
				continue
			}
			got[0].Time = r.Time
			if got[0] != r.Capped() {
				t.Errorf("%+v written as %s reads back %+v", r.Capped(), line, got[0])
			}
		}
	})
}
