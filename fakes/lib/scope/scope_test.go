package scope

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func TestAPIGate(t *testing.T) {
	cs := fake.NewClientset(
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ours", Labels: map[string]string{NamespaceLabel: NamespaceLabelValue}}},
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}},
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "wrong-value", Labels: map[string]string{NamespaceLabel: "yes"}}},
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := NewAPIGate(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := g.Allows(ctx, "ours"); !ok {
		t.Errorf("labelled namespace refused: %s", why)
	}
	for _, ns := range []string{"tenant", "wrong-value", "missing"} {
		if ok, why := g.Allows(ctx, ns); ok || !strings.Contains(why, ns) {
			t.Errorf("%s: allowed=%v why=%q", ns, ok, why)
		}
	}
	// A namespace created after the informer started is found by the GET
	// even before the informer has seen it.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "new",
		Labels: map[string]string{NamespaceLabel: NamespaceLabelValue}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, why := g.Allows(ctx, "new"); !ok {
		t.Errorf("new labelled namespace refused: %s", why)
	}
}

func TestStatic(t *testing.T) {
	s := Static{"a"}
	if ok, _ := s.Allows(context.Background(), "a"); !ok {
		t.Error("a refused")
	}
	if ok, why := s.Allows(context.Background(), "b"); ok || why == "" {
		t.Errorf("b: %v %q", ok, why)
	}
}
