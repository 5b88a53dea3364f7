package record_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/faultline-k8s/faultline/fakes/nri/record"
)

func newRecorder(t *testing.T, dir string, log io.Writer) *record.Recorder {
	t.Helper()
	r, err := record.New(record.Options{Plugin: "faultline-a", Index: "10", Dir: dir,
		Logger: slog.New(slog.NewJSONHandler(log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRecordOrderAndFields(t *testing.T) {
	var logs bytes.Buffer
	r := newRecorder(t, "", &logs)

	slow := r.Begin(record.Event{Event: "RunPodSandbox", PodNamespace: "ns", PodName: "p", PodUID: "u1"})
	r.Begin(record.Event{Event: "RunPodSandbox", PodUID: "u2"}).Finish(record.Outcome{Result: record.OK})
	r.Begin(record.Event{Event: "CreateContainer", PodUID: "u1", ContainerName: "c", ContainerID: "id"}).
		Finish(record.Outcome{Result: record.Error, Fault: "error", Message: "boom"})

	got := r.List("u1")
	if len(got) != 2 || got[0].Event != "RunPodSandbox" || got[1].Event != "CreateContainer" {
		t.Fatalf("List(u1) = %+v", got)
	}
	if got[0].Result != record.Pending || !got[0].End.IsZero() {
		t.Errorf("unfinished record: %+v", got[0])
	}
	if got[0].Seq >= got[1].Seq || got[0].Plugin != "faultline-a" || got[0].Index != "10" {
		t.Errorf("bad seq or identity: %+v", got)
	}
	slow.Finish(record.Outcome{Result: record.Stalled, Interrupted: true})
	got = r.List("u1")
	if got[0].Result != record.Stalled || !got[0].Interrupted || got[0].End.Before(got[0].Start) {
		t.Errorf("finished record: %+v", got[0])
	}
	if all := r.List(""); len(all) != 4 || all[0].Event != record.PluginStart {
		t.Errorf("List() = %+v", all)
	}

	// One JSON log line per finished event, parseable on its own.
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "nri event" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 4 {
		t.Fatalf("got %d event log lines, want 4:\n%s", len(lines), logs.String())
	}
	if rec := lines[2]["record"].(map[string]any); rec["event"] != "CreateContainer" || rec["result"] != "error" || rec["containerName"] != "c" {
		t.Errorf("log line record = %v", rec)
	}
}

// The events before a crash stay visible to the restarted process.
func TestRecordSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first := newRecorder(t, dir, io.Discard)
	first.Begin(record.Event{Event: "CreateContainer", PodUID: "u"}).Finish(record.Outcome{Result: record.Crash})
	first.Close()
	// A line cut short by the crash must not stop the restart.
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":99,"ev`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	second := newRecorder(t, dir, io.Discard)
	second.Begin(record.Event{Event: "CreateContainer", PodUID: "u"}).Finish(record.Outcome{Result: record.OK})
	got := second.List("u")
	if len(got) != 2 || got[0].Result != record.Crash || got[0].Boot != 0 || got[1].Result != record.OK || got[1].Boot != 1 {
		t.Fatalf("after restart List(u) = %+v", got)
	}
	if got[1].Seq <= got[0].Seq {
		t.Errorf("seq went backwards across the restart: %d then %d", got[0].Seq, got[1].Seq)
	}
	if second.Boot() != 1 {
		t.Errorf("Boot() = %d, want 1", second.Boot())
	}
}

func TestRecordLimit(t *testing.T) {
	r, err := record.New(record.Options{Max: 3, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		r.Begin(record.Event{Event: "RunPodSandbox"}).Finish(record.Outcome{Result: record.OK})
	}
	if got := r.List(""); len(got) != 3 || got[2].Seq != 6 {
		t.Errorf("List() = %+v", got)
	}
}

func TestHandler(t *testing.T) {
	r := newRecorder(t, "", io.Discard)
	r.Begin(record.Event{Event: "RunPodSandbox", PodUID: "u1"}).Finish(record.Outcome{Result: record.OK})
	r.Begin(record.Event{Event: "RunPodSandbox", PodUID: "u2"}).Finish(record.Outcome{Result: record.OK})
	var notReady atomic.Bool
	srv := httptest.NewServer(record.Handler(r, func() error {
		if notReady.Load() {
			return errors.New("not connected")
		}
		return nil
	}))
	defer srv.Close()

	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	code, body := get("/events?podUID=u2")
	var events []record.Event
	if err := json.Unmarshal([]byte(body), &events); code != 200 || err != nil || len(events) != 1 || events[0].PodUID != "u2" {
		t.Errorf("GET /events?podUID=u2: %d %s", code, body)
	}
	if code, body := get("/events?podUID=none"); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("GET /events for an unknown pod: %d %q, want []", code, body)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("GET /healthz while ready: %d %q", code, body)
	}
	notReady.Store(true)
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, "not connected") {
		t.Errorf("GET /healthz while not ready: %d %q", code, body)
	}
	resp, err := http.Post(srv.URL+"/events", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /events: %d", resp.StatusCode)
	}
}

// A 256 KiB annotation of '"' (each byte a 4-byte escape once quoted in the
// error and JSON-encoded) must not make a record the restarted plugin
// cannot read back: fields are capped, and what cannot be read is skipped
// with a log line instead of failing the restart.
func TestHugeRecordSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	first := newRecorder(t, dir, io.Discard)
	huge := strings.Repeat(`"`, 256<<10)
	first.Begin(record.Event{Event: "RunPodSandbox", PodUID: "u", PodName: strings.Repeat("é", 1000) + "\xff"}).
		Finish(record.Outcome{Result: record.Error, Fault: huge, Message: "annotation x=" + strconv.Quote(huge)})
	first.Close()

	data, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if len(line) > 64<<10 {
			t.Errorf("record line of %d bytes", len(line))
		}
	}

	second := newRecorder(t, dir, io.Discard)
	got := second.List("u")
	if len(got) != 1 || len(got[0].Fault) > record.MaxField || len(got[0].Message) > record.MaxMessage ||
		!utf8.ValidString(got[0].PodName) || !strings.HasSuffix(got[0].Fault, "...") {
		t.Fatalf("after restart: %d records, fault %d bytes, message %d bytes", len(got), len(got[0].Fault), len(got[0].Message))
	}
}

// Over-long and corrupt lines, written by older plugins or a crash, are
// skipped with a log line; the records around them are kept.
func TestReloadSkipsBadLines(t *testing.T) {
	dir := t.TempDir()
	first := newRecorder(t, dir, io.Discard)
	first.Begin(record.Event{Event: "RunPodSandbox", PodUID: "u"}).Finish(record.Outcome{Result: record.OK})
	first.Close()
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":50,"event":"CreateContainer","podUID":"u","fault":"` + strings.Repeat(`\"`, 600<<10) + `"}` + "\n"); err != nil { // 1.2 MB
		t.Fatal(err)
	}
	if _, err := f.WriteString("\x00\x00garbage\n{}\nnull\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":60,"event":"StartContainer","podUID":"u","result":"ok"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":70,"event":"StopCont`); err != nil { // torn
		t.Fatal(err)
	}
	f.Close()

	var logs bytes.Buffer
	second := newRecorder(t, dir, &logs)
	second.Begin(record.Event{Event: "StopContainer", PodUID: "u"}).Finish(record.Outcome{Result: record.OK})
	var events []string
	for _, e := range second.List("u") {
		events = append(events, e.Event)
	}
	if strings.Join(events, ",") != "RunPodSandbox,StartContainer,StopContainer" {
		t.Errorf("after restart: %v", events)
	}
	for _, want := range []string{"skipping an over-long line of the event record", "skipping a line of the event record that is no record"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no log line %q in:\n%.2000s", want, logs.String())
		}
	}
	// The record written after the torn line is a line of its own.
	third := newRecorder(t, dir, io.Discard)
	if got := third.List("u"); len(got) != 3 || got[2].Event != "StopContainer" {
		t.Errorf("third boot: %+v", got)
	}
}

// Unknown parameters are a 400 naming them.
func TestHandlerRejectsUnknownParameters(t *testing.T) {
	r := newRecorder(t, "", io.Discard)
	srv := httptest.NewServer(record.Handler(r, func() error { return nil }))
	defer srv.Close()
	for path, want := range map[string]string{
		"/events?poduid=u":          `unknown query parameter "poduid" (allowed: podUID)`,
		"/events?podUID=a&podUID=b": `query parameter "podUID" given 2 times`,
		"/healthz?verbose=1":        `unknown query parameter "verbose" (this path takes no parameters)`,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %q, want 400 %q", path, resp.StatusCode, body, want)
		}
	}
}

// A boot count torn by a crash does not stop the restart: it counts on
// from the records.
func TestTornBootCount(t *testing.T) {
	dir := t.TempDir()
	first := newRecorder(t, dir, io.Discard)
	first.Close()
	second := newRecorder(t, dir, io.Discard)
	second.Close()
	if err := os.WriteFile(filepath.Join(dir, "boot"), []byte("\x00\x00"), 0o600); err != nil {
		t.Fatal(err)
	}
	third := newRecorder(t, dir, io.Discard)
	if third.Boot() != 2 {
		t.Errorf("Boot() = %d, want 2", third.Boot())
	}
	third.Close()
	if fourth := newRecorder(t, dir, io.Discard); fourth.Boot() != 3 {
		t.Errorf("Boot() = %d, want 3", fourth.Boot())
	}
}
