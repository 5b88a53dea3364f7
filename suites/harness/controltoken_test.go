package harness

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/faultline-k8s/faultline/fakes/dra/instances"
	"github.com/faultline-k8s/faultline/fakes/lib/control"
	"github.com/faultline-k8s/faultline/fixtures"
)

// Every container of the fixture sets that serves HTTP (its readiness probe
// is fakes/probe) is started with the hash of the run's token, and never with
// the token itself.
func TestFixtureSetsCarryTheTokenHash(t *testing.T) {
	token, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := withTokenHash(nil, control.Token{}); err == nil {
		t.Error("rendering a set without the run's token must fail")
	}
	own := map[string]string{"CRISocketDir": "/run/containerd", "CRISocket": "containerd.sock", "RuntimeProcess": "containerd", "ControlTokenHash": "forged"}
	extra, err := withTokenHash(own, token)
	if err != nil {
		t.Fatal(err)
	}
	if own["ControlTokenHash"] != "forged" || extra["ControlTokenHash"] != token.Hash() || extra["CRISocket"] != "containerd.sock" {
		t.Fatalf("withTokenHash must copy the set's values and set the run's hash: %v", extra)
	}
	guarded := 0
	for _, set := range []string{"cri", "dra", "nri"} {
		objects, err := fixtures.Render(set, fixtures.Values{Namespace: "faultline-test", Image: "faultline/fakes:abc", PullPolicy: "IfNotPresent", Extra: extra})
		if err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		for _, o := range objects {
			if o.GetKind() != "DaemonSet" {
				continue
			}
			var ds appsv1.DaemonSet
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &ds); err != nil {
				t.Fatal(err)
			}
			for _, c := range ds.Spec.Template.Spec.Containers {
				spec := strings.Join(append(append([]string(nil), c.Command...), c.Args...), " ")
				if strings.Contains(spec, token.Secret()) {
					t.Errorf("%s/%s: container %s is given the token itself", set, ds.Name, c.Name)
				}
				if _, _, ok := loopbackProbe(c.ReadinessProbe); !ok {
					continue
				}
				guarded++
				want := "--" + control.Flag + "=" + token.Hash()
				if n := strings.Count(spec, "--"+control.Flag+"="); n != 1 || !strings.Contains(spec, want) {
					t.Errorf("%s/%s: container %s serves HTTP but is not started with %s: %s", set, ds.Name, c.Name, want, spec)
				}
			}
		}
	}
	// cri: the relay; dra: a container per driver instance; nri: five
	// plugins and runtime-state.
	if want := 1 + len(instances.All) + 6; guarded != want {
		t.Errorf("%d containers serve HTTP, want %d", guarded, want)
	}
}

// The setup's data carries the token from process 1 to the others; a
// refusal never shows it.
func TestSetupDataCarriesTheToken(t *testing.T) {
	token, err := control.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	raw := encodeSetup([]byte(`{"source":"test"}`), token)
	facts, got, err := decodeSetup(raw)
	if err != nil || got != token || string(facts) != `{"source":"test"}` {
		t.Fatalf("round trip: %s, same token %v, %v", facts, got == token, err)
	}
	for _, bad := range [][]byte{nil, []byte("{"), []byte(`{"facts":{},"token":"` + token.Secret()[:40] + `"}`), []byte(`{"facts":{}}`)} {
		if _, _, err := decodeSetup(bad); err == nil || strings.Contains(err.Error(), token.Secret()[:40]) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
