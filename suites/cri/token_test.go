package cri

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/faultline-k8s/faultline/fakes/runcslow/ociruntime"
)

// Two specs whose namespaces share a name (the framework's suffix has four
// digits) get tokens of their own, and each is a request runc-slow takes.
func TestSpecTokenTellsReusedNamesApart(t *testing.T) {
	first := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cri-9288", UID: types.UID("c63cec26-0ae5-426c-8601-e4510f424775")}}
	again := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cri-9288", UID: types.UID("0b7f1e2a-91c4-4d1e-a2a9-3f0c7d5e9b11")}}
	a, b := specToken(first), specToken(again)
	if a == b {
		t.Fatalf("both specs get %q", a)
	}
	for _, tok := range []string{a, b} {
		if err := ociruntime.CheckRequest(tok); err != nil {
			t.Error(err)
		}
	}
}
