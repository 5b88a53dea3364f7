// Package scope decides where faultline's fakes may inject faults: only in
// namespaces faultline's specs made for themselves, which carry
// NamespaceLabel. A fault asked for anywhere else (an NRI fault annotation,
// a FaultSpec in a claim, a slow-runtime annotation) is ignored with a log
// line, so no tenant of a shared cluster can make a fake fail its pods.
//
// The fixtures' ValidatingAdmissionPolicy refuses such requests at the API
// already (fixtures/common); this gate is the fakes' own check behind it,
// for clusters where the policy was removed or never applied.
package scope

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// NamespaceLabel marks a namespace a faultline spec created for itself; its
// value must be NamespaceLabelValue. The suites set it when they create a
// namespace (suites/harness); nothing else should.
const (
	NamespaceLabel      = "faultline.k8s.io/faults"
	NamespaceLabelValue = "allowed"
)

// Labelled reports whether a namespace's labels let faults act in it.
func Labelled(labels map[string]string) bool {
	return labels[NamespaceLabel] == NamespaceLabelValue
}

// Gate answers whether faults may act in a namespace.
type Gate interface {
	// Allows reports whether faults may act in namespace, and why not.
	Allows(ctx context.Context, namespace string) (bool, string)
}

// Static is a Gate for a fixed set of namespaces (unit tests, and fakes
// run outside a cluster).
type Static []string

// Allows implements Gate.
func (s Static) Allows(_ context.Context, namespace string) (bool, string) {
	for _, n := range s {
		if n == namespace {
			return true, ""
		}
	}
	return false, fmt.Sprintf("namespace %q is not one of %v", namespace, []string(s))
}

// APIGate reads namespaces' labels from the API server: from an informer's
// cache of the labelled namespaces, and with a GET when the cache does not
// have the namespace yet (a spec's pod can reach the fake milliseconds after
// its namespace was created). Its identity needs get, list and watch on
// namespaces.
type APIGate struct {
	cs     kubernetes.Interface
	lister cache.Indexer
}

// NewAPIGate starts the informer and waits until its cache is filled.
func NewAPIGate(ctx context.Context, cs kubernetes.Interface) (*APIGate, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = NamespaceLabel + "=" + NamespaceLabelValue
	}))
	inf := factory.Core().V1().Namespaces().Informer()
	factory.Start(ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("scope: namespace informer did not sync: %w", syncCtx.Err())
	}
	return &APIGate{cs: cs, lister: inf.GetIndexer()}, nil
}

// Allows implements Gate.
func (g *APIGate) Allows(ctx context.Context, namespace string) (bool, string) {
	if obj, found, _ := g.lister.GetByKey(namespace); found {
		if ns, ok := obj.(*v1.Namespace); ok && Labelled(ns.Labels) {
			return true, ""
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ns, err := g.cs.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Sprintf("namespace %q: %v", namespace, err)
	}
	if !Labelled(ns.Labels) {
		return false, fmt.Sprintf("namespace %q lacks the label %s=%s that faultline's specs set on their namespaces", namespace, NamespaceLabel, NamespaceLabelValue)
	}
	return true, ""
}
