// Package record keeps the list of NRI events one plugin instance saw and
// what it did with each, so that specs can check what the runtime sent
// and in which order.
//
// Every finished event is also logged as one JSON line ("msg":"nri event")
// and, given a state directory, appended to a file there. The file outlives
// a crash of the process (the directory is an emptyDir of the plugin pod),
// so the restarted process still serves the events from before the crash;
// the log line is the fallback when there is no directory
// (kubectl logs --previous).
package record

import (
	"github.com/faultline-k8s/faultline/fakes/lib/textcap"

	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Result is what the plugin did with an event.
type Result string

// The results.
const (
	// Pending: the handler is still running (e.g. stalling).
	Pending Result = "pending"
	// OK: the handler answered without a fault.
	OK Result = "ok"
	// Error: the handler returned an error (injected, or a malformed annotation).
	Error Result = "error"
	// Stalled: the handler blocked before answering, see Interrupted.
	Stalled Result = "stalled"
	// Disconnect: the plugin closed its NRI connection mid-event.
	Disconnect Result = "disconnect"
	// Crash: the plugin process exited mid-event.
	Crash Result = "crash"
)

// Names of the records that are about the plugin itself, not about a pod.
const (
	// PluginStart is recorded once per process, see Event.Boot.
	PluginStart = "PluginStart"
	// Synchronize is recorded when the runtime accepted a connection.
	Synchronize = "Synchronize"
	// Disconnected is recorded when a synchronized connection ended.
	Disconnected = "Disconnected"
	// Shutdown is recorded when the runtime says it shuts down.
	Shutdown = "Shutdown"
)

// Event is one record. Seq orders the records of one instance by arrival.
type Event struct {
	Seq uint64 `json:"seq"`
	// Boot counts the processes of this instance (0 for the first); it only
	// grows across restarts when the plugin has a state directory.
	Boot   int    `json:"boot"`
	Plugin string `json:"plugin"`
	Index  string `json:"index"`
	// Event is the NRI event name (e.g. CreateContainer) or one of the
	// plugin's own records (PluginStart, Synchronize, Disconnected, Shutdown).
	Event        string `json:"event"`
	PodNamespace string `json:"podNamespace,omitempty"`
	PodName      string `json:"podName,omitempty"`
	PodUID       string `json:"podUID,omitempty"`
	// PodSandboxID is the runtime's ID of the sandbox the event is about
	// (for container events: the container's sandbox). Each attempt to
	// create a pod's sandbox gets a new one, so it tells attempts apart.
	PodSandboxID  string `json:"podSandboxID,omitempty"`
	ContainerName string `json:"containerName,omitempty"`
	ContainerID   string `json:"containerID,omitempty"`
	Result        Result `json:"result"`
	// Fault is the annotation value that applied, if any.
	Fault string `json:"fault,omitempty"`
	// Message is the returned error or what happened.
	Message string `json:"message,omitempty"`
	// Interrupted: the request ended (runtime timeout or lost connection)
	// before the handler was done; the runtime did not get its answer.
	Interrupted bool      `json:"interrupted,omitempty"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end,omitzero"`
}

// Bounds of a record's fields: a fault annotation may be 256 KiB, and a
// record must stay a line that a restarted plugin reads back.
const (
	MaxField   = 1024
	MaxMessage = 4096
)

// capped returns e with every text field within its bound and valid UTF-8.
func (e Event) capped() Event {
	for _, f := range []*string{&e.Plugin, &e.Index, &e.Event, &e.PodNamespace, &e.PodName, &e.PodUID,
		&e.PodSandboxID, &e.ContainerName, &e.ContainerID, &e.Fault} {
		*f = textcap.Cut(*f, MaxField)
	}
	e.Result = Result(textcap.Cut(string(e.Result), MaxField))
	e.Message = textcap.Cut(e.Message, MaxMessage)
	return e
}

// Outcome completes a pending Event.
type Outcome struct {
	Result      Result
	Fault       string
	Message     string
	Interrupted bool
}

// Options configure a Recorder.
type Options struct {
	Plugin, Index string
	// Dir keeps the records and the boot count across restarts; "" keeps
	// them in memory only.
	Dir    string
	Logger *slog.Logger
	// Max bounds the records kept in memory (and reloaded); default 10000.
	Max int
}

const (
	eventsFile = "events.jsonl"
	bootFile   = "boot"
)

// Recorder is safe for concurrent use.
type Recorder struct {
	plugin, index string
	boot          int
	max           int
	log           *slog.Logger

	mu     sync.Mutex
	next   uint64
	events []*Event
	file   *os.File // nil without Dir
}

// New loads what an earlier process of this instance recorded in o.Dir and
// records PluginStart.
func New(o Options) (*Recorder, error) {
	r := &Recorder{plugin: o.Plugin, index: o.Index, max: o.Max, log: o.Logger, next: 1}
	if r.max <= 0 {
		r.max = 10000
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if o.Dir != "" {
		if err := r.load(o.Dir); err != nil {
			return nil, fmt.Errorf("event record: %w", err)
		}
	}
	r.Begin(Event{Event: PluginStart}).Finish(Outcome{Result: OK,
		Message: fmt.Sprintf("process started (boot %d, pid %d)", r.boot, os.Getpid())})
	return r, nil
}

func (r *Recorder) load(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	bootPath := filepath.Join(dir, bootFile)
	boot, bootErr := readBoot(bootPath)

	path := filepath.Join(dir, eventsFile)
	if f, err := os.Open(path); err == nil {
		err := r.reload(f, path)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		// The file is in finishing order; a stalled event finishes late.
		slices.SortStableFunc(r.events, func(a, b *Event) int { return cmp.Compare(a.Seq, b.Seq) })
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if bootErr != nil {
		// A boot file torn by a crash: count on from the records.
		boot = 0
		for _, e := range r.events {
			boot = max(boot, e.Boot+1)
		}
		r.log.Warn("unreadable boot count, counting on from the records", "error", bootErr, "boot", boot)
	}
	r.boot = boot
	tmp := bootPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(boot+1)), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, bootPath); err != nil {
		return err
	}

	var err error
	r.file, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	// A line torn by the crash must not swallow the next record.
	if info, err := r.file.Stat(); err == nil && info.Size() > 0 {
		last := make([]byte, 1)
		if _, err := r.file.ReadAt(last, info.Size()-1); err == nil && last[0] != '\n' {
			_, _ = r.file.Write([]byte{'\n'})
		}
	}
	return nil
}

// maxLine bounds a line reload reads; Finish writes far shorter ones
// (fields are capped, see Event.capped).
const maxLine = 1 << 20

// reload reads the records of an earlier process. A line that is no
// record (cut short by a crash, corrupt) or too long is skipped with a log
// line: the plugin must come back with what it can read, never crash-loop
// on its own file.
func (r *Recorder) reload(f *os.File, path string) error {
	br := bufio.NewReaderSize(f, 64<<10)
	for lineNo := 1; ; lineNo++ {
		line, tooLong, err := readLine(br, maxLine)
		if errors.Is(err, io.EOF) && len(line) == 0 && !tooLong {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		switch {
		case tooLong:
			r.log.Warn("skipping an over-long line of the event record", "file", path, "line", lineNo, "limit", maxLine)
		case len(line) == 0:
		default:
			var e Event
			if uerr := json.Unmarshal(line, &e); uerr != nil || e.Event == "" {
				r.log.Warn("skipping a line of the event record that is no record", "file", path, "line", lineNo,
					"error", uerr, "start", textcap.Cut(string(line), 64))
			} else {
				r.next = max(r.next, e.Seq+1)
				c := e.capped()
				r.append(&c)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// readLine reads one line without its newline; a line longer than limit is
// read to its end and dropped (tooLong).
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return line, tooLong, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, nil
	}
}

// readBoot returns the boot number for this process: the file holds the
// number of the next boot.
func readBoot(path string) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: bad boot count %.32q", path, data)
	}
	return n, nil
}

// Boot is the number of this process, see Event.Boot.
func (r *Recorder) Boot() int { return r.boot }

// append keeps at most r.max records; the caller holds r.mu (or owns r).
func (r *Recorder) append(e *Event) {
	r.events = append(r.events, e)
	if over := len(r.events) - r.max; over > 0 {
		clear(r.events[:over])
		r.events = r.events[over:]
	}
}

// Entry is a pending record.
type Entry struct {
	r *Recorder
	e *Event
}

// Begin records the arrival of an event; the caller fills in what the
// event is about, Begin the rest.
func (r *Recorder) Begin(e Event) *Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	e.Seq = r.next
	r.next++
	e.Boot, e.Plugin, e.Index = r.boot, r.plugin, r.index
	e.Result = Pending
	e.Start = time.Now().UTC()
	e = e.capped()
	p := &e
	r.append(p)
	return &Entry{r: r, e: p}
}

// Finish completes the record, then logs and saves it before returning:
// a Crash record must be out before the process exits.
func (en *Entry) Finish(o Outcome) Event {
	r := en.r
	r.mu.Lock()
	defer r.mu.Unlock()
	en.e.Result, en.e.Fault, en.e.Message, en.e.Interrupted = o.Result, o.Fault, o.Message, o.Interrupted
	en.e.End = time.Now().UTC()
	*en.e = en.e.capped()
	e := *en.e

	level := slog.LevelInfo
	if e.Result != OK {
		level = slog.LevelWarn
	}
	r.log.Log(context.Background(), level, "nri event", "record", e)
	if r.file != nil {
		line, err := json.Marshal(e)
		if err == nil {
			_, err = r.file.Write(append(line, '\n'))
		}
		if err != nil {
			r.log.Error("cannot save event record", "error", err)
		}
	}
	return e
}

// Note records something about the plugin itself (PluginStart,
// Synchronize, ...), not about a pod.
func (r *Recorder) Note(event, message string) {
	r.Begin(Event{Event: event}).Finish(Outcome{Result: OK, Message: message})
}

// List returns the records in arrival order, only those of one pod if
// podUID is not "".
func (r *Recorder) List(podUID string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Event{}
	for _, e := range r.events {
		if podUID == "" || e.PodUID == podUID {
			out = append(out, *e)
		}
	}
	return out
}

// Close closes the state file.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return nil
	}
	err := r.file.Close()
	r.file = nil
	return err
}
