// Package report turns the JUnit files of a run (one per runtime and suite) into
// the result matrix a conformance run hands in: counts per runtime and suite,
// and every failed, skipped or pending spec with its reason.
package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/suites/suitenames"
)

// junitSuites is the subset of the JUnit schema Ginkgo writes that we read.
type junitSuites struct {
	Suites []struct {
		Cases []junitCase `xml:"testcase"`
	} `xml:"testsuite"`
}

type junitCase struct {
	Name    string  `xml:"name,attr"`
	Time    float64 `xml:"time,attr"`
	Status  string  `xml:"status,attr"`
	Failure *struct {
		Message string `xml:"message,attr"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
	} `xml:"error"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
}

// Cell is one runtime × suite result. Specs left out by --focus or
// --label-filter are not counted; Duration adds up the specs' own times (they
// may have run in parallel).
type Cell struct {
	Runtime, Suite                   string
	Passed, Failed, Skipped, Pending int
	// NotImplemented counts specs whose requirement the stack lacks
	// altogether (suites/harness.NotImplemented); they are not in Skipped.
	NotImplemented int
	Duration       time.Duration
	Notes          []string // "failed: <spec>: <message>" and the like
}

// NotImplementedPrefix starts the skip message of a spec whose requirement
// the stack does not implement at all (suites/harness.NotImplemented): such
// specs count as "not implemented", apart from plain skips.
const NotImplementedPrefix = "not implemented: "

// JUnitFile is the JUnit report of one runtime's run: <dir>/<runtime>/JUnitFile.
const JUnitFile = "junit_01.xml"

// Read collects every <dir>/<runtime>/junit_01.xml below dir, one cell per
// runtime and suite. A spec's suite is its Suite:<name> label; suite-level
// nodes that fail ([SynchronizedBeforeSuite] ...) count under "setup".
func Read(dir string) ([]Cell, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", JUnitFile))
	if err != nil {
		return nil, err
	}
	var cells []Cell
	for _, file := range files {
		runtime := filepath.Base(filepath.Dir(file))
		bySuite, err := readFile(file)
		if err != nil {
			return nil, err
		}
		for suite, cell := range bySuite {
			cell.Runtime, cell.Suite = runtime, suite
			cells = append(cells, *cell)
		}
	}
	sort.Slice(cells, func(i, j int) bool {
		if cells[i].Runtime != cells[j].Runtime {
			return cells[i].Runtime < cells[j].Runtime
		}
		return cells[i].Suite < cells[j].Suite
	})
	return cells, nil
}

// suiteOf reads the Suite:<name> label Ginkgo appends to a case's name
// ("[It] text [Suite:dra, ci]").
func suiteOf(name string) string {
	open := strings.LastIndex(name, " [")
	if open < 0 || !strings.HasSuffix(name, "]") {
		return "setup"
	}
	for _, label := range strings.Split(name[open+2:len(name)-1], ", ") {
		if s, ok := strings.CutPrefix(label, suitenames.LabelPrefix); ok {
			return s
		}
	}
	return "setup"
}

func readFile(path string) (map[string]*Cell, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var suites junitSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cells := map[string]*Cell{}
	for _, s := range suites.Suites {
		for _, tc := range s.Cases {
			// Ginkgo reports suite-level nodes ([BeforeSuite], [ReportAfterSuite] ...)
			// as cases too: they count only when they fail.
			if !strings.HasPrefix(tc.Name, "[It]") && tc.Failure == nil && tc.Error == nil {
				continue
			}
			if tc.Skipped != nil && tc.Skipped.Message == "skipped" && tc.Status != "pending" {
				// left out by --focus or --label-filter: not a result
				continue
			}
			suite := suiteOf(tc.Name)
			c := cells[suite]
			if c == nil {
				c = &Cell{}
				cells[suite] = c
			}
			c.Duration += time.Duration(tc.Time * float64(time.Second))
			var why string
			var notImplemented bool
			if tc.Skipped != nil {
				why, notImplemented = strings.CutPrefix(strings.TrimPrefix(tc.Skipped.Message, "skipped - "), NotImplementedPrefix)
			}
			switch {
			case tc.Failure != nil || tc.Error != nil:
				c.Failed++
				c.Notes = append(c.Notes, fmt.Sprintf("failed: %s: %s", tc.Name, firstLine(message(tc))))
			case tc.Status == "pending":
				c.Pending++
				c.Notes = append(c.Notes, fmt.Sprintf("pending: %s", tc.Name))
			case tc.Skipped != nil && notImplemented:
				c.NotImplemented++
				c.Notes = append(c.Notes, fmt.Sprintf("%s%s: %s", NotImplementedPrefix, tc.Name, firstLine(why)))
			case tc.Skipped != nil:
				c.Skipped++
				if tc.Skipped.Message != "" {
					c.Notes = append(c.Notes, fmt.Sprintf("skipped: %s: %s", tc.Name, firstLine(tc.Skipped.Message)))
				}
			default:
				c.Passed++
			}
		}
	}
	return cells, nil
}

func message(tc junitCase) string {
	if tc.Failure != nil {
		return tc.Failure.Message
	}
	return tc.Error.Message
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// Write prints the matrix as Markdown.
func Write(w io.Writer, cells []Cell) {
	fmt.Fprintln(w, "| runtime | suite | passed | failed | not implemented | skipped | pending | spec time |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|")
	for _, c := range cells {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %d | %s |\n", c.Runtime, c.Suite, c.Passed, c.Failed, c.NotImplemented, c.Skipped, c.Pending, c.Duration.Round(time.Second))
	}
	for _, c := range cells {
		for _, n := range c.Notes {
			fmt.Fprintf(w, "- %s/%s %s\n", c.Runtime, c.Suite, n)
		}
	}
}
