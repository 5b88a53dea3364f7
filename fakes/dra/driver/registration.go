package driver

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registration tracks the kubelet's answer to our plugin registration. It
// watches the NotifyRegistrationStatus call through an interceptor because
// kubeletplugin.Helper.RegistrationStatus reads the status without locking.
type registration struct {
	mu         sync.Mutex
	notified   bool
	registered bool
	err        string
}

func (r *registration) interceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if st, ok := req.(*registerapi.RegistrationStatus); ok && info.FullMethod == registerapi.Registration_NotifyRegistrationStatus_FullMethodName {
			r.mu.Lock()
			r.notified, r.registered, r.err = true, st.PluginRegistered, st.Error
			r.mu.Unlock()
		}
		return handler(ctx, req)
	}
}

// Registration reports whether the kubelet has registered the plugin and,
// if it refused, why. notified is false until the kubelet has answered.
func (d *Driver) Registration() (notified, registered bool, reason string) {
	d.reg.mu.Lock()
	defer d.reg.mu.Unlock()
	return d.reg.notified, d.reg.registered, d.reg.err
}
