// Package errortype puts the KEP-5322 draft field
//
//	NodePrepareResourceResponse.error_type = 3 (enum: Unknown = 0, Permanent = 1)
//
// on the wire. No released kubelet API (k8s.io/kubelet v0.36) has the field,
// so the generated Go type cannot hold it; but the messages are
// google.golang.org/protobuf messages, which keep and marshal unknown fields.
// A gRPC interceptor therefore appends the field as an unknown field to the
// per-claim responses of claims the driver marked permanent. A kubelet that
// implements the KEP decodes it; today's kubelets skip it.
package errortype

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/types"
	drapbv1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drapbv1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"
)

// FieldNumber is error_type's number in the KEP-5322 draft.
const FieldNumber protowire.Number = 3

// ErrorType mirrors the draft enum NodePrepareResourceResponseErrorType.
type ErrorType uint64

const (
	Unknown   ErrorType = 0
	Permanent ErrorType = 1
)

type collectorKey struct{}

// collector gathers the claims marked permanent while one call is handled.
type collector struct {
	mu        sync.Mutex
	permanent map[string]bool
}

// MarkPermanent records that the response for claimUID must carry
// error_type = Permanent. Outside an intercepted call it does nothing.
func MarkPermanent(ctx context.Context, claimUID types.UID) {
	c, ok := ctx.Value(collectorKey{}).(*collector)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.permanent[string(claimUID)] = true
}

// UnaryServerInterceptor must be installed with kubeletplugin.GRPCInterceptor.
// The helper passes the call's context down to PrepareResourceClaims, so the
// driver can mark claims there; after the handler returns, the marks are
// written into the response before gRPC marshals it. Both the v1 and the
// v1beta1 service are covered (same message layout).
func UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		c := &collector{permanent: map[string]bool{}}
		resp, err := handler(context.WithValue(ctx, collectorKey{}, c), req)
		if err != nil || resp == nil {
			return resp, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		switch r := resp.(type) {
		case *drapbv1.NodePrepareResourcesResponse:
			for uid, claim := range r.GetClaims() {
				if c.permanent[uid] && claim != nil {
					Set(claim, Permanent)
				}
			}
		case *drapbv1beta1.NodePrepareResourcesResponse:
			for uid, claim := range r.GetClaims() {
				if c.permanent[uid] && claim != nil {
					Set(claim, Permanent)
				}
			}
		}
		return resp, err
	}
}

// Set stores error_type in msg's unknown fields, replacing an earlier value.
// Unknown (0) is the proto3 default and is therefore not encoded at all.
func Set(msg proto.Message, t ErrorType) {
	m := msg.ProtoReflect()
	unknown := withoutField(m.GetUnknown(), FieldNumber)
	if t != Unknown {
		unknown = protowire.AppendTag(unknown, FieldNumber, protowire.VarintType)
		unknown = protowire.AppendVarint(unknown, uint64(t))
	}
	m.SetUnknown(unknown)
}

// Get reads error_type from msg's unknown fields, as a client built against
// today's API receives it. found is false when the field is absent.
func Get(msg proto.Message) (t ErrorType, found bool) {
	return Find(msg.ProtoReflect().GetUnknown())
}

// Find scans an encoded NodePrepareResourceResponse (or its unknown fields)
// for error_type. The last occurrence wins, as protobuf decoding specifies.
func Find(b []byte) (t ErrorType, found bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return t, found
		}
		b = b[n:]
		if num == FieldNumber && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return t, found
			}
			t, found = ErrorType(v), true
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return t, found
		}
		b = b[m:]
	}
	return t, found
}

func withoutField(b []byte, drop protowire.Number) []byte {
	var out []byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return out
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return out
		}
		if num != drop {
			out = append(out, b[:n+m]...)
		}
		b = b[n+m:]
	}
	return out
}
