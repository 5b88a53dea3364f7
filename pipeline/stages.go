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

	"github.com/faultline-k8s/faultline/internal/ginkgorun"
)

// Stage is one step of a run, as data: what ran, for which runtime, when, how
// long, and how it ended.
type Stage struct {
	Name     string        `json:"name"`
	Runtime  string        `json:"runtime,omitempty"`
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration"`
	// Result is "ok", "failed: <error>", "interrupted" or "skipped: <why>";
	// a suites stage's (Stages.RunSuites) says what the report judged.
	Result string `json:"result"`
	// suites marks a stage RunSuites ran: Judge settles its result.
	suites bool
}

// Results of a suites stage whose specs failed (ginkgorun.ErrSpecsFailed):
// ginkgo's non-zero exit is no failure of the stage, the report judges
// whether the failures were expected. Until it has, or when it could not
// (the report failed, the run was interrupted), the stage says so.
const (
	resultNotJudged        = "specs failed, not judged"
	resultExpectedFailures = "ok: failing specs all expected"
)

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
	return s.run(runtime, name, false, do)
}

// RunSuites runs a stage that runs specs and records it as Run does, but
// for failed specs (ginkgorun.ErrSpecsFailed, which it returns as is): the
// stage has not failed, its result waits for the report's judgment (Judge).
func (s *Stages) RunSuites(runtime, name string, do func() error) error {
	return s.run(runtime, name, true, do)
}

func (s *Stages) run(runtime, name string, suites bool, do func() error) error {
	start := s.now()
	s.say(runtime, "== %s", name)
	err := do()
	st := Stage{Name: name, Runtime: runtime, Start: start, Duration: s.now().Sub(start), Result: Result(err), suites: suites}
	specsFailed := suites && errors.Is(err, ginkgorun.ErrSpecsFailed)
	if specsFailed {
		st.Result = resultNotJudged
	}
	s.mu.Lock()
	s.stages = append(s.stages, st)
	s.mu.Unlock()
	switch {
	case specsFailed:
		s.say(runtime, "%s: some specs failed; the report judges whether they were expected", name)
	case err != nil && !errors.Is(err, errKept):
		s.say(runtime, "%s: %s", name, st.Result)
	}
	return err
}

// Judge settles the result of each stage RunSuites ran that ginkgo ended
// (its specs passed, or some failed) by what the report decided of its
// runtime's stack: judgment says why the report fails the stack ("" when
// it does not) and whether it judged the stack at all. Failing specs the
// report expects leave the stage ok; unexpected verdicts fail it, also
// when ginkgo exited 0 (an expected failure that passed, a skip). A stage
// that failed otherwise (ginkgo did not run, an interrupt) keeps its result.
func (s *Stages) Judge(judgment func(runtime string) (why string, judged bool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.stages {
		st := &s.stages[i]
		if !st.suites || (st.Result != "ok" && st.Result != resultNotJudged) {
			continue
		}
		why, judged := judgment(st.Runtime)
		switch {
		case !judged:
		case why != "":
			st.Result = "failed: " + why
		case st.Result == resultNotJudged:
			st.Result = resultExpectedFailures
		}
	}
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
