package driver

import (
	"github.com/faultline-k8s/faultline/fakes/lib/textcap"

	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	drahealthv1alpha1 "k8s.io/kubelet/pkg/apis/dra-health/v1alpha1"
)

// NodeWatchResources implements the DRAResourceHealth service (KEP-4680).
// kubeletplugin registers it on dra.sock and advertises it to the kubelet
// because Driver implements the server interface. The kubelet copies the
// health into pod status containerStatuses[].allocatedResourcesStatus
// (feature ResourceHealthStatus, beta and on by default in 1.36).
//
// Each message is the complete list of devices. It is sent on connect, on
// every change and every HealthInterval: the kubelet marks a device Unknown
// when it has not heard about it for its health check timeout.
//
// A StreamDrop fault (healthstream.go) ends the stream with Unavailable
// and refuses new ones for a while; every stream is recorded.
func (d *Driver) NodeWatchResources(_ *drahealthv1alpha1.NodeWatchResourcesRequest, stream grpc.ServerStreamingServer[drahealthv1alpha1.NodeWatchResourcesResponse]) error {
	ctx := stream.Context()
	logger := klog.FromContext(ctx)
	dropped, err := d.streams.open()
	if err != nil {
		logger.V(2).Info("Kubelet's health stream refused (StreamDrop fault)", "err", err)
		return err
	}
	logger.V(2).Info("Kubelet started watching device health")
	ticker := time.NewTicker(d.cfg.HealthInterval)
	defer ticker.Stop()
	for {
		failed, changed := d.devices.failures()
		if err := stream.Send(d.healthResponse(failed)); err != nil {
			d.streams.closed(err, false)
			return err
		}
		select {
		case <-ctx.Done():
			d.streams.closed(nil, false)
			logger.V(2).Info("Kubelet stopped watching device health")
			return nil
		case <-dropped:
			d.streams.closed(nil, true)
			err := d.streams.endStatus()
			logger.V(2).Info("Health stream ended by a StreamDrop fault", "err", err)
			return err
		case <-changed:
		case <-ticker.C:
		}
	}
}

func (d *Driver) healthResponse(failed map[string]failure) *drahealthv1alpha1.NodeWatchResourcesResponse {
	now := time.Now().Unix()
	// Generous timeout so that a slow resend never flips a device to Unknown.
	timeout := int64((6 * d.cfg.HealthInterval).Seconds())
	resp := &drahealthv1alpha1.NodeWatchResourcesResponse{}
	for i := 0; i < d.devices.count; i++ {
		name := DeviceName(i)
		h := &drahealthv1alpha1.DeviceHealth{
			Device:                    &drahealthv1alpha1.DeviceIdentifier{PoolName: d.devices.pool, DeviceName: name},
			Health:                    drahealthv1alpha1.HealthStatus_HEALTHY,
			LastUpdatedTime:           now,
			HealthCheckTimeoutSeconds: max(timeout, 30),
		}
		if f, ok := failed[name]; ok {
			h.Health = drahealthv1alpha1.HealthStatus_UNHEALTHY
			h.Message = textcap.Cut(f.Message, 1024)
		}
		resp.Devices = append(resp.Devices, h)
	}
	return resp
}
