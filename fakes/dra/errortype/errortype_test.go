package errortype

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
)

func TestSetReplacesAndSurvivesMarshalling(t *testing.T) {
	m := &drapbv1.NodePrepareResourceResponse{Error: "x"}
	Set(m, Permanent)
	Set(m, Permanent)
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	field3 := protowire.AppendVarint(protowire.AppendTag(nil, FieldNumber, protowire.VarintType), uint64(Permanent))
	if n := bytes.Count(b, field3); n != 1 {
		t.Errorf("field 3 encoded %d times in %x", n, b)
	}
	if et, found := Find(b); !found || et != Permanent {
		t.Errorf("Find on the encoding: %v %v", et, found)
	}

	var back drapbv1.NodePrepareResourceResponse
	if err := proto.Unmarshal(b, &back); err != nil || back.Error != "x" {
		t.Fatalf("unmarshal: %v %q", err, back.Error)
	}
	if et, found := Get(&back); !found || et != Permanent {
		t.Errorf("Get after round trip: %v %v", et, found)
	}

	Set(&back, Unknown)
	if _, found := Get(&back); found {
		t.Error("Unknown is the proto3 default and must not be encoded")
	}
}
