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
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	boot, err := readBoot(filepath.Join(dir, bootFile))
	if err != nil {
		return err
	}
	r.boot = boot
	if err := os.WriteFile(filepath.Join(dir, bootFile), []byte(strconv.Itoa(boot+1)), 0o600); err != nil {
		return err
	}

	path := filepath.Join(dir, eventsFile)
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
		for sc.Scan() {
			var e Event
			// A line cut short by a crash is skipped, not fatal.
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			r.next = max(r.next, e.Seq+1)
			r.append(&e)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		// The file is in finishing order; a stalled event finishes late.
		slices.SortStableFunc(r.events, func(a, b *Event) int { return cmp.Compare(a.Seq, b.Seq) })
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	r.file, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	return err
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
		return 0, fmt.Errorf("%s: bad boot count %q", path, data)
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
