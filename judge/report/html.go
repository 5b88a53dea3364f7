package report

import (
	"fmt"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"html/template"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
)

// WriteHTML writes r as one self-contained HTML page: what was tested, a
// legend, the grid of verdicts (requirements x stacks) whose cells open to
// their specs, and the setup failures. It fetches nothing: the page is read
// from the artifacts directory, offline, and its links to failure dumps are
// relative to that directory.
func WriteHTML(w io.Writer, r *verdicts.Report) error {
	return htmlPage.Execute(w, htmlViewOf(r))
}

// htmlView is the report as the template needs it: every decision (slug,
// symbol, label, rounding) is made here, in Go, so the template only lays out.
type htmlView struct {
	Status string
	OK     bool
	// Complete: every selected requirement was checked; Checked says how
	// many were (CheckedLine), NotChecked lists the others.
	Complete   bool
	Checked    string
	NotChecked []htmlUnexpected
	Header     verdicts.Header
	Date       string
	Focus      string
	Stacks     []htmlStack
	Legend     []htmlLegendItem
	Groups     []htmlGroup
	Columns    int // the grid's columns, requirement included
	Unexpected []htmlUnexpected
	Setup      []htmlSetupFailure
	// Mark and FailSymbol draw the legend's and the cells' unexpected marker.
	Mark, FailSymbol string
	// HasFloors: some spec declared its floor (floor.go); OverFloor are
	// the specs over FloorFactor times it, AllFloors every spec of every
	// stack, FloorsDeclared of them declared one.
	HasFloors                 bool
	FloorIntro, FloorFactor   string
	OverFloor, AllFloors      []htmlFloorRow
	FloorsDeclared, FloorsAll int
}

// htmlFloorRow is a spec in the tables of time against floor.
type htmlFloorRow struct {
	Stack string
	htmlSpec
}

type htmlStack struct {
	wire.StackInfo
	Expectations string // file, empty when the stack has none
}

type htmlLegendItem struct {
	Slug, Symbol, Name, Meaning string
}

// htmlGroup is a run of consecutive rows of one area: the catalogue keeps an
// area's requirements together, and a heading row per area makes the grid
// easier to scan.
type htmlGroup struct {
	Area string
	Rows []htmlRow
}

type htmlRow struct {
	Req   requirements.Requirement
	Cells []htmlCell
	// Controls are what shows the requirement's spec able to fail (nil:
	// a requirement without an entry, not in the catalogue).
	Controls *htmlControls
}

type htmlCell struct {
	Stack  string
	V      *verdicts.Verdict // nil: not run
	Anchor string
	Slug   string
	Symbol string
	// Label is the state, or each state's share of the runs when they vary.
	Label    string
	Runs     string // "1 pass · 2 fail · 3 pass", when there were several
	Outcomes string // the states an expectation "varies" allows
	Specs    []htmlSpec
}

type htmlSpec struct {
	verdicts.Spec
	Slug, Symbol, Took, DumpHref string
	// FloorText, Ratio and FloorParts show the spec's floor (floor.go);
	// Over: it took more than FloorFactor times it.
	FloorText, Ratio, FloorParts string
	Over                         bool
}

type htmlUnexpected struct {
	Anchor, Requirement, Stack, Why string
}

type htmlSetupFailure struct {
	Stack string
	htmlSpec
}

// htmlStates gives each state its CSS slug and meaning; the symbols are the
// package's (Symbol), so the page and the text grids read alike, and keep
// the grid readable without colour (printouts, colour blindness).
var htmlStates = map[verdicts.State]htmlLegendItem{
	verdicts.Pass:             {Slug: "pass", Meaning: "the requirement holds"},
	verdicts.Fail:             {Slug: "fail", Meaning: "it does not, and no expectation of the stack explains it"},
	verdicts.KnownDiscrepancy: {Slug: "known-discrepancy", Meaning: "it fails as the stack's expectations document (reason and reference in the cell)"},
	verdicts.NotImplemented:   {Slug: "not-implemented", Meaning: "the stack lacks the feature the requirement is about"},
	verdicts.Inconclusive:     {Slug: "inconclusive", Meaning: "what the spec's verdict rests on did not happen (the message says what and why): nothing was checked"},
	verdicts.Skipped:          {Slug: "skipped", Meaning: "a precondition of this cluster is missing (the message says which)"},
	verdicts.Pending:          {Slug: "pending", Meaning: "written, waiting for an upstream design"},
}

func htmlSlug(s verdicts.State) string {
	if it, ok := htmlStates[s]; ok {
		return it.Slug
	}
	// A state this file does not know yet still gets a usable class.
	return strings.ReplaceAll(strings.ToLower(string(s)), " ", "-")
}

func htmlViewOf(r *verdicts.Report) htmlView {
	v := htmlView{
		OK:         r.OK(),
		Complete:   r.Complete(),
		Checked:    CheckedLine(r),
		Header:     r.Header,
		Date:       "unknown",
		Focus:      strings.Join(r.Header.Focus, ", "),
		Columns:    1 + len(r.Stacks),
		Mark:       UnexpectedMark,
		FailSymbol: Symbol(verdicts.Fail),
	}
	if !r.Header.Date.IsZero() {
		v.Date = r.Header.Date.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	for _, s := range verdicts.States {
		it := htmlStates[s]
		it.Symbol, it.Name = Symbol(s), string(s)
		v.Legend = append(v.Legend, it)
	}
	for _, s := range r.Stacks {
		v.Stacks = append(v.Stacks, htmlStack{StackInfo: s, Expectations: r.Expectations[s.Key]})
	}
	for _, req := range r.Requirements {
		row := htmlRow{Req: req, Controls: htmlControlsOf(req.ID)}
		for _, s := range r.Stacks {
			row.Cells = append(row.Cells, htmlCellOf(req.ID, s.Key, r.Verdict(req.ID, s.Key)))
		}
		if n := len(v.Groups); n == 0 || v.Groups[n-1].Area != req.Area {
			v.Groups = append(v.Groups, htmlGroup{Area: req.Area})
		}
		g := &v.Groups[len(v.Groups)-1]
		g.Rows = append(g.Rows, row)
	}
	for _, u := range r.Unexpected() {
		v.Unexpected = append(v.Unexpected, htmlUnexpected{
			Anchor: htmlAnchor(u.Requirement, u.Stack), Requirement: u.Requirement, Stack: u.Stack, Why: u.Unexpected,
		})
	}
	for _, f := range r.SetupFailures {
		v.Setup = append(v.Setup, htmlSetupFailure{Stack: f.Stack, htmlSpec: htmlSpecOf(f.Spec)})
	}
	for _, n := range r.NotChecked() {
		v.NotChecked = append(v.NotChecked, htmlUnexpected{
			Anchor: htmlAnchor(n.Requirement, n.Stack), Requirement: n.Requirement, Stack: n.Stack, Why: string(n.State),
		})
	}
	if v.HasFloors = r.HasFloors(); v.HasFloors {
		v.FloorIntro, v.FloorFactor = floorIntro, fmt.Sprintf("%.1f×", verdicts.FloorFactor)
		v.FloorsDeclared, v.FloorsAll = floorCounts(r)
		for _, s := range r.OverFloor() {
			v.OverFloor = append(v.OverFloor, htmlFloorRow{Stack: s.Stack, htmlSpec: htmlSpecOf(s.Spec)})
		}
		for _, st := range r.Stacks {
			for _, s := range r.StackSpecs(st.Key) {
				v.AllFloors = append(v.AllFloors, htmlFloorRow{Stack: st.Key, htmlSpec: htmlSpecOf(s)})
			}
		}
	}
	v.Status = htmlStatus(len(v.Unexpected), len(v.Setup))
	if v.OK && !v.Complete {
		v.Status = "INCOMPLETE: nothing unexpected, " + v.Checked
	}
	return v
}

// htmlStatus is the summary line, the first thing a reader looks for.
func htmlStatus(unexpected, setup int) string {
	if unexpected == 0 && setup == 0 {
		return "OK: nothing unexpected"
	}
	var parts []string
	if unexpected > 0 {
		parts = append(parts, htmlPlural(unexpected, "unexpected verdict"))
	}
	if setup > 0 {
		parts = append(parts, htmlPlural(setup, "setup failure"))
	}
	return "FAILED: " + strings.Join(parts, ", ")
}

func htmlPlural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// htmlAnchor is the id of a grid cell, so the list of unexpected verdicts
// can link to it.
func htmlAnchor(req, stack string) string { return "v-" + req + "--" + stack }

func htmlCellOf(req, stack string, v *verdicts.Verdict) htmlCell {
	c := htmlCell{Stack: stack, V: v, Anchor: htmlAnchor(req, stack)}
	if v == nil {
		return c
	}
	c.Slug, c.Symbol, c.Label = htmlSlug(v.State), Symbol(v.State), string(v.State)
	if v.Varies {
		// Counts in the legend's order, over the runs that got to the
		// requirement (Runs may be shorter than the repeat count).
		counts := v.Counts()
		var parts []string
		for _, s := range verdicts.States {
			if counts[s] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d/%d", s, counts[s], len(v.Runs)))
			}
		}
		c.Label = strings.Join(parts, ", ")
	}
	if len(v.Runs) > 1 {
		var runs []string
		for i, s := range v.Runs {
			runs = append(runs, fmt.Sprintf("%d %s", i+1, s))
		}
		c.Runs = strings.Join(runs, " · ")
	}
	if e := v.Expectation; e != nil && len(e.Outcomes) > 0 {
		var o []string
		for _, s := range e.Outcomes {
			o = append(o, string(s))
		}
		c.Outcomes = strings.Join(o, " or ")
	}
	for _, s := range v.Specs {
		c.Specs = append(c.Specs, htmlSpecOf(s))
	}
	return c
}

func htmlSpecOf(s verdicts.Spec) htmlSpec {
	h := htmlSpec{Spec: s, Slug: htmlSlug(s.State), Symbol: Symbol(s.State), Took: roundDuration(s.Duration),
		FloorText: FloorText(s.Floor), Ratio: RatioText(s), FloorParts: FloorParts(s.Floor), Over: s.OverFloor()}
	if s.Dump != "" {
		// A directory link: the trailing slash makes a browser list it.
		h.DumpHref = strings.TrimSuffix(path.Clean(filepath.ToSlash(s.Dump)), "/") + "/"
	}
	return h
}

// roundDuration rounds to what a reader cares about: milliseconds for quick
// specs, tenths of a second up to a minute, then seconds.
func roundDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

var htmlPage = func() *template.Template {
	page := template.Must(template.New("report").Parse(htmlTemplate))
	template.Must(page.New("floors").Parse(htmlFloorsTemplate))
	return page
}()

// htmlFloorsTemplate is a table of specs' time against floor.
const htmlFloorsTemplate = `<table class="floors">
<thead><tr><th>stack</th><th>spec</th><th>run</th><th>state</th><th>took</th><th>floor</th><th>ratio</th><th>the floor's timers</th></tr></thead>
<tbody>
{{- range .}}
<tr{{if .Over}} class="over"{{end}}><td>{{.Stack}}</td><td>{{.Name}}</td><td class="num">{{.Run}}</td><td><span class="chip state-{{.Slug}}"><span class="sym">{{.Symbol}}</span> {{.State}}</span></td><td class="num">{{.Took}}</td><td class="num">{{.FloorText}}</td><td class="num ratio">{{.Ratio}}</td><td>{{.FloorParts}}</td></tr>
{{- end}}
</tbody>
</table>`

const htmlTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>faultline report: {{.Status}}</title>
<style>
body { font: 14px/1.4 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; color: #1d1d1f; margin: 1.5rem; background: #fff; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.15rem; margin: 1.75rem 0 .5rem; border-bottom: 1px solid #ccc; padding-bottom: .2rem; }
h3 { font-size: 1rem; margin: 0 0 .4rem; }
a { color: #0550ae; }
code, pre { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 12px; }
small, .muted { color: #555; }
.summary { font-size: 1.15rem; font-weight: bold; padding: .5rem .8rem; border-radius: 4px; display: inline-block; margin: .25rem 0 .5rem; }
.summary.ok { background: #d3f0d9; color: #0f5323; }
.summary.failed { background: #ffd7d7; color: #8a0010; }
.summary.incomplete { background: #fde2cf; color: #7a3300; }
ul.unexpected-list { margin: .25rem 0 .75rem; padding-left: 1.25rem; }
ul.unexpected-list li { margin: .15rem 0; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: .1rem .8rem; margin: .25rem 0 .5rem; }
dl.facts dt { color: #555; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.stacks { display: flex; flex-wrap: wrap; gap: 1rem; }
.stack { border: 1px solid #ccc; border-radius: 4px; padding: .6rem .8rem; flex: 1 1 28rem; max-width: 60rem; }
table { border-collapse: collapse; }
table.nodes { font-size: 12px; }
table.nodes th, table.nodes td { border: 1px solid #ddd; padding: .15rem .4rem; text-align: left; }
table.nodes th { background: #f3f3f3; }
ul.legend { list-style: none; padding: 0; margin: 0; display: grid; grid-template-columns: max-content auto; gap: .25rem .8rem; align-items: center; }
ul.legend li { display: contents; }
@media (min-width: 80rem) { ul.legend { grid-template-columns: max-content auto max-content auto; } }
.chip { display: inline-block; padding: .05rem .5rem; border-radius: 3px; border: 1px solid rgba(0,0,0,.15); white-space: nowrap; }
.sym { font-weight: bold; display: inline-block; min-width: 1em; text-align: center; }
.marker { display: inline-block; background: #b00020; color: #fff; font-weight: bold; border-radius: 50%; width: 1.2em; height: 1.2em; line-height: 1.2em; text-align: center; font-size: 12px; margin-left: .25rem; }

/* State colours: background for the cell, a darker text of the same hue. */
.state-pass { background: #d3f0d9; color: #0f5323; }
.state-fail { background: #ffc9c9; color: #8a0010; }
.state-known-discrepancy { background: #ffe8a8; color: #6b4a00; }
.state-not-implemented { background: #e4dcf5; color: #46287d; }
.state-inconclusive { background: #fde2cf; color: #7a3300; }
.state-skipped { background: #e9e9e9; color: #444; }
.state-pending { background: #d5ebf7; color: #0b4a6f; }
.not-run { background: repeating-linear-gradient(135deg, #fff 0 5px, #f2f2f2 5px 10px); }
.varies { background-image: repeating-linear-gradient(135deg, transparent 0 7px, rgba(255,255,255,.55) 7px 14px); }
.unexpected { box-shadow: inset 0 0 0 3px #b00020; }

#grid { margin-top: .5rem; }
#grid th, #grid td { border: 1px solid #bbb; padding: .3rem .5rem; vertical-align: top; text-align: left; }
#grid thead th { background: #f3f3f3; position: sticky; top: 0; z-index: 1; min-width: 9rem; }
#grid tr.area th { background: #333; color: #fff; text-transform: uppercase; letter-spacing: .05em; font-size: 12px; }
#grid th.req { font-weight: normal; max-width: 30rem; min-width: 18rem; background: #fafafa; }
#grid th.req .id { font-weight: bold; font-family: "DejaVu Sans Mono", monospace; font-size: 13px; }
#grid th.req small { display: block; }
#grid th.req small.area { display: inline-block; margin-left: .3rem; padding: 0 .35rem; border: 1px solid #ccc; border-radius: 3px; font-size: 11px; }
#grid th.req details.controls { margin-top: .3rem; font-size: 12px; }
#grid th.req details.controls summary { cursor: pointer; color: #0f5323; }
#grid th.req details.controls.none-recorded summary { color: #8a0010; }
#grid th.req details.controls ul { margin: .2rem 0; padding-left: 1.1rem; }
#grid th.req details.controls li { margin: .2rem 0; }
#grid th.req details.controls li.planned { color: #555; }
#grid td.verdict { min-width: 9rem; }
#grid td.verdict summary { cursor: pointer; font-weight: bold; list-style-position: inside; white-space: nowrap; }
#grid td.verdict.varies summary { white-space: normal; }
.detail { width: min(44rem, 70vw); color: #1d1d1f; background: #fff; border: 1px solid #bbb; border-radius: 4px; padding: .5rem .7rem; margin-top: .4rem; font-weight: normal; }
.detail p { margin: .2rem 0 .5rem; }
.detail .why { color: #8a0010; }
ol.specs { padding-left: 1.2rem; margin: .3rem 0; }
ol.specs li { margin: .3rem 0 .6rem; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; max-height: 24rem; overflow: auto; background: #f6f8fa; border: 1px solid #ddd; border-radius: 3px; padding: .4rem .5rem; margin: .3rem 0; }
table.floors { font-size: 12px; margin: .3rem 0 .6rem; }
table.floors th, table.floors td { border: 1px solid #ddd; padding: .15rem .4rem; text-align: left; vertical-align: top; }
table.floors th { background: #f3f3f3; }
table.floors td.num { text-align: right; white-space: nowrap; }
.floor { color: #555; white-space: nowrap; }
.floor.over, table.floors tr.over td.ratio { color: #8a0010; font-weight: bold; }
.setup { border: 1px solid #e0a0a0; border-radius: 4px; padding: .5rem .7rem; margin: .5rem 0; max-width: 60rem; }
</style>
</head>
<body>
<header>
<h1>faultline conformance report</h1>
<p class="summary {{if not .OK}}failed{{else if not .Complete}}incomplete{{else}}ok{{end}}" id="summary">{{.Status}}</p>
{{- if .Unexpected}}
<ul class="unexpected-list">
{{- range .Unexpected}}
<li><a href="#{{.Anchor}}">{{.Requirement}} on {{.Stack}}</a>: {{.Why}}</li>
{{- end}}
</ul>
{{- end}}
{{- if .Setup}}
<p><a href="#setup">Setup failures</a> (below the grid): the verdicts of their stacks may be incomplete.</p>
{{- end}}
{{- if .NotChecked}}
<p>Not checked (skipped or inconclusive: open the cell for why):</p>
<ul class="unexpected-list">
{{- range .NotChecked}}
<li><a href="#{{.Anchor}}">{{.Requirement}} on {{.Stack}}</a>: {{.Why}}</li>
{{- end}}
</ul>
{{- end}}
<dl class="facts">
<dt>checked</dt><dd>{{.Checked}}</dd>
<dt>faultline</dt><dd>{{or .Header.Faultline "unknown"}}</dd>
<dt>date</dt><dd>{{.Date}}</dd>
<dt>label filter</dt><dd>{{with .Header.LabelFilter}}<code>{{.}}</code>{{else}}none{{end}}</dd>
<dt>focus</dt><dd>{{with .Focus}}<code>{{.}}</code>{{else}}none{{end}}</dd>
{{- with .Header.Split}}
<dt>clusters</dt><dd>{{.}}</dd>
{{- end}}
<dt>repeat</dt><dd>{{.Header.Repeat}}</dd>
</dl>
</header>

<section id="stacks">
<h2>What was tested</h2>
<div class="stacks">
{{- range .Stacks}}
<div class="stack" id="stack-{{.Key}}">
<h3>{{.Key}}</h3>
<dl class="facts">
<dt>runtime</dt><dd>{{.Runtime}}{{with .RuntimeVersion}} {{.}}{{end}}</dd>
<dt>Kubernetes</dt><dd>{{or .KubernetesVersion "unknown"}}{{with .Skew}} <strong>({{.}})</strong>{{end}}</dd>
<dt>NRI</dt><dd>{{or .NRIVersion "unknown"}}</dd>
<dt>node image</dt><dd>{{with .NodeImage}}<code>{{.}}</code>{{else}}unknown{{end}}</dd>
<dt>fakes image</dt><dd>{{with .FakesImage}}<code>{{.}}</code>{{else}}unknown{{end}}{{with .FakesImageID}}<br><small><code>{{.}}</code></small>{{end}}</dd>
<dt>framework</dt><dd>{{or .Framework "unknown"}}</dd>
<dt>expectations</dt><dd>{{with .Expectations}}<code>{{.}}</code>{{else}}none: every failure is unexpected{{end}}</dd>
{{- with .FactsSource}}
<dt>facts from</dt><dd>{{.}}</dd>
{{- end}}
</dl>
{{- if .Nodes}}
<table class="nodes">
<thead><tr><th>node</th><th>kubelet</th><th>container runtime</th><th>kernel</th><th>OS image</th><th>arch</th></tr></thead>
<tbody>
{{- range .Nodes}}
<tr><td>{{.Name}}</td><td>{{.KubeletVersion}}</td><td>{{.ContainerRuntime}}</td><td>{{.Kernel}}</td><td>{{.OSImage}}</td><td>{{.Architecture}}</td></tr>
{{- end}}
</tbody>
</table>
{{- end}}
</div>
{{- else}}
<p>No stack: no run was read.</p>
{{- end}}
</div>
</section>

<section id="legend">
<h2>Legend</h2>
<ul class="legend">
{{- range .Legend}}
<li><span class="chip state-{{.Slug}}"><span class="sym">{{.Symbol}}</span> {{.Name}}</span><span>{{.Meaning}}</span></li>
{{- end}}
<li><span class="chip not-run">&nbsp;empty&nbsp;</span><span>not run: no spec of the requirement ran on the stack</span></li>
<li><span class="chip state-known-discrepancy varies">pass 2/3, fail 1/3</span><span>varies: the runs disagree; the colour is the verdict's (the worst run's, a failure the expectations explain as known discrepancy), the text each state's share</span></li>
<li><span class="chip state-fail unexpected"><span class="sym">{{.FailSymbol}}</span> fail<span class="marker">{{.Mark}}</span></span><span>unexpected: this verdict makes the run fail (hover or open the cell for why)</span></li>
</ul>
</section>


<section id="verdicts">
<h2>Verdicts</h2>
<p class="muted">One row per requirement, one column per stack. Open a cell for its specs, messages and failure dumps.</p>
<table id="grid">
<thead><tr><th>requirement</th>{{range .Stacks}}<th class="stack" title="{{.Column}}">{{.Key}}<br><small>{{.Column}}</small></th>{{end}}</tr></thead>
<tbody>
{{- range .Groups}}
<tr class="area"><th colspan="{{$.Columns}}">{{.Area}}</th></tr>
{{- range .Rows}}
<tr class="requirement" data-id="{{.Req.ID}}">
<th class="req" scope="row" title="{{.Req.Title}}"><span class="id">{{.Req.ID}}</span> <small class="area">{{.Req.Area}}</small>
<small>{{.Req.Title}}</small>
{{- if .Req.Link}}
<small><a href="{{.Req.Link}}">{{or .Req.Source "source"}}</a></small>
{{- else if .Req.Source}}
<small>{{.Req.Source}}</small>
{{- end}}
{{- with .Controls}}
<details class="controls{{if not .Recorded}} none-recorded{{end}}"><summary>{{if .Recorded}}controls: {{.Recorded}} recorded{{else}}controls: none recorded yet{{end}}</summary>
<ul>
{{- range .Items}}
<li{{if not .Recorded}} class="planned"{{end}}>{{.Summary}}<br><small>{{.Breaks}}</small>{{with .Needs}}<br><small>needs: {{.}}</small>{{end}}</li>
{{- end}}
</ul>
</details>
{{- end}}</th>
{{- range .Cells}}
{{- $c := .}}
{{- if not .V}}
<td class="not-run" id="{{.Anchor}}" title="not run on {{.Stack}}"></td>
{{- else}}
<td class="verdict state-{{.Slug}}{{if .V.Varies}} varies{{end}}{{if .V.Unexpected}} unexpected{{end}}" id="{{.Anchor}}" data-state="{{.V.State}}"{{if .V.Unexpected}} title="unexpected: {{.V.Unexpected}}"{{end}}>
<details><summary><span class="sym">{{.Symbol}}</span> {{.Label}}{{if .V.Unexpected}}<span class="marker">{{$.Mark}}</span>{{end}}</summary>
<div class="detail">
<p><strong>{{.V.Requirement}}</strong> on <strong>{{.Stack}}</strong>: {{.V.State}}</p>
{{- if .V.Unexpected}}
<p class="why"><strong>Unexpected:</strong> {{.V.Unexpected}}</p>
{{- end}}
{{- with .V.Expectation}}
<p class="expectation"><strong>Expected:</strong> {{.Verdict}}{{with $c.Outcomes}} ({{.}}){{end}}. {{.Reason}}{{with .Reference}} <a href="{{.}}">reference</a>{{end}}{{with .Evidence}}<br><small>Evidence: {{.}}</small>{{end}}</p>
{{- end}}
{{- with .Runs}}
<p><small>Runs: {{.}}</small></p>
{{- end}}
<ol class="specs">
{{- range .Specs}}
<li><span class="chip state-{{.Slug}}"><span class="sym">{{.Symbol}}</span> {{.State}}</span> run {{.Run}}, {{.Took}}{{if .Floor}} <span class="floor{{if .Over}} over{{end}}" title="{{.FloorParts}}">(floor {{.FloorText}}, {{.Ratio}})</span>{{end}}: {{.Name}}{{with .Location}}<br><small><code>{{.}}</code></small>{{end}}
{{- with .Message}}
<pre>{{.}}</pre>
{{- end}}
{{- with .DumpHref}}
<a href="{{.}}">failure dump</a>
{{- end}}
</li>
{{- end}}
</ol>
</div>
</details>
</td>
{{- end}}
{{- end}}
</tr>
{{- end}}
{{- else}}
<tr><td colspan="{{$.Columns}}">No verdicts: no spec ran.</td></tr>
{{- end}}
</tbody>
</table>
</section>

<section id="floors">
<h2>Time against floor</h2>
{{- if not .HasFloors}}
<p>No spec of this run declares its floor (a faultline before floors): how its time compares with the stack's timers is unknown.</p>
{{- else}}
<p class="muted">{{.FloorIntro}}</p>
{{- if .OverFloor}}
<p>Over {{.FloorFactor}} their floor, the slowest first:</p>
{{template "floors" .OverFloor}}
{{- else}}
<p>No spec took over {{.FloorFactor}} its floor.</p>
{{- end}}
<details><summary>Every spec's time and floor ({{.FloorsDeclared}} of {{.FloorsAll}} specs declare one)</summary>
{{template "floors" .AllFloors}}
</details>
{{- end}}
</section>
{{- if .Setup}}
<section id="setup">
<h2>Setup failures</h2>
<p>A suite-level step failed; each one makes the run fail.</p>
{{- range .Setup}}
<div class="setup">
<p><strong>{{.Stack}}</strong>, run {{.Run}}: <span class="chip state-{{.Slug}}"><span class="sym">{{.Symbol}}</span> {{.State}}</span> {{.Name}} <small>({{.Took}})</small>{{with .Location}}<br><small><code>{{.}}</code></small>{{end}}</p>
{{- with .Message}}
<pre>{{.}}</pre>
{{- end}}
{{- with .DumpHref}}
<p><a href="{{.}}">failure dump</a></p>
{{- end}}
</div>
{{- end}}
</section>
{{- end}}
</body>
</html>
`
