package harness

// Failure dumps. With --faultline.dump-dir DIR, every namespace the
// framework dumps after a failed spec (the spec's own, and any other it
// created through the framework) leaves a directory behind:
//
//	DIR/<ns>/pods/<pod>.yaml              each pod of the namespace
//	DIR/<ns>/events.txt                   its events, oldest first
//	DIR/<ns>/pod-logs/<pod>_<container>.log
//	DIR/<ns>/fakes/<fixture-ns>_<pod>_<container>.log
//
// The fakes/ files hold the lines of the fixture pods' logs (the fakes,
// labelled app.kubernetes.io/part-of=faultline) that mention <ns>: the
// fakes log the namespace of the objects they act on. The spec's report gets
// the entry wire.DumpEntry, DIR's base name joined with <ns>: the report
// sits in DIR's parent directory. The framework calls the dump only with
// --dump-logs-on-failure (its default); an empty DIR writes nothing.
//
// Under ginkgo -p each process writes only the directories of its own
// specs' namespaces, which are unique.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/test/e2e/framework"
	"sigs.k8s.io/yaml"

	"github.com/faultline-k8s/faultline/fixtures/cleanup"
	"github.com/faultline-k8s/faultline/vocab/wire"
)

const (
	// dumpTimeout bounds a whole dump, so that a broken API server cannot
	// hang the run.
	dumpTimeout = 60 * time.Second
	// A container log is read from its last logTailLines lines, at most
	// logLimitBytes of them: enough for a spec's time, bounded for a
	// chatty fake.
	logTailLines  = 5000
	logLimitBytes = 2 << 20
)

// installDump adds the dump to every framework; Main calls it.
func installDump() {
	framework.NewFrameworkExtensions = append(framework.NewFrameworkExtensions, addDump)
}

// addDump makes f dump a failed spec's namespaces into --faultline.dump-dir,
// after whatever dump an earlier extension set.
func addDump(f *framework.Framework) {
	before := f.DumpAllNamespaceInfo
	f.DumpAllNamespaceInfo = func(ctx context.Context, f *framework.Framework, ns string) {
		if before != nil {
			before(ctx, f, ns)
		}
		// Read at dump time: the flags are parsed after the init funcs ran.
		if Flags.DumpDir == "" || f.ClientSet == nil {
			return
		}
		ctx, cancel := context.WithTimeout(ctx, dumpTimeout)
		defer cancel()
		out, err := writeDump(ctx, f.ClientSet, ns, Flags.DumpDir)
		if err != nil {
			framework.Logf("faultline: dump of namespace %s is incomplete: %v", ns, err)
		}
		if out == "" {
			return
		}
		framework.Logf("faultline: dump of namespace %s in %s", ns, out)
		// One entry per spec, for its own namespace: the report keeps one
		// dump per spec. Other namespaces' dumps lie next to it.
		if f.Namespace != nil && f.Namespace.Name == ns {
			rel := filepath.ToSlash(filepath.Join(filepath.Base(filepath.Dir(out)), filepath.Base(out)))
			ginkgo.AddReportEntry(wire.DumpEntry, rel, ginkgo.ReportEntryVisibilityNever)
		}
	}
}

// writeDump writes what the cluster shows of namespace ns into dir/<ns>
// (the layout above) and returns that directory, absolute; "" if it could
// not create it. It goes on past errors, returns them joined, and stops
// early when ctx ends.
func writeDump(ctx context.Context, cs clientset.Interface, ns, dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, safeName(ns))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	var errs []error
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		errs = append(errs, fmt.Errorf("list pods: %w", err))
		pods = &v1.PodList{}
	}
	for i := range pods.Items {
		errs = append(errs, writePod(out, &pods.Items[i]))
	}
	errs = append(errs, writeEvents(ctx, cs, ns, out))
	for i := range pods.Items {
		pod := &pods.Items[i]
		for _, c := range startedContainers(pod) {
			if ctx.Err() != nil {
				return out, errors.Join(append(errs, ctx.Err())...)
			}
			lines, err := containerLog(ctx, cs, pod, c)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, writeNonEmpty(filepath.Join(out, "pod-logs", safeName(pod.Name)+"_"+safeName(c)+".log"), lines))
		}
	}
	errs = append(errs, writeFakeLogs(ctx, cs, ns, out))
	return out, errors.Join(errs...)
}

func writePod(out string, pod *v1.Pod) error {
	p := pod.DeepCopy()
	p.ManagedFields = nil // noise in a dump
	p.APIVersion, p.Kind = "v1", "Pod"
	raw, err := yaml.Marshal(p)
	if err != nil {
		return fmt.Errorf("pod %s: %w", pod.Name, err)
	}
	return writeFile(filepath.Join(out, "pods", safeName(pod.Name)+".yaml"), raw)
}

// writeEvents writes events.txt even when there are none: a missing file
// means the events could not be listed.
func writeEvents(ctx context.Context, cs clientset.Interface, ns, out string) error {
	list, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	return writeFile(filepath.Join(out, "events.txt"), []byte(formatEvents(list.Items)))
}

// formatEvents renders events oldest first, one per line.
func formatEvents(events []v1.Event) string {
	events = append([]v1.Event(nil), events...)
	sort.SliceStable(events, func(i, j int) bool {
		ti, tj := eventTime(&events[i]), eventTime(&events[j])
		if !ti.Equal(tj) {
			return ti.Before(tj)
		}
		return events[i].Name < events[j].Name
	})
	var b strings.Builder
	for _, e := range events {
		o := e.InvolvedObject
		// A multi-line message would break the one-event-a-line rule.
		msg := strings.Join(strings.Fields(e.Message), " ")
		fmt.Fprintf(&b, "%s %s %s %s/%s (x%d): %s\n", eventTime(&e).UTC().Format(time.RFC3339Nano),
			e.Type, e.Reason, o.Kind, o.Name, max(e.Count, 1), msg)
	}
	return b.String()
}

// eventTime is when the event last happened; events.k8s.io writers set
// only EventTime (and Series), core writers the timestamps.
func eventTime(e *v1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// writeFakeLogs writes, for each container of the fixture pods in every
// namespace but ns, the log lines that mention ns.
func writeFakeLogs(ctx context.Context, cs clientset.Interface, ns, out string) error {
	fixtures, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: cleanup.PartOfLabel + "=" + cleanup.PartOfValue,
	})
	if err != nil {
		return fmt.Errorf("list fixture pods: %w", err)
	}
	var errs []error
	for i := range fixtures.Items {
		pod := &fixtures.Items[i]
		if pod.Namespace == ns {
			continue // the namespace's own pods have their whole logs in pod-logs/
		}
		for _, c := range startedContainers(pod) {
			if ctx.Err() != nil {
				return errors.Join(append(errs, ctx.Err())...)
			}
			log, err := containerLog(ctx, cs, pod, c)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			name := safeName(pod.Namespace) + "_" + safeName(pod.Name) + "_" + safeName(c) + ".log"
			errs = append(errs, writeNonEmpty(filepath.Join(out, "fakes", name), linesMentioning(log, ns)))
		}
	}
	return errors.Join(errs...)
}

// startedContainers lists pod's containers (init containers first) that
// have run at least once: the others have no log to ask for.
func startedContainers(pod *v1.Pod) []string {
	started := map[string]bool{}
	for _, statuses := range [][]v1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for _, s := range statuses {
			if s.State.Running != nil || s.State.Terminated != nil || s.LastTerminationState.Terminated != nil {
				started[s.Name] = true
			}
		}
	}
	var names []string
	for _, containers := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			if started[c.Name] {
				names = append(names, c.Name)
			}
		}
	}
	return names
}

// containerLog reads the tail of a container's current log, bounded
// (logTailLines, logLimitBytes), also when the server ignores the bounds.
func containerLog(ctx context.Context, cs clientset.Interface, pod *v1.Pod, container string) ([]byte, error) {
	tail, limit := int64(logTailLines), int64(logLimitBytes)
	rc, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &v1.PodLogOptions{
		Container: container, TailLines: &tail, LimitBytes: &limit,
	}).Stream(ctx)
	if err != nil {
		return nil, fmt.Errorf("log of %s/%s %s: %w", pod.Namespace, pod.Name, container, err)
	}
	defer rc.Close()
	raw, err := io.ReadAll(io.LimitReader(rc, limit))
	if err != nil {
		return raw, fmt.Errorf("log of %s/%s %s: %w", pod.Namespace, pod.Name, container, err)
	}
	return raw, nil
}

// linesMentioning keeps the lines of log that contain ns as a whole name:
// namespace "dra-12" is not mentioned by "dra-123".
func linesMentioning(log []byte, ns string) []byte {
	var b strings.Builder
	for _, line := range strings.SplitAfter(string(log), "\n") {
		if mentions(line, ns) {
			b.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	return []byte(b.String())
}

func mentions(line, name string) bool {
	if name == "" {
		return false
	}
	for from := 0; ; {
		i := strings.Index(line[from:], name)
		if i < 0 {
			return false
		}
		start, end := from+i, from+i+len(name)
		if (start == 0 || !nameChar(line[start-1])) && (end == len(line) || !nameChar(line[end])) {
			return true
		}
		from = start + 1
	}
}

// nameChar reports whether c may be part of a namespace name (a DNS label).
func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// safeName makes s one path element: no separators, never "." or "..".
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 128 && (nameChar(byte(r)) || r == '.' || r == '_') {
			return r
		}
		return '_'
	}, s)
	if strings.Trim(s, ".") == "" {
		return "_" + s
	}
	return s
}

func writeNonEmpty(path string, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	return writeFile(path, data)
}

func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
