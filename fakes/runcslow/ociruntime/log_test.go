package ociruntime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseLogSkipsTornLines(t *testing.T) {
	got := ParseLog([]byte(`{"command":"create","phase":"begin","id":"a"}` + "\n" + `{"command":"del`))
	if len(got) != 1 || got[0].ID != "a" {
		t.Errorf("got %+v", got)
	}
}

// A record written after a torn line (a crash mid-write, before Append ended
// lines itself) is still found.
func TestParseLogFindsRecordAfterTornLine(t *testing.T) {
	line, _ := json.Marshal(Record{Command: "delete", Phase: "begin", ID: "b"})
	got := ParseLog([]byte(`{"time":"2026-01-01T00:00:00Z","command":"cre` + string(line) + "\n\x00\x00\n{}\nnull\n"))
	if len(got) != 1 || got[0].ID != "b" || got[0].Command != "delete" {
		t.Errorf("got %+v", got)
	}
}

// Every record carries the request field, empty when the bundle has none.
func TestRecordAlwaysHasRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log", "runc-slow.jsonl")
	for _, r := range []Record{{Command: "create", Phase: "begin", ID: "a", Kind: "sandbox"}, {Command: "delete", Phase: "begin", ID: "a"}} {
		if err := Append(path, r); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines:\n%s", len(lines), data)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, recordStart) || !strings.Contains(l, `"request":""`) {
			t.Errorf("line %s: want it to start with %s and carry \"request\":\"\"", l, recordStart)
		}
	}
}

// A write that cannot be done is an error, never a silent loss.
func TestAppendFailsLoudly(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := Record{Command: "create", Phase: "begin", ID: "a"}
	if err := Append(filepath.Join(file, "sub", "log.jsonl"), r); err == nil {
		t.Error("a log under a regular file: want an error")
	}
	if err := Append(dir, r); err == nil {
		t.Error("a log that is a directory: want an error")
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		if err := Append("/dev/full", r); err == nil {
			t.Error("a full disk (/dev/full): want an error")
		}
	}
	if os.Geteuid() != 0 {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := Append(filepath.Join(ro, "log.jsonl"), r); err == nil {
			t.Error("a read-only directory: want an error")
		}
	}
}

// A line torn by a crash before does not swallow the next record.
func TestAppendAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(`{"time":"2026-01-01T00:00:00Z","command":"cr`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Append(path, Record{Command: "delete", Phase: "begin", ID: "x"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if got := ParseLog(data); len(got) != 1 || got[0].ID != "x" {
		t.Errorf("got %+v from %q", got, data)
	}
}

// Huge or invalid fields are cut, so every line stays readable.
func TestAppendCapsFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	huge := strings.Repeat(`"`, 256<<10)
	r := Record{Time: time.Now(), Command: "create", Phase: "error", ID: "a", Request: huge, Kind: "sandbox\xff", Error: strings.Repeat("é", 10000)}
	if err := Append(path, r); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if len(data) > 3*MaxField*6+2*MaxErrorField {
		t.Errorf("line of %d bytes", len(data))
	}
	got := ParseLog(data)
	if len(got) != 1 {
		t.Fatalf("got %+v", got)
	}
	if len(got[0].Request) > MaxField || len(got[0].Error) > MaxErrorField || !utf8.ValidString(got[0].Error) || !utf8.ValidString(got[0].Kind) {
		t.Errorf("fields not capped: request %d bytes, error %d bytes, kind %q", len(got[0].Request), len(got[0].Error), got[0].Kind)
	}
}

// Wrappers writing at the same time each get a whole line.
func TestAppendConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.jsonl")
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := Append(path, Record{Command: "create", Phase: "begin", ID: strings.Repeat(string(rune('a'+i)), 900)}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(path)
	if got := ParseLog(data); len(got) != 20 {
		t.Errorf("%d records, want 20", len(got))
	}
}

func TestRuntimeLogError(t *testing.T) {
	dir := t.TempDir()
	for format, want := range map[string]string{"json": `"level":"error","msg":"runc-slow: no"`, "text": `level=error msg="runc-slow: no"`} {
		inv := Invocation{Log: filepath.Join(dir, format), LogFormat: format}
		if err := RuntimeLogError(inv, "runc-slow: no"); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(inv.Log)
		if !strings.Contains(string(data), want) {
			t.Errorf("%s: %q does not contain %q", format, data, want)
		}
	}
}
