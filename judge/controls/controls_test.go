package controls

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/faultline-k8s/faultline/judge/expectations"
	"github.com/faultline-k8s/faultline/judge/requirements"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/judge/verdicts/verdictstest"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// TestControlsCoverCatalogue: every requirement of the catalogue has an
// entry, in the catalogue's order, and every entry names one; a requirement
// with no recorded control names the control planned. A requirement without
// a recorded control is the honest state of a control not built yet: the
// test lists them, and fails only for a requirement with no entry at all.
func TestControlsCoverCatalogue(t *testing.T) {
	for _, id := range Missing() {
		t.Errorf("%s has no entry in judge/controls/controls.yaml: name its controls, or the control planned (recording: %s)", id, NoneRecorded)
	}
	var order []string
	for _, r := range requirements.All() {
		order = append(order, r.ID)
	}
	var got []string
	for _, e := range All() {
		if !slices.Contains(order, e.Requirement) {
			t.Errorf("entry %s names no requirement of the catalogue", e.Requirement)
			continue
		}
		got = append(got, e.Requirement)
	}
	if want := requirements.Sorted(got); !slices.Equal(got, want) {
		t.Errorf("entries out of the catalogue's order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var none []string
	recorded := 0
	for _, e := range All() {
		if len(e.Recorded()) > 0 {
			recorded++
			continue
		}
		none = append(none, e.Requirement)
		planned := 0
		for _, c := range e.Controls {
			if !c.IsRecorded() && (c.Kind == Mutant || c.Kind == FakeMode) && (c.Patch != "" || c.Mode != "") {
				planned++
			}
		}
		if planned == 0 && e.NoHonestControl == "" {
			t.Errorf("%s: no control recorded, none planned (a mutant's patch or a fake's mode), and no word on why there is no honest one", e.Requirement)
		}
	}
	t.Logf("%d of %d requirements have a recorded red control; none recorded yet for %d:\n  %s",
		recorded, len(requirements.All()), len(none), strings.Join(none, "\n  "))
}

// TestControlsRecordedRed: every recorded control's run, judged by the
// built-in expectations, gives its requirement a red verdict (fail, or a
// known discrepancy: the spec said fail) on the control's stack, with a
// failed spec of the named cause; a mutant's or fake mode's run leaves every
// other requirement its verdict in the base run.
func TestControlsRecordedRed(t *testing.T) {
	x, err := expectations.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range All() {
		for _, c := range e.Recorded() {
			n++
			name := e.Requirement + " on " + c.Stack + " (" + c.Recording + ")"
			t.Run(name, func(t *testing.T) {
				run, native := readRecording(t, c.Recording)
				if !native {
					t.Logf("%s predates causes: its failures have the causes their messages' former patterns stand for (judge/verdicts/verdictstest)", c.Recording)
				}
				if racedWhenRecorded(c.Recording, native, e.Requirement) {
					t.Errorf("%s's verdict in %s came from a race the suite no longer leaves open: no control of today's spec", e.Requirement, c.Recording)
				}
				if run.Stack.Key != c.Stack {
					t.Errorf("%s is a run of stack %s, not %s", c.Recording, run.Stack.Key, c.Stack)
				}
				if c.Kubernetes != "" && run.Stack.KubernetesVersion != c.Kubernetes {
					t.Errorf("%s ran Kubernetes %s, not %s", c.Recording, run.Stack.KubernetesVersion, c.Kubernetes)
				}
				if c.Patch != "" {
					if _, err := os.Stat(filepath.Join(repoRoot, c.Patch)); err != nil {
						t.Errorf("the mutant's patch: %v", err)
					}
				}
				var base *verdicts.Run
				if c.Kind != Recorded {
					b, _ := readRecording(t, c.Base)
					if !strings.HasPrefix(c.Stack, b.Stack.Key+"+") {
						t.Errorf("base %s is a run of %s, which %s does not vary", c.Base, b.Stack.Key, c.Stack)
					}
					base = &b
				}
				for _, p := range Judge(c, e.Requirement, run, base, x) {
					t.Error(p)
				}
			})
		}
	}
	if n == 0 {
		t.Error("no recorded control")
	}
}

// readRecording reads a run of judge/verdicts/testdata as the recorded
// tests of judge/verdicts do: a run whose specs recorded their causes
// (native) as it is; one from before causes as today's specs would have
// ended it, each failure given the cause its spec would name today.
func readRecording(t *testing.T, name string) (verdicts.Run, bool) {
	t.Helper()
	reports, err := verdicts.ReadGinkgoReports(filepath.Join(repoRoot, RecordingPath(name)))
	if err != nil {
		t.Fatal(err)
	}
	native := recordsCauses(reports)
	if !native {
		verdictstest.AsToday(reports, wire.NotImplementedPrefix)
		verdictstest.WithRecordedCauses(reports, wire.CauseEntry, verdicts.CauseMarkEntry)
	}
	run, err := verdicts.FromGinkgo(reports, 1, "")
	if err != nil {
		t.Fatal(err)
	}
	return run, native
}

// recordsCauses says whether a run's specs recorded their causes
// (harness.Cause marks every check, failed or not).
func recordsCauses(reports []types.Report) bool {
	for _, r := range reports {
		for _, sr := range r.SpecReports {
			for _, e := range sr.ReportEntries {
				if e.Name == wire.CauseEntry {
					return true
				}
			}
		}
	}
	return false
}

// racedWhenRecorded says whether a CRI cache requirement's verdict in a
// recording came from a race the suite no longer leaves open: the runs
// before causes, and full8-* (before the CRI specs fixed their
// interleavings; judge/verdicts racedWhenRecorded).
func racedWhenRecorded(recording string, native bool, requirement string) bool {
	cache := strings.HasPrefix(requirement, "CRI-SANDBOX-") || strings.HasPrefix(requirement, "CRI-CONTAINER-")
	return cache && (!native || strings.HasPrefix(recording, "full8-"))
}

// TestControlsImprecise: a mutant that changes its requirement's verdict
// alone is precise; one that changes another's is not, unless the base
// stack's expectations say that verdict varies.
func TestControlsimprecise(t *testing.T) {
	x, err := expectations.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	base, _ := readRecording(t, "full10-137-containerd")
	mutate := func(ids ...string) verdicts.Run {
		m := base
		m.Stack.Key += "+mutant-test"
		m.Specs = slices.Clone(base.Specs)
		for i, s := range m.Specs {
			if len(s.Requirements) == 1 && slices.Contains(ids, s.Requirements[0]) {
				r, _ := requirements.Lookup(s.Requirements[0])
				m.Specs[i].State, m.Specs[i].Cause, m.Specs[i].Message = verdicts.Fail, r.Causes[0].ID, "mutated"
			}
		}
		return m
	}
	if d := Imprecise(mutate("DRA-TRANSIENT-RETRIED"), base, []string{"DRA-TRANSIENT-RETRIED"}, x); len(d) != 0 {
		t.Errorf("one requirement mutated: %v", d)
	}
	if d := Imprecise(mutate("DRA-TRANSIENT-RETRIED", "NRI-ERROR-STOPS-CHAIN"), base, []string{"DRA-TRANSIENT-RETRIED", "NRI-ERROR-STOPS-CHAIN"}, x); len(d) != 0 {
		t.Errorf("a change the control declares (alsoChanges) is no imprecision: %v", d)
	}
	d := Imprecise(mutate("DRA-TRANSIENT-RETRIED", "NRI-ERROR-STOPS-CHAIN"), base, []string{"DRA-TRANSIENT-RETRIED"}, x)
	if len(d) != 1 || !strings.HasPrefix(d[0], "NRI-ERROR-STOPS-CHAIN: fail on containerd-1.37+mutant-test, pass on containerd-1.37") {
		t.Errorf("two requirements mutated: %v", d)
	}
	// containerd-1.36 expects NRI-SYNC-ERROR-FAILS-REQUEST to vary
	// between pass and fail: a mutant's failure there is no imprecision.
	cd136, _ := readRecording(t, "full10-136-containerd")
	m := cd136
	m.Stack.Key += "+mutant-test"
	m.Specs = slices.Clone(cd136.Specs)
	for i, s := range m.Specs {
		if slices.Contains(s.Requirements, "NRI-SYNC-ERROR-FAILS-REQUEST") {
			m.Specs[i].State, m.Specs[i].Cause = verdicts.Fail, "leftover-sandbox"
			break
		}
	}
	if d := Imprecise(m, cd136, []string{"DRA-TRANSIENT-RETRIED"}, x); len(d) != 0 {
		t.Errorf("a verdict the base expects to vary: %v", d)
	}
}

// TestControlsParse: the file is read strictly, and each control says what
// its kind needs.
func TestControlsParse(t *testing.T) {
	const good = `requirements:
- id: DRA-TRANSIENT-RETRIED
  controls:
  - kind: mutant
    stack: containerd-1.37+mutant-x
    patch: clusters/patches/mutant-x/0001-kubelet-x.patch
    patchOf: kubernetes
    recording: none recorded yet
    cause: started-unprepared
    breaks: b
- id: DRA-DEADLINE-ERROR-NAMED
  controls:
  - kind: recorded
    stack: containerd-1.37
    kubernetes: v1.37.2
    recording: full10-137-containerd
    cause: driver-not-named
    breaks: b
`
	if _, err := Parse([]byte(good)); err != nil {
		t.Fatalf("good file: %v", err)
	}
	control := func(fields string) string {
		return "requirements:\n- id: DRA-TRANSIENT-RETRIED\n  controls:\n  - " + strings.ReplaceAll(strings.TrimSpace(fields), "\n", "\n    ") + "\n"
	}
	planned := "kind: mutant\nstack: containerd-1.37+mutant-x\npatch: clusters/patches/mutant-x/0001-kubelet-x.patch\npatchOf: kubernetes\nrecording: none recorded yet\ncause: started-unprepared\nbreaks: b\n"
	recorded := "kind: recorded\nstack: containerd-1.37\nrecording: full10-137-containerd\ncause: started-unprepared\nbreaks: b\n"
	fakeMode := func(mode, variant string) string {
		return "kind: fake-mode\nstack: containerd-1.37" + variant + "\nmode: " + mode + "\nrecording: none recorded yet\ncause: started-unprepared\nbreaks: b\n"
	}
	for name, c := range map[string]struct{ file, want string }{
		"unknown field":        {control(planned + "reason: r"), "unknown field"},
		"unknown requirement":  {strings.Replace(control(planned), "DRA-TRANSIENT-RETRIED", "DRA-NOPE", 1), "not a requirement"},
		"twice":                {control(planned) + strings.TrimPrefix(control(planned), "requirements:\n"), "named twice"},
		"no controls":          {"requirements:\n- id: DRA-TRANSIENT-RETRIED\n  controls: []\n", "no controls"},
		"kind":                 {control(strings.Replace(planned, "kind: mutant", "kind: guess", 1)), `kind "guess"`},
		"runtime":              {control(strings.Replace(planned, "stack: containerd", "stack: cri-o", 1)), `runtime "cri-o"`},
		"minor":                {control(strings.Replace(planned, "1.37", "137", 1)), "Kubernetes minor"},
		"release of the minor": {control(recorded + "kubernetes: v1.36.3"), "no release of the stack's minor 1.37"},
		"release":              {control(recorded + "kubernetes: latest"), `kubernetes "latest"`},
		"undeclared cause":     {control(strings.Replace(planned, "started-unprepared", "abandoned", 1)), `cause "abandoned" is not one DRA-TRANSIENT-RETRIED declares`},
		"harness":              {control(strings.Replace(planned, "started-unprepared", "harness", 1)), "faultline's own failure"},
		"no cause":             {control(strings.Replace(planned, "cause: started-unprepared\n", "", 1)), "no cause"},
		"no breaks":            {control(strings.Replace(planned, "breaks: b\n", "", 1)), "breaks is required"},
		"recorded unrecorded":  {control(strings.Replace(recorded, "full10-137-containerd", "none recorded yet", 1)), "a recorded control names its recording"},
		"recording name":       {control(strings.Replace(recorded, "full10-137-containerd", "testdata/x.json.gz", 1)), "want a file of judge/verdicts/testdata"},
		"recorded with patch":  {control(recorded + "patch: clusters/patches/x/0001-x.patch"), "patch, mode and base are for mutants"},
		"mutant no variant":    {control(strings.Replace(planned, "+mutant-x", "", 1)), "a mutant's stack names its variant"},
		"mutant no patch":      {control(strings.Replace(planned, "patch: clusters/patches/mutant-x/0001-kubelet-x.patch\n", "", 1)), "want clusters/patches/<series>"},
		"series not variant":   {control(strings.Replace(planned, "+mutant-x", "+mutant-y", 1)), "patch series mutant-x is not in the stack's variant"},
		"mutant with mode":     {control(planned + `mode: dra-first-device-only`), "mode is for fake modes"},
		"unknown fake mode":    {control(fakeMode("dra misbehaves", "+fake-dra-first-device-only")), `mode: fake mode "dra misbehaves": want one of`},
		"fake mode no variant": {control(fakeMode("dra-first-device-only", "+mutant-x")), "fake mode dra-first-device-only is not in the stack's variant"},
		"fake mode with patch": {control(strings.Replace(planned, "kind: mutant", "kind: fake-mode", 1) + `mode: dra-first-device-only`), "patch and patchOf are for mutants"},
		"also changes itself":  {control(planned + "alsoChanges: [DRA-TRANSIENT-RETRIED]"), "want another requirement"},
		"also changes nothing": {control(planned + "alsoChanges: [DRA-NOPE]"), "want another requirement"},
		"patch of what":        {control(strings.Replace(planned, "patchOf: kubernetes", "patchOf: kubelet", 1)), `patchOf "kubelet"`},
		"planned base":         {control(planned + "base: full10-137-containerd"), "base is for a recorded mutant"},
		"recorded mutant base": {control(strings.Replace(planned, "none recorded yet", "mutant-x-containerd", 1)), "names the recording of the stack it mutates"},
		"needs when recorded":  {control(recorded + "needs: n"), "needs is for a planned control"},
	} {
		if _, err := Parse([]byte(c.file)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q\n%s", name, err, c.want, c.file)
		}
	}
}

// TestControlsSummary: a control reads on one line, saying whether a run of
// it is recorded.
func TestControlsSummary(t *testing.T) {
	for _, c := range []struct {
		c    Control
		want string
	}{
		{Control{Kind: Recorded, Stack: "containerd-1.36", Kubernetes: "v1.36.3", Recording: "cdi1363-containerd", Cause: "device-twice"},
			"recorded: red on containerd-1.36 (v1.36.3) in cdi1363-containerd, cause device-twice"},
		{Control{Kind: Mutant, Stack: "containerd-1.37+mutant-x", Patch: "clusters/patches/mutant-x/0001-x.patch", Recording: NoneRecorded, Cause: "not-evicted"},
			"mutant (planned) on containerd-1.37+mutant-x, patch clusters/patches/mutant-x/0001-x.patch, cause not-evicted: none recorded yet"},
	} {
		if got := c.c.Summary(); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

// TestControlsPatchesThere: every mutant's patch is in clusters/patches,
// and every mutant series there is some control's: a patch nothing names
// is a control nobody runs.
func TestControlsPatchesThere(t *testing.T) {
	named := map[string]bool{}
	for _, e := range All() {
		for _, c := range e.Controls {
			if c.Patch == "" {
				continue
			}
			named[filepath.Dir(c.Patch)] = true
			if _, err := os.Stat(filepath.Join(repoRoot, c.Patch)); err != nil {
				t.Errorf("%s: the mutant's patch: %v", e.Requirement, err)
			}
		}
	}
	series, err := filepath.Glob(filepath.Join(repoRoot, "clusters", "patches", "mutant-*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range series {
		rel, err := filepath.Rel(repoRoot, dir)
		if err != nil {
			t.Fatal(err)
		}
		if !named[rel] {
			t.Errorf("%s: a mutant series no control of controls.yaml names", rel)
		}
	}
}

// TestControlsE2EArgs: a mutant's stack says how faultline e2e builds it:
// its runtime and release, a release its variant names, base series before
// the mutant's own, each with the option of the component it patches; and
// every mutant of the file has arguments.
func TestControlsE2EArgs(t *testing.T) {
	for _, tc := range []struct {
		c    Control
		area string
		want string
	}{
		{Control{Kind: Mutant, Stack: "containerd-1.37+mutant-dra-taint-no-evict", PatchOf: "kubernetes",
			Patch: "clusters/patches/mutant-dra-taint-no-evict/0001-kube-controller-manager-ignore-noexecute-device-taints.patch"}, "dra",
			"--runtime containerd --kubernetes-version v1.37.2 --suite dra --kubernetes-patch ../../clusters/patches/mutant-dra-taint-no-evict/0001-kube-controller-manager-ignore-noexecute-device-taints.patch"},
		{Control{Kind: Mutant, Stack: "containerd-1.37+nri-v0.12.5+mutant-nri-ignore-fail-request", PatchOf: "nri",
			Patch: "clusters/patches/mutant-nri-ignore-fail-request/0001-nri-ignore-fail-request-policy.patch"}, "nri",
			"--runtime containerd --kubernetes-version v1.37.2 --suite nri --nri-version v0.12.5 --nri-patch ../../clusters/patches/mutant-nri-ignore-fail-request/0001-nri-ignore-fail-request-policy.patch"},
		{Control{Kind: FakeMode, Stack: "containerd-1.37+fake-dra-first-device-only", Mode: "dra-first-device-only"}, "dra",
			"--runtime containerd --kubernetes-version v1.37.2 --suite dra --fake-mode dra-first-device-only"},
		{Control{Kind: Mutant, Stack: "crio-1.37+crio-keep-timed-out-sandbox+mutant-crio-status-unclaimed-sandbox", PatchOf: "crio",
			Patch: "clusters/patches/mutant-crio-status-unclaimed-sandbox/0001-crio-status-answers-held-sandbox.patch"}, "cri",
			"--runtime crio --kubernetes-version v1.37.2 --suite cri --crio-patch ../../clusters/patches/crio-keep-timed-out-sandbox/0001-crio-keep-timed-out-sandbox.patch --crio-patch ../../clusters/patches/mutant-crio-status-unclaimed-sandbox/0001-crio-status-answers-held-sandbox.patch"},
	} {
		args, err := tc.c.E2EArgs(repoRoot, tc.area)
		if got := strings.Join(args, " "); err != nil || got != tc.want {
			t.Errorf("%s: %q, %v\nwant %q", tc.c.Stack, got, err, tc.want)
		}
	}
	for _, e := range All() {
		req, _ := requirements.Lookup(e.Requirement)
		for _, c := range e.Controls {
			if c.Kind == Recorded {
				continue
			}
			if _, err := c.E2EArgs(repoRoot, req.Area); err != nil {
				t.Errorf("%s on %s: %v", e.Requirement, c.Stack, err)
			}
		}
	}
	if _, err := (Control{Kind: Recorded, Stack: "containerd-1.37"}).E2EArgs(repoRoot, "dra"); err == nil {
		t.Error("a recorded control has no build of faultline's")
	}
	if _, err := (Control{Kind: FakeMode, Stack: "containerd-1.37+kep-5322+fake-dra-first-device-only", Mode: "dra-first-device-only"}).E2EArgs(repoRoot, "dra"); err == nil {
		t.Error("a fake mode's stack with a patch series: nothing says which component it patches")
	}
}
