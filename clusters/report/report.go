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
	Duration                         time.Duration
	Notes                            []string // "failed: <spec>: <message>" and the like
}

// Read collects every <dir>/<runtime>/<suite>/junit.xml below dir.
func Read(dir string) ([]Cell, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "junit.xml"))
	if err != nil {
		return nil, err
	}
	var cells []Cell
	for _, file := range files {
		rel, _ := filepath.Rel(dir, filepath.Dir(file))
		runtime, suite, _ := strings.Cut(rel, string(filepath.Separator))
		cell, err := readFile(file)
		if err != nil {
			return nil, err
		}
		cell.Runtime, cell.Suite = runtime, suite
		cells = append(cells, cell)
	}
	sort.Slice(cells, func(i, j int) bool {
		if cells[i].Runtime != cells[j].Runtime {
			return cells[i].Runtime < cells[j].Runtime
		}
		return cells[i].Suite < cells[j].Suite
	})
	return cells, nil
}

func readFile(path string) (Cell, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Cell{}, err
	}
	var suites junitSuites
	if err := xml.Unmarshal(data, &suites); err != nil {
		return Cell{}, fmt.Errorf("%s: %w", path, err)
	}
	var c Cell
	for _, s := range suites.Suites {
		for _, tc := range s.Cases {
			// Ginkgo reports suite-level nodes ([BeforeSuite], [ReportAfterSuite] ...)
			// as cases too: they count only when they fail.
			if !strings.HasPrefix(tc.Name, "[It]") && tc.Failure == nil && tc.Error == nil {
				continue
			}
			c.Duration += time.Duration(tc.Time * float64(time.Second))
			switch {
			case tc.Failure != nil || tc.Error != nil:
				c.Failed++
				c.Notes = append(c.Notes, fmt.Sprintf("failed: %s: %s", tc.Name, firstLine(message(tc))))
			case tc.Status == "pending":
				c.Pending++
				c.Notes = append(c.Notes, fmt.Sprintf("pending: %s", tc.Name))
			case tc.Skipped != nil && tc.Skipped.Message == "skipped":
				// left out by --focus or --label-filter: not a result
				continue
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
	return c, nil
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
	fmt.Fprintln(w, "| runtime | suite | passed | failed | skipped | pending | spec time |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, c := range cells {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d | %d | %s |\n", c.Runtime, c.Suite, c.Passed, c.Failed, c.Skipped, c.Pending, c.Duration.Round(time.Second))
	}
	for _, c := range cells {
		for _, n := range c.Notes {
			fmt.Fprintf(w, "- %s/%s %s\n", c.Runtime, c.Suite, n)
		}
	}
}
