package main

// The relay's CRI port: a gRPC proxy, not a byte pipe, so that every call
// can be checked for the run's control token (control.Verifier's
// interceptors) before it reaches the runtime. It proxies any method of any
// service (the CRI's, and containerd's own API the CRI suite also reads)
// without knowing their messages: each message is passed on as the bytes
// it arrived as, with the caller's metadata minus the token, and the
// runtime's headers, trailers and status come back as they are.

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/faultline-k8s/faultline/fakes/lib/control"
)

// maxMessage bounds one message either way; the endpoints keep their own
// limits (the kubelet allows 16 MiB), so the proxy's must not be lower.
const maxMessage = 64 << 20

// frame is one message's bytes.
type frame struct{ b []byte }

// rawCodec passes frames through unchanged. It is registered as this
// process's "proto" codec rather than forced on the calls: a forced codec
// makes gRPC send the content type "application/grpc+proto", and CRI-O
// (1.36) resets the connection of any request whose content type is not
// exactly "application/grpc" (seen here: every call through the relay
// failed with "connection reset by peer" while the same call straight to
// the socket answered). Anything but a frame is a protobuf message,
// marshalled as the codec it replaces would.
type rawCodec struct{}

func init() { encoding.RegisterCodec(rawCodec{}) }

func (rawCodec) Marshal(v any) ([]byte, error) {
	f, ok := v.(*frame)
	if !ok {
		m, ok := v.(proto.Message)
		if !ok {
			return nil, status.Errorf(codes.Internal, "relay: cannot send %T", v)
		}
		return proto.Marshal(m)
	}
	return f.b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	f, ok := v.(*frame)
	if !ok {
		m, ok := v.(proto.Message)
		if !ok {
			return status.Errorf(codes.Internal, "relay: cannot receive into %T", v)
		}
		return proto.Unmarshal(data, m)
	}
	// data belongs to gRPC's buffer pool once Unmarshal returns.
	f.b = append([]byte(nil), data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// newCRIProxy serves gRPC on the relay's port and passes each call on to
// the runtime's socket; v refuses calls without the token.
func newCRIProxy(socket string, v *control.Verifier) (*grpc.Server, *grpc.ClientConn, error) {
	backend, err := grpc.NewClient("unix://"+socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
		// A restarted runtime must be reached again within a second or so,
		// as a fresh dial per connection did (the CRI suite restarts it).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}))
	if err != nil {
		return nil, nil, err
	}
	p := &criProxy{backend: backend}
	opts := append(v.ServerOptions(),
		grpc.UnknownServiceHandler(p.handle),
		grpc.ForceServerCodec(rawCodec{}),
		grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage))
	return grpc.NewServer(opts...), backend, nil
}

// cancelFirst is how much later than the caller's deadline the runtime's
// own deadline for a call falls.
const cancelFirst = 2 * time.Second

// callContext is the context of the call to the runtime: cancelled the
// moment the caller's call ends (its deadline passed, or it went away), with
// a deadline cancelFirst after the caller's. So the runtime sees every call
// the caller gave up on end the same way, as a cancellation (gRPC's
// RST_STREAM), never by its own deadline timer: the two race when a deadline
// passes (each hop sets its timer on receipt, and the caller's cancel
// follows the request's path), and runtimes answer them differently - NRI
// drops a plugin whose call ended with "deadline exceeded" and carries on
// without it, while a cancelled call fails the request (containerd's
// CreateContainer kept the container in the first case and gave it up in
// the second). The kubelet meets the same race over its socket; a spec
// fixes one side of it so that its verdict is one outcome.
func callContext(caller context.Context) (context.Context, context.CancelFunc) {
	ctx := context.WithoutCancel(caller)
	cancelDeadline := context.CancelFunc(func() {})
	if deadline, ok := caller.Deadline(); ok {
		ctx, cancelDeadline = context.WithDeadline(ctx, deadline.Add(cancelFirst))
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(caller, cancel)
	return ctx, func() { stop(); cancel(); cancelDeadline() }
}

// callerAnswer is the status a call the runtime ended with err returns to
// the caller. When the caller's call ended first (its deadline, its
// cancel), it ended the runtime's with it, and the runtime's "canceled"
// answers the relay's cancel, not the caller: a caller that still reads
// an answer (its own timer ran late) gets what ended its call.
func callerAnswer(caller context.Context, err error) error {
	if cerr := caller.Err(); cerr != nil {
		return status.FromContextError(cerr).Err()
	}
	return err
}

type criProxy struct {
	backend *grpc.ClientConn
}

// handle proxies one call of any kind (unary or streaming either way).
func (p *criProxy) handle(_ any, in grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(in)
	if !ok {
		return status.Error(codes.Internal, "relay: no method")
	}
	ctx, cancel := callContext(in.Context())
	defer cancel()
	md, _ := metadata.FromIncomingContext(in.Context())
	md = md.Copy()
	md.Delete(control.MetadataKey) // the token is for the relay, not the runtime
	out, err := p.backend.NewStream(metadata.NewOutgoingContext(ctx, md),
		&grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	// Caller to runtime. Its end (EOF) is the runtime's cue; a failure on
	// either side ends the call through ctx or the runtime's answer.
	go func() {
		for {
			f := &frame{}
			if err := in.RecvMsg(f); err != nil {
				if errors.Is(err, io.EOF) {
					_ = out.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if err := out.SendMsg(f); err != nil {
				return // the runtime ended the call: its status comes from RecvMsg
			}
		}
	}()
	// Runtime to caller: the headers as soon as they come (a stream of
	// events may send its first message much later), then the messages. A
	// call that failed before any header gets its status from RecvMsg.
	if h, err := out.Header(); err == nil && len(h) > 0 {
		if err := in.SendHeader(h); err != nil {
			return err
		}
	}
	for {
		f := &frame{}
		if err := out.RecvMsg(f); err != nil {
			in.SetTrailer(out.Trailer())
			if errors.Is(err, io.EOF) {
				return nil
			}
			return callerAnswer(in.Context(), err)
		}
		if err := in.SendMsg(f); err != nil {
			return err
		}
	}
}
