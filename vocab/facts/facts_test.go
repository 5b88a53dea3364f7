package facts

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

var full = Facts{
	Cluster: "faultline-crio", Runtime: "crio", RuntimeVersion: "1.36.2", KubernetesVersion: "v1.36.3",
	NodeImage: "faultline/node-crio:v1.36.3-abc", RuntimeRequestTimeout: Duration(30 * time.Second),
	NRIRequestTimeout: Duration(2 * time.Second), NRIRegistrationTimeout: Duration(5 * time.Second),
	NRIVersion: "v0.12.5", FeatureGates: map[string]bool{"DRAHandlePermanentDriverFailures": true}, Variant: "kep-5322",
	CreatedBy: CreatedByFaultline,
}

func TestWriteReadRoundtrip(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	if _, found, err := Read(ctx, cs); err != nil || found {
		t.Fatalf("Read of a cluster without facts = found %v, %v", found, err)
	}
	if err := Write(ctx, cs, full); err != nil {
		t.Fatal(err)
	}
	got, found, err := Read(ctx, cs)
	if err != nil || !found || !reflect.DeepEqual(got, full) {
		t.Fatalf("Read = %+v, %v, %v; want %+v", got, found, err, full)
	}
	// Writing again replaces them.
	changed := full
	changed.NodeImage = "faultline/node-crio:v1.36.3-def"
	if err := Write(ctx, cs, changed); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := Read(ctx, cs); !reflect.DeepEqual(got, changed) {
		t.Fatalf("after a second Write: %+v", got)
	}
	cm, err := cs.CoreV1().ConfigMaps(Namespace).Get(ctx, Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Labels["app.kubernetes.io/managed-by"] != "faultline" || !strings.Contains(cm.Data[Key], `"runtimeRequestTimeout": "30s"`) {
		t.Errorf("ConfigMap = %+v", cm)
	}
}

func TestReadBrokenFacts(t *testing.T) {
	ctx := context.Background()
	for name, data := range map[string]map[string]string{
		"no key":   {"other": "x"},
		"not json": {Key: "{"},
		"bad time": {Key: `{"runtime": "crio", "runtimeRequestTimeout": "soon"}`},
	} {
		cs := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: Name}, Data: data})
		if _, found, err := Read(ctx, cs); err == nil || !found {
			t.Errorf("%s: found %v, err %v; want found and an error", name, found, err)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	raw, err := json.Marshal(struct{ D Duration }{Duration(90 * time.Second)})
	if err != nil || string(raw) != `{"D":"1m30s"}` {
		t.Fatalf("Marshal = %s, %v", raw, err)
	}
	var back struct{ D Duration }
	if err := json.Unmarshal(raw, &back); err != nil || time.Duration(back.D) != 90*time.Second {
		t.Fatalf("Unmarshal = %v, %v", back.D, err)
	}
}

func TestWithDefaults(t *testing.T) {
	got := Settings{NRIRequestTimeout: time.Second}.WithDefaults()
	want := Settings{Runtime: "containerd", RuntimeRequestTimeout: DefaultRuntimeRequestTimeout,
		NRIRequestTimeout: time.Second, NRIRegistrationTimeout: DefaultNRIRegistrationTimeout,
		KubeletSyncFrequency: DefaultKubeletSyncFrequency}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("WithDefaults = %+v, want %+v", got, want)
	}
}

func TestMismatch(t *testing.T) {
	if got := full.Mismatch(Settings{}); got != nil {
		t.Errorf("an empty ask mismatches: %v", got)
	}
	same := Settings{Runtime: "cri-o", NodeImage: full.NodeImage, RuntimeRequestTimeout: 30 * time.Second,
		NRIRequestTimeout: 2 * time.Second, NRIRegistrationTimeout: 5 * time.Second}
	if got := full.Mismatch(same); got != nil {
		t.Errorf("the same settings (runtime by alias) mismatch: %v", got)
	}
	got := full.Mismatch(Settings{Runtime: "containerd", NodeImage: "other", RuntimeRequestTimeout: 10 * time.Second,
		NRIRequestTimeout: 2 * time.Second, NRIRegistrationTimeout: time.Second})
	want := []string{
		`runtime: the cluster runs "crio", the run asks for "containerd"`,
		`node image: the cluster runs "faultline/node-crio:v1.36.3-abc", the run asks for "other"`,
		"runtime-request-timeout: the cluster has 30s, the run asks for 10s",
		"nri-registration-timeout: the cluster has 5s, the run asks for 1s",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Mismatch =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A kept cluster made before faultline set the kubelet's syncFrequency
	// has none in its facts: reusing it for a run that assumes one is an
	// error, not a silent reuse.
	if got := full.Mismatch(Settings{KubeletSyncFrequency: DefaultKubeletSyncFrequency}); len(got) != 1 ||
		got[0] != "kubelet-sync-frequency: the cluster has 0s, the run asks for 20s" {
		t.Errorf("sync frequency: %v", got)
	}
	if got := full.Mismatch(Settings{Runtime: "rkt"}); len(got) != 1 || !strings.Contains(got[0], `"rkt"`) {
		t.Errorf("unknown runtime: %v", got)
	}
}

func node(name, runtime, kubelet string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: v1.NodeStatus{NodeInfo: v1.NodeSystemInfo{ContainerRuntimeVersion: runtime, KubeletVersion: kubelet}}}
}

// The fake clientset has no REST client, so /configz is not asked: the
// kubelet's runtimeRequestTimeout stays unknown (zero).
func TestFromNodes(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset(node("b-worker", "cri-o://1.36.2", "v1.36.3"), node("a-control-plane", "cri-o://1.36.2", "v1.36.3"))
	got, err := FromNodes(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	want := Facts{Runtime: "crio", RuntimeVersion: "1.36.2", KubernetesVersion: "v1.36.3"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FromNodes = %+v, want %+v", got, want)
	}

	mixed := fake.NewClientset(node("a", "containerd://2.4.2", "v1.36.3"), node("b", "cri-o://1.36.2", "v1.36.3"))
	if _, err := FromNodes(ctx, mixed); err == nil || !strings.Contains(err.Error(), "different runtimes (containerd, crio)") {
		t.Errorf("mixed nodes: %v", err)
	}
	if _, err := FromNodes(ctx, fake.NewClientset()); err == nil || !strings.Contains(err.Error(), "no nodes") {
		t.Errorf("no nodes: %v", err)
	}
	unknown := fake.NewClientset(node("a", "rkt://1.0", "v1.36.3"))
	if _, err := FromNodes(ctx, unknown); err == nil || !strings.Contains(err.Error(), "node a") || !strings.Contains(err.Error(), `unknown runtime "rkt"`) {
		t.Errorf("unknown runtime: %v", err)
	}
}

func TestFeatureGates(t *testing.T) {
	got, err := ParseGates("B=false, A=true", "B=true")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"A": true, "B": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("ParseGates = %v, want %v", got, want)
	}
	if s := FormatGates(got); s != "A=true,B=true" {
		t.Errorf("FormatGates = %q", s)
	}
	if g, err := ParseGates("", " "); err != nil || g != nil {
		t.Errorf("ParseGates of nothing = %v, %v", g, err)
	}
	for _, bad := range []string{"A", "=true", "A=yes please", "A=1=2"} {
		if _, err := ParseGates(bad); err == nil {
			t.Errorf("ParseGates(%q) accepted it", bad)
		}
	}
	f := Facts{FeatureGates: map[string]bool{"A": true}}
	if m := f.Mismatch(Settings{FeatureGates: map[string]bool{"A": false}}); len(m) != 1 {
		t.Errorf("other gates: mismatch %v", m)
	}
	if m := f.Mismatch(Settings{FeatureGates: map[string]bool{"A": true}}); len(m) != 0 {
		t.Errorf("same gates: mismatch %v", m)
	}
}
