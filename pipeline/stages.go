package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"text/tabwriter"
	"time"
)

// Stage is one step of a run, as data: what ran, for which runtime, when, how
// long, and how it ended.
type Stage struct {
	Name     string        `json:"name"`
	Runtime  string        `json:"runtime,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Result is "ok", "failed: <error>", "interrupted" or "skipped: <why>".
	Result string `json:"result"`
}

// Seconds is the stage's duration in whole seconds, as the table shows it.
func (s Stage) Seconds() int { return int(s.Duration.Round(time.Second) / time.Second) }

// Stages records a run's stages; runtimes run side by side, so it is safe
// for concurrent use.
type Stages struct {
	mu     sync.Mutex
	start  time.Time
	stages []Stage
	out    io.Writer
	now    func() time.Time
}

// NewStages starts the clock of a run. Each stage's start is announced on out.
func NewStages(out io.Writer) *Stages {
	return &Stages{start: time.Now(), out: out, now: time.Now}
}

// Run runs one stage and records it. A nil error is "ok".
func (s *Stages) Run(runtime, name string, do func() error) error {
	start := s.now()
	s.say(runtime, "== %s", name)
	err := do()
	st := Stage{Name: name, Runtime: runtime, Start: start, Duration: s.now().Sub(start), Result: Result(err)}
	s.mu.Lock()
	s.stages = append(s.stages, st)
	s.mu.Unlock()
	if err != nil && !errors.Is(err, errKept) {
		s.say(runtime, "%s: %s", name, st.Result)
	}
	return err
}

// Skip records a stage that did not run, and why.
func (s *Stages) Skip(runtime, name, why string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stages = append(s.stages, Stage{Name: name, Runtime: runtime, Start: s.now(), Result: "skipped: " + why})
}

// Result words an error for the table.
func Result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, errKept):
		return err.Error()
	case isInterrupt(err):
		return "interrupted"
	default:
		return "failed: " + firstLine(err.Error())
	}
}

func (s *Stages) say(runtime, format string, args ...any) {
	prefix := "faultline: "
	if runtime != "" {
		prefix = "faultline [" + runtime + "]: "
	}
	fmt.Fprintf(s.out, prefix+format+"\n", args...)
}

// List returns the stages in the order they started.
func (s *Stages) List() []Stage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]Stage(nil), s.stages...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// WriteTable prints the stage table: each stage's start offset, its
// seconds and result, and the run's wall time (runtimes overlap, so the
// wall time is less than the sum).
func (s *Stages) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\truntime\tstart\tseconds\tresult")
	for _, st := range s.List() {
		rt := st.Runtime
		if rt == "" {
			rt = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t+%ds\t%d\t%s\n", st.Name, rt, int(st.Start.Sub(s.start).Round(time.Second)/time.Second), st.Seconds(), st.Result)
	}
	fmt.Fprintf(tw, "wall\t\t\t%d\t\n", int(s.now().Sub(s.start).Round(time.Second)/time.Second))
	tw.Flush()
}

// The files WriteFiles writes (the run reserves them in its artifacts
// directory).
const (
	timingsText = "timings.txt"
	timingsJSON = "timings.json"
)

// WriteFiles writes timings.txt (the table) and timings.json into dir.
func (s *Stages) WriteFiles(dir string) error {
	f, err := os.Create(filepath.Join(dir, timingsText))
	if err != nil {
		return err
	}
	s.WriteTable(f)
	if err := f.Close(); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(struct {
		Start  time.Time     `json:"start"`
		Wall   time.Duration `json:"wall"`
		Stages []Stage       `json:"stages"`
	}{s.start, s.now().Sub(s.start), s.List()}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, timingsJSON), append(raw, '\n'), 0o644)
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}
