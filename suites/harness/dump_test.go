package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/faultline-k8s/faultline/fixtures/cleanup"
)

// pod returns a pod whose containers have started, except those in waiting.
func pod(ns, name string, labels map[string]string, containers []string, waiting ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "noise"}}}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c, Image: "img"})
		state := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
		for _, w := range waiting {
			if w == c {
				state = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
			}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, v1.ContainerStatus{Name: c, State: state})
	}
	return p
}

func event(ns, name string, at time.Time, reason, msg string) *v1.Event {
	return &v1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "a"}, Type: v1.EventTypeNormal,
		Reason: reason, Message: msg, Count: 2, LastTimestamp: metav1.NewTime(at)}
}

// logsFrom answers log requests by namespace and container (the fake's log
// action names no pod), and records which were asked for.
type logsFrom struct {
	mu     sync.Mutex
	logs   map[string]string // "<ns>/<container>"
	asked  []string
	bounds []*v1.PodLogOptions
}

func (l *logsFrom) react(action k8stesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "log" {
		return false, nil, nil
	}
	opts := action.(k8stesting.GenericAction).GetValue().(*v1.PodLogOptions)
	key := action.GetNamespace() + "/" + opts.Container
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, key)
	l.bounds = append(l.bounds, opts)
	return true, &runtime.Unknown{Raw: []byte(l.logs[key])}, nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// files lists the files under dir, relative, sorted.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() && info.Mode().Perm()&^0o755 != 0 || !d.IsDir() && info.Mode().Perm()&^0o644 != 0 {
			t.Errorf("%s: mode %v", path, info.Mode())
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func TestWriteDump(t *testing.T) {
	const ns = "spec-12"
	partOf := map[string]string{cleanup.PartOfLabel: cleanup.PartOfValue}
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cs := fake.NewClientset(
		pod(ns, "a", nil, []string{"main"}),
		pod(ns, "b", nil, []string{"main", "side"}, "side"),
		pod("faultline-dra", "driver-x", partOf, []string{"driver", "registrar"}),
		pod("faultline-nri", "plugin-y", partOf, []string{"plugin"}),
		pod("elsewhere", "unlabelled", nil, []string{"main"}),
		pod("spec-123", "other-spec", nil, []string{"main"}),
		event(ns, "late", t0.Add(time.Minute), "Started", "started\ncontainer  main"),
		event(ns, "early", t0, "Scheduled", "assigned"),
		event("spec-123", "not-mine", t0, "Scheduled", "elsewhere"),
	)
	logs := &logsFrom{logs: map[string]string{
		ns + "/main": "hello from the spec\n",
		"faultline-dra/driver": "prepare claim spec-12/c1\n" +
			"prepare claim spec-123/c1\n" +
			"unrelated\n" +
			"unprepare ns=spec-12 done",
		"faultline-dra/registrar": "registered\n",
		"faultline-nri/plugin":    "spec-123 only\n",
	}}
	cs.PrependReactor("get", "pods", logs.react)

	dir := t.TempDir()
	out, err := writeDump(context.Background(), cs, ns, filepath.Join(dir, "dumps"))
	if err != nil {
		t.Fatalf("writeDump: %v", err)
	}
	if want := filepath.Join(dir, "dumps", ns); out != want {
		t.Errorf("writeDump returned %s, want %s", out, want)
	}

	want := []string{
		"events.txt",
		"fakes/faultline-dra_driver-x_driver.log",
		"pod-logs/a_main.log",
		"pod-logs/b_main.log",
		"pods/a.yaml",
		"pods/b.yaml",
	}
	if got := files(t, out); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files:\n got %v\nwant %v", got, want)
	}

	a := readFile(t, filepath.Join(out, "pods/a.yaml"))
	for _, s := range []string{"kind: Pod", "apiVersion: v1", "name: a", "namespace: spec-12"} {
		if !strings.Contains(a, s) {
			t.Errorf("pods/a.yaml lacks %q:\n%s", s, a)
		}
	}
	if strings.Contains(a, "managedFields") {
		t.Errorf("pods/a.yaml has managedFields:\n%s", a)
	}

	wantEvents := "2025-01-02T03:04:05Z Normal Scheduled Pod/a (x2): assigned\n" +
		"2025-01-02T03:05:05Z Normal Started Pod/a (x2): started container main\n"
	if got := readFile(t, filepath.Join(out, "events.txt")); got != wantEvents {
		t.Errorf("events.txt:\n%s\nwant:\n%s", got, wantEvents)
	}

	wantFake := "prepare claim spec-12/c1\nunprepare ns=spec-12 done\n"
	if got := readFile(t, filepath.Join(out, "fakes/faultline-dra_driver-x_driver.log")); got != wantFake {
		t.Errorf("fake log:\n%s\nwant:\n%s", got, wantFake)
	}
	if got := readFile(t, filepath.Join(out, "pod-logs/a_main.log")); got != "hello from the spec\n" {
		t.Errorf("pod log: %q", got)
	}

	for _, key := range logs.asked {
		if key == ns+"/side" || strings.HasPrefix(key, "elsewhere/") || strings.HasPrefix(key, "spec-123/") {
			t.Errorf("asked for the log of %s", key)
		}
	}
	for _, o := range logs.bounds {
		if o.TailLines == nil || *o.TailLines != logTailLines || o.LimitBytes == nil || *o.LimitBytes != logLimitBytes || o.Previous {
			t.Errorf("unbounded log request %+v", o)
		}
	}
}

func TestWriteDumpSanitizesNames(t *testing.T) {
	const ns = "../up"
	cs := fake.NewClientset(
		pod(ns, "../../etc/x", nil, []string{"c/d"}),
		pod("fix/ture", "..", map[string]string{cleanup.PartOfLabel: cleanup.PartOfValue}, []string{".."}),
	)
	cs.PrependReactor("get", "pods", (&logsFrom{logs: map[string]string{
		ns + "/c/d":   "x\n",
		"fix/ture/..": "about ../up\n",
	}}).react)

	dir := filepath.Join(t.TempDir(), "dumps")
	out, err := writeDump(context.Background(), cs, ns, dir)
	if err != nil {
		t.Fatalf("writeDump: %v", err)
	}
	if filepath.Dir(out) != dir {
		t.Fatalf("dump went to %s, not into %s", out, dir)
	}
	want := []string{
		"events.txt",
		"fakes/fix_ture__..__...log",
		"pod-logs/.._.._etc_x_c_d.log",
		"pods/.._.._etc_x.yaml",
	}
	if got := files(t, out); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("files:\n got %v\nwant %v", got, want)
	}
	if base := filepath.Base(out); base != ".._up" {
		t.Errorf("namespace directory %q", base)
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"dra-1.x_y": "dra-1.x_y",
		"a/b":       "a_b",
		`a\b`:       "a_b",
		"..":        "_..",
		".":         "_.",
		"":          "_",
		"ü b":       "__b",
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLinesMentioning(t *testing.T) {
	log := "a spec-1 b\nspec-12\nxspec-1\nspec-1/pod\nns=spec-1\nspec-1"
	if got, want := string(linesMentioning([]byte(log), "spec-1")), "a spec-1 b\nspec-1/pod\nns=spec-1\nspec-1\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := linesMentioning([]byte("fake logs"), "spec-1"); len(got) != 0 {
		t.Errorf("got %q, want nothing", got)
	}
}

func TestFormatEventsOrder(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(name string, set func(e *v1.Event)) v1.Event {
		e := v1.Event{ObjectMeta: metav1.ObjectMeta{Name: name}, Reason: name}
		set(&e)
		return e
	}
	events := []v1.Event{
		at("series", func(e *v1.Event) {
			e.EventTime = metav1.NewMicroTime(t0)
			e.Series = &v1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(t0.Add(4 * time.Second))}
		}),
		at("last", func(e *v1.Event) { e.LastTimestamp = metav1.NewTime(t0.Add(3 * time.Second)) }),
		at("eventtime", func(e *v1.Event) { e.EventTime = metav1.NewMicroTime(t0.Add(2 * time.Second)) }),
		at("first", func(e *v1.Event) { e.FirstTimestamp = metav1.NewTime(t0.Add(time.Second)) }),
		at("created", func(e *v1.Event) { e.CreationTimestamp = metav1.NewTime(t0) }),
	}
	var reasons []string
	for _, line := range strings.Split(strings.TrimSpace(formatEvents(events)), "\n") {
		reasons = append(reasons, strings.Fields(line)[1])
	}
	if got, want := strings.Join(reasons, " "), "created first eventtime last series"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// A slow API server: the dump stops when its context ends, with what it has.
func TestWriteDumpIsBounded(t *testing.T) {
	const ns = "slow"
	var objs []runtime.Object
	for _, name := range []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"} {
		objs = append(objs, pod(ns, name, nil, []string{"a", "b", "c"}))
	}
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("get", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		time.Sleep(50 * time.Millisecond) // 30 logs: 1.5 s unbounded
		return false, nil, nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	out, err := writeDump(ctx, cs, ns, t.TempDir())
	if took := time.Since(start); took > time.Second {
		t.Errorf("writeDump took %s with a 200ms bound", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("writeDump: %v, want the deadline", err)
	}
	if _, statErr := os.Stat(filepath.Join(out, "pods", "p9.yaml")); statErr != nil {
		t.Errorf("what was dumped before the deadline is gone: %v", statErr)
	}
}

func TestWriteDumpGoesOnPastErrors(t *testing.T) {
	cs := fake.NewClientset(pod("ns", "a", nil, []string{"main"}))
	cs.PrependReactor("list", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("events are down")
	})
	out, err := writeDump(context.Background(), cs, "ns", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "events are down") {
		t.Errorf("writeDump: %v, want the events' error", err)
	}
	if got, want := strings.Join(files(t, out), " "), "pod-logs/a_main.log pods/a.yaml"; got != want {
		t.Errorf("files %s, want %s", got, want)
	}
}
