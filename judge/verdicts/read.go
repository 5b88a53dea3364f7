package verdicts

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/requirements"
)

// Limits on what faultline reads of files it did not necessarily write (a
// run's artifacts directory, --baseline): each is far above what a real run
// writes, and low enough that a damaged or hostile file (a gzip bomb) fails
// with an error naming it instead of exhausting memory. Measured on the
// recorded runs (testdata): the largest Ginkgo JSON report, every suite on
// one stack, is 1.2 MB (85 kB gzipped); report.json is 86 kB per stack,
// 0.6 MB for nine stacks; run.json under 1 kB.
const (
	// MaxGinkgoReportBytes caps a Ginkgo JSON report, and separately what a
	// gzipped one decompresses to: 50 times the largest recorded.
	MaxGinkgoReportBytes = 64 << 20
	// MaxArtifactsBytes caps the Ginkgo reports one run.json names, read
	// and decompressed together, so a manifest that names one large report
	// thousands of times cannot keep faultline reading for hours. A
	// --repeat 10 run on four stacks reads about 50 MB.
	MaxArtifactsBytes = 1 << 30
	// MaxManifestBytes caps run.json: a few hundred bytes per stack.
	MaxManifestBytes = 1 << 20
	// MaxReportBytes caps a report.json read back (--baseline): 100 times
	// a nine-stack report.
	MaxReportBytes = 64 << 20
)

// TooLargeError says a file holds more than faultline reads of it (the
// Max*Bytes limits).
type TooLargeError struct {
	// File is the file as named to the reader.
	File string
	// Limit is the limit it went over, in bytes.
	Limit int64
	msg   string
}

func (e *TooLargeError) Error() string { return e.File + ": " + e.msg }

// tooLarge makes the error a cappedReader returns; format has one %s, the
// limit.
func tooLarge(file string, limit int64, format string) *TooLargeError {
	return &TooLargeError{File: file, Limit: limit, msg: fmt.Sprintf(format, byteSize(limit))}
}

func byteSize(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// cappedReader reads at most left bytes of r and then fails with tooLarge
// if r has more: unlike io.LimitReader, a file over the limit is an error,
// never silently cut short.
type cappedReader struct {
	r        io.Reader
	left     int64
	n        int64 // read so far
	tooLarge error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a file of exactly the limit from a larger one.
		var one [1]byte
		n, err := c.r.Read(one[:])
		if n > 0 {
			return 0, c.tooLarge
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	c.n += int64(n)
	return n, err
}

// readCapped reads all of r, refusing more than limit bytes.
func readCapped(r io.Reader, name string, limit int64, of string) ([]byte, error) {
	data, err := io.ReadAll(&cappedReader{r: r, left: limit, tooLarge: tooLarge(name, limit, "larger than %s, the most faultline reads of "+of)})
	if err != nil {
		return nil, fileError(name, err)
	}
	return data, nil
}

// fileError names the file in err, unless err already does.
func fileError(name string, err error) error {
	var tl *TooLargeError
	if errors.As(err, &tl) {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Run is what one run of the test binary against one cluster showed: its
// stack and every selected spec's result.
type Run struct {
	Stack wire.StackInfo
	// Specs are the selected specs (a spec a filter left out is not here).
	Specs []Spec
	// SetupFailures are suite-level nodes that failed ([SynchronizedBeforeSuite]
	// ...): every one makes the run fail.
	SetupFailures []Spec
	// LabelFilter and Focus are the run's Ginkgo filters.
	LabelFilter string
	Focus       []string
}

// ReadGinkgoFile reads a JSON report Ginkgo wrote (--json-report), gzipped
// if its name ends in .gz (recorded runs), as run number run. stackKey names
// the stack when the report does not (the suite setup failed before it read
// the cluster).
func ReadGinkgoFile(path string, run int, stackKey string) (Run, error) {
	reports, err := ReadGinkgoReports(path)
	if err != nil {
		return Run{}, err
	}
	return FromGinkgo(reports, run, stackKey)
}

// ReadGinkgoReports reads Ginkgo's own report types from a JSON report,
// gzipped if its name ends in .gz. It reads at most MaxGinkgoReportBytes
// of the file and of what it decompresses to.
func ReadGinkgoReports(path string) ([]types.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	reports, _, err := readGinkgoReports(f, path, MaxGinkgoReportBytes)
	return reports, err
}

// readGinkgoReports reads a Ginkgo JSON report from r, gzipped if name ends
// in .gz, refusing one of more than limit bytes (the file, and what it
// decompresses to). It returns how many bytes it read and decompressed, so
// that a caller can hold several reports to a total.
func readGinkgoReports(r io.Reader, name string, limit int64) ([]types.Report, int64, error) {
	of := "the most faultline reads of a Ginkgo JSON report"
	file := &cappedReader{r: r, left: limit, tooLarge: tooLarge(name, limit, "larger than %s, "+of)}
	src, gz := io.Reader(file), strings.HasSuffix(name, ".gz")
	if gz {
		z, err := gzip.NewReader(file)
		if err != nil {
			return nil, file.n, fileError(name, err)
		}
		defer z.Close()
		// The decompressed stream has its own cap: a few kilobytes of gzip
		// can stand for gigabytes.
		src = &cappedReader{r: z, left: limit, tooLarge: tooLarge(name, limit, "decompresses to more than %s, "+of)}
	}
	data, err := io.ReadAll(src)
	used := file.n
	if gz {
		used += int64(len(data))
	}
	if err != nil {
		return nil, used, fileError(name, err)
	}
	var reports []types.Report
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&reports); err != nil {
		return nil, used, fmt.Errorf("%s: not a Ginkgo JSON report: %w", name, err)
	}
	if len(reports) == 0 {
		return nil, used, fmt.Errorf("%s: holds no suite", name)
	}
	return reports, used, nil
}

// FromGinkgo reads Ginkgo's reports of one run.
func FromGinkgo(reports []types.Report, run int, stackKey string) (Run, error) {
	r := Run{Stack: wire.StackInfo{Key: stackKey}}
	stackFound := false
	for _, rep := range reports {
		r.LabelFilter = rep.SuiteConfig.LabelFilter
		r.Focus = rep.SuiteConfig.FocusStrings
		selected, err := selection(rep)
		if err != nil {
			return Run{}, err
		}
		// The suite as a whole failed (its timeout, an interrupt, an abort,
		// no spec selected with --fail-on-empty): the specs it did not get
		// to are reported as skipped like filtered ones, so this alone
		// says the run is incomplete.
		for _, reason := range rep.SpecialSuiteFailureReasons {
			r.SetupFailures = append(r.SetupFailures, Spec{Name: "[suite]", State: Fail, Message: reason, Run: run})
		}
		for _, sr := range rep.SpecReports {
			for _, e := range sr.ReportEntries {
				if e.Name == wire.StackEntry && !stackFound {
					var s wire.StackInfo
					if err := json.Unmarshal([]byte(e.Value.AsJSON), &s); err != nil {
						return Run{}, fmt.Errorf("report entry %s: %w", wire.StackEntry, err)
					}
					r.Stack, stackFound = s, true
				}
			}
			spec := specOf(sr, run)
			if sr.LeafNodeType != types.NodeTypeIt {
				if sr.State.Is(types.SpecStateFailureStates) {
					r.SetupFailures = append(r.SetupFailures, spec)
				}
				continue
			}
			if sr.State == types.SpecStateSkipped && sr.Failure.Message == "" {
				continue // left out by a filter: not a result
			}
			if sr.State == types.SpecStatePending && !selected(sr) {
				continue // Ginkgo reports pending specs whatever the filters
			}
			r.Specs = append(r.Specs, spec)
		}
	}
	if r.Stack.Key == "" {
		return Run{}, fmt.Errorf("the report names no stack (no %s entry) and none was given", wire.StackEntry)
	}
	return r, nil
}

// selection tells whether the run's filters chose a spec, as Ginkgo decides
// it (internal/focus.go): the label filter on the suite's and the spec's
// labels, the file filters on its code locations, and the focus and skip
// expressions on the suite's description and the spec's text. Ginkgo reports
// pending specs whatever the filters; only the chosen ones are results.
func selection(rep types.Report) (func(types.SpecReport) bool, error) {
	c := rep.SuiteConfig
	var checks []func(types.SpecReport) bool
	if c.LabelFilter != "" {
		f, err := types.ParseLabelFilter(c.LabelFilter)
		if err != nil {
			return nil, fmt.Errorf("the report's label filter %q: %w", c.LabelFilter, err)
		}
		checks = append(checks, func(sr types.SpecReport) bool {
			return f(append(append([]string(nil), rep.SuiteLabels...), sr.Labels()...))
		})
	}
	locations := func(sr types.SpecReport) []types.CodeLocation {
		return append(append([]types.CodeLocation(nil), sr.ContainerHierarchyLocations...), sr.LeafNodeLocation)
	}
	if len(c.FocusFiles) > 0 {
		f, err := types.ParseFileFilters(c.FocusFiles)
		if err != nil {
			return nil, err
		}
		checks = append(checks, func(sr types.SpecReport) bool { return f.Matches(locations(sr)) })
	}
	if len(c.SkipFiles) > 0 {
		f, err := types.ParseFileFilters(c.SkipFiles)
		if err != nil {
			return nil, err
		}
		checks = append(checks, func(sr types.SpecReport) bool { return !f.Matches(locations(sr)) })
	}
	text := func(sr types.SpecReport) string { return rep.SuiteDescription + " " + sr.FullText() }
	if len(c.FocusStrings) > 0 {
		re, err := regexp.Compile(strings.Join(c.FocusStrings, "|"))
		if err != nil {
			return nil, fmt.Errorf("the report's focus: %w", err)
		}
		checks = append(checks, func(sr types.SpecReport) bool { return re.MatchString(text(sr)) })
	}
	if len(c.SkipStrings) > 0 {
		re, err := regexp.Compile(strings.Join(c.SkipStrings, "|"))
		if err != nil {
			return nil, fmt.Errorf("the report's skip: %w", err)
		}
		checks = append(checks, func(sr types.SpecReport) bool { return !re.MatchString(text(sr)) })
	}
	return func(sr types.SpecReport) bool {
		for _, ok := range checks {
			if !ok(sr) {
				return false
			}
		}
		return true
	}, nil
}

func specOf(sr types.SpecReport, run int) Spec {
	name := sr.FullText()
	if sr.LeafNodeType != types.NodeTypeIt {
		name = "[" + sr.LeafNodeType.String() + "]"
	}
	s := Spec{
		Name:         name,
		Location:     sr.LeafNodeLocation.String(),
		Requirements: requirements.FromLabels(sr.Labels()),
		Duration:     sr.RunTime,
		Run:          run,
		Message:      strings.TrimSpace(sr.Failure.Message),
	}
	switch sr.State {
	case types.SpecStatePassed:
		s.State = Pass
	case types.SpecStatePending:
		s.State = Pending
	case types.SpecStateSkipped:
		if why, ok := strings.CutPrefix(s.Message, wire.NotImplementedPrefix); ok {
			s.State, s.Message = NotImplemented, why
		} else if why, ok := strings.CutPrefix(s.Message, wire.InconclusivePrefix); ok {
			s.State, s.Message = Inconclusive, why
		} else {
			s.State = Skipped
		}
	default: // failed, panicked, timed out, interrupted, aborted
		s.State = Fail
		if s.Message == "" {
			s.Message = sr.State.String()
		}
		s.Cause = causeOf(sr)
	}
	var floors []wire.Floor
	badFloor := false
	for _, e := range sr.ReportEntries {
		var dir string
		// Only a path inside the results directory: a report from
		// elsewhere must not make the report link outside it.
		if e.Name == wire.DumpEntry && json.Unmarshal([]byte(e.Value.AsJSON), &dir) == nil && filepath.IsLocal(dir) {
			s.Dump = filepath.ToSlash(dir)
		}
		if e.Name == wire.FloorEntry {
			var f wire.Floor
			// Not a floor harness.Floor writes: the spec's floor is
			// unknown, not smaller.
			badFloor = badFloor || json.Unmarshal([]byte(e.Value.AsJSON), &f) != nil || f.Total < 0
			floors = append(floors, f)
		}
	}
	if !badFloor {
		s.Floor = wire.Sum(floors...)
	}
	return s
}
