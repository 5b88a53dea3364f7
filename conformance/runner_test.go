package conformance

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"github.com/faultline-k8s/faultline/vocab/wire"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/faultline-k8s/faultline/internal/imageref"
	"github.com/faultline-k8s/faultline/judge/verdicts"
	"github.com/faultline-k8s/faultline/judge/verdicts/verdictstest"
)

func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"FAULTLINE_FAKES_IMAGE": "fakes:1", "E2E_FOCUS": "transient", "E2E_PARALLEL": "3", "E2E_EXTRA_ARGS": "--a 1", "E2E_EXTRA_GINKGO_ARGS": "--v"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ResultsDir != "/tmp/results" || c.Procs != 3 || c.LabelFilter != DefaultLabelFilter {
		t.Errorf("%+v", c)
	}
	args := strings.Join(c.GinkgoRun().Args(), " ")
	for _, want := range []string{"--procs 3", "--focus transient", "--label-filter !Disruptive", "--junit-report junit_01.xml", "--v /usr/local/bin/faultline.test --", "--faultline.fakes-image fakes:1", "--faultline.dump-dir /tmp/results/dumps --a 1"} {
		if !strings.Contains(args, want) {
			t.Errorf("ginkgo args %q lack %q", args, want)
		}
	}
	c, _ = FromEnv(env(map[string]string{"FAULTLINE_FAKES_IMAGE": "f", "E2E_PARALLEL": "false", "E2E_LABEL_FILTER": ""}))
	if c.Procs != 1 || strings.Contains(strings.Join(c.GinkgoRun().Args(), " "), "--label-filter") {
		t.Errorf("%+v", c)
	}
	for name, kv := range map[string]map[string]string{
		"empty fakes image": {"FAULTLINE_FAKES_IMAGE": ""},
		"bad parallel":      {"FAULTLINE_FAKES_IMAGE": "f", "E2E_PARALLEL": "lots"},
		"zero parallel":     {"FAULTLINE_FAKES_IMAGE": "f", "E2E_PARALLEL": "0"},
	} {
		if _, err := FromEnv(env(kv)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestFakesImageByVersion(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"FAULTLINE_IMAGE_REGISTRY": "registry.example:5000/ci"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := imageref.Fakes("registry.example:5000/ci"); c.FakesImage != want {
		t.Errorf("fakes image %q, want %q", c.FakesImage, want)
	}
	if c, _ := FromEnv(env(nil)); c.FakesImage != imageref.Fakes("") {
		t.Errorf("without a registry: fakes image %q, want the default registry's", c.FakesImage)
	}
}

// fakeGinkgo is a script standing in for ginkgo: it copies a recorded
// Ginkgo report into the output directory (or writes none) and exits.
func fakeGinkgo(t *testing.T, report string, exit int) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\necho ginkgo ran \"$@\"\n"
	if report != "" {
		script += "while [ \"$1\" != --output-dir ]; do shift; done\ncp " + report + " \"$2\"/ginkgo.json\n"
	}
	script += "exit " + string(rune('0'+exit)) + "\n"
	p := filepath.Join(dir, "ginkgo")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// recordedReport is a recorded full run's Ginkgo report as today's specs
// would have written it (judge/verdicts/verdictstest; a recording as recent as
// full9, with the CRI specs' fixed interleavings, is read as it is).
func recordedReport(t *testing.T, name string) string {
	t.Helper()
	reports, err := verdicts.ReadGinkgoReports("../judge/verdicts/testdata/" + name + ".json.gz")
	if err != nil {
		t.Fatal(err)
	}
	verdictstest.AsToday(reports, wire.NotImplementedPrefix)
	verdictstest.WithRecordedCauses(reports, wire.CauseEntry, verdicts.CauseMarkEntry)
	data, err := json.Marshal(reports)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ginkgo.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func tarNames(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	z, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tr := tar.NewReader(z)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

// TestRun: a run whose specs failed as the stack's expectations say leaves
// e2e.log, junit (ginkgo's), the report, the tarball and the done file, and
// is OK; one whose ginkgo wrote no report still leaves the log, the tarball
// and done, and fails.
func TestRun(t *testing.T) {
	results := t.TempDir()
	c := Config{ResultsDir: results, Procs: 1, FakesImage: "f", Kubeconfig: "/dev/null",
		Ginkgo: fakeGinkgo(t, recordedReport(t, "full9-crio"), 1), TestBinary: "/bin/true"}
	var out bytes.Buffer
	if err := Run(context.Background(), c, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, f := range []string{LogFile, "report.md", "report.html", "report.json", TarballFile, DoneFile} {
		if _, err := os.Stat(filepath.Join(results, f)); err != nil {
			t.Error(err)
		}
	}
	if done, _ := os.ReadFile(filepath.Join(results, DoneFile)); string(done) != filepath.Join(results, TarballFile) {
		t.Errorf("done names %q", done)
	}
	names := strings.Join(tarNames(t, filepath.Join(results, TarballFile)), " ")
	for _, want := range []string{"e2e.log", "ginkgo.json", "report.md"} {
		if !strings.Contains(names, want) {
			t.Errorf("tarball %q lacks %s", names, want)
		}
	}
	if !strings.Contains(out.String(), "Nothing unexpected") {
		t.Errorf("no grid on the output:\n%s", out.String())
	}

	results = t.TempDir()
	c.ResultsDir, c.Ginkgo = results, fakeGinkgo(t, "", 1)
	err := Run(context.Background(), c, io.Discard)
	if err == nil || errors.Is(err, verdicts.ErrUnexpected) {
		t.Errorf("err = %v, want the run's failure", err)
	}
	for _, f := range []string{LogFile, TarballFile, DoneFile} {
		if _, err := os.Stat(filepath.Join(results, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestRemoveOwnRBAC: the runner makes its ClusterRole the owner of its
// binding, so that the garbage collector deletes the binding once the
// role, deleted next, is gone; a role already gone is fine.
func TestRemoveOwnRBAC(t *testing.T) {
	const name = "faultline-conformance"
	cs := fake.NewClientset(
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "role-uid"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: name}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cluster-admin", UID: "other"}},
	)
	ctx := context.Background()
	if err := RemoveOwnRBAC(ctx, cs, name); err != nil {
		t.Fatal(err)
	}
	b, err := cs.RbacV1().ClusterRoleBindings().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := b.OwnerReferences; len(refs) != 1 || refs[0].Kind != "ClusterRole" || refs[0].Name != name || refs[0].UID != "role-uid" || refs[0].APIVersion != "rbac.authorization.k8s.io/v1" {
		t.Errorf("the binding's owners %+v, want the ClusterRole %s", refs, name)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the ClusterRole is still there: %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "cluster-admin", metav1.GetOptions{}); err != nil {
		t.Errorf("another role was touched: %v", err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "patch" && a.GetVerb() != "delete" {
			t.Errorf("%s %s: the Job's role grants only get, patch and delete", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if err := RemoveOwnRBAC(ctx, cs, name); err != nil {
		t.Errorf("a second removal: %v", err)
	}
}

// TestRunRemovesItsRBAC: with RemoveRBAC the run removes its role and
// binding after the suites and says so in e2e.log; a failure to is said
// loudly and leaves the outcome alone.
func TestRunRemovesItsRBAC(t *testing.T) {
	c, err := FromEnv(env(map[string]string{"FAULTLINE_FAKES_IMAGE": "f", RemoveRBACEnv: "faultline-conformance"}))
	if err != nil || c.RemoveRBAC != "faultline-conformance" {
		t.Fatalf("%s: %q, %v", RemoveRBACEnv, c.RemoveRBAC, err)
	}
	if _, err := FromEnv(env(map[string]string{"FAULTLINE_FAKES_IMAGE": "f", RemoveRBACEnv: "Not/A name"})); err == nil {
		t.Error("a bad name must be refused")
	}
	cs := fake.NewClientset(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "faultline-conformance"}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "faultline-conformance"}})
	c.ResultsDir, c.Kubeconfig, c.Ginkgo, c.TestBinary = t.TempDir(), "/dev/null", fakeGinkgo(t, recordedReport(t, "full9-crio"), 1), "/bin/true"
	c.client = func(string) (kubernetes.Interface, error) { return cs, nil }
	var out bytes.Buffer
	if err := Run(context.Background(), c, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	log, _ := os.ReadFile(filepath.Join(c.ResultsDir, LogFile))
	if !strings.Contains(string(log), "removed ClusterRole faultline-conformance") || !strings.Contains(out.String(), "removed ClusterRole") {
		t.Errorf("e2e.log does not say the role was removed:\n%s", log)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(context.Background(), "faultline-conformance", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the role is still there: %v", err)
	}

	c.ResultsDir = t.TempDir()
	c.client = func(string) (kubernetes.Interface, error) { return nil, errors.New("no route to the API server") }
	out.Reset()
	if err := Run(context.Background(), c, &out); err != nil {
		t.Errorf("a failed removal changed the outcome: %v", err)
	}
	if !strings.Contains(out.String(), "WARNING: this run's permissions are still granted (no route to the API server)") {
		t.Errorf("the pod's log does not warn:\n%s", out.String())
	}
}
