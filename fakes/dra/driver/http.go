package driver

import (
	"errors"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/fakes/dra/faultspec"
	"github.com/faultline-k8s/faultline/fakes/lib/httpjson"
	"github.com/faultline-k8s/faultline/fakes/lib/query"
)

// DeviceState is one entry of GET /devices.
type DeviceState struct {
	Pool    string   `json:"pool"`
	Device  string   `json:"device"`
	Healthy bool     `json:"healthy"`
	Failure *failure `json:"failure,omitempty"`
	// PreparedFor lists the claims the device is prepared for right now.
	PreparedFor []ClaimRef `json:"preparedFor,omitempty"`
}

// FailResponse is the body of POST /devices/fail.
type FailResponse struct {
	Device DeviceState `json:"device"`
}

// RepairResponse is the body of POST /devices/repair and POST /reset.
type RepairResponse struct {
	Repaired []string `json:"repaired"`
}

// DevicesHandler serves GET /devices: every device with its injected
// failure, if any.
func (d *Driver) DevicesHandler() http.Handler {
	return serveJSON(func() any {
		out := make([]DeviceState, 0, d.devices.count)
		for i := 0; i < d.devices.count; i++ {
			out = append(out, d.deviceState(DeviceName(i)))
		}
		return out
	})
}

// serveJSON serves GET, without query parameters, with what body returns
// as JSON.
func serveJSON(body func() any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		if _, ok := query.Request(w, req); !ok {
			return
		}
		httpjson.Write(w, body())
	})
}

func (d *Driver) deviceState(name string) DeviceState {
	st := DeviceState{Pool: d.devices.pool, Device: name, Healthy: true, PreparedFor: d.preparedFor(name)}
	if f, ok := d.devices.failureOf(name); ok {
		st.Healthy, st.Failure = false, &f
	}
	return st
}

// FailRequest is what POST /devices/fail asks for.
type FailRequest struct {
	Device  string
	Effect  faultspec.TaintEffect // NoExecute when the query has none
	Message string                // valid UTF-8, at most maxFailMessage bytes; a default when the query has none
}

// ParseFailQuery reads the query of POST /devices/fail on a node that
// publishes devices devices: device (required), effect and message, nothing
// else. Errors are a *query.Error, ErrUnknownDevice or ErrInvalidEffect.
func ParseFailQuery(raw string, devices int) (FailRequest, error) {
	q, err := query.Parse(raw, "device", "effect", "message")
	if err != nil {
		return FailRequest{}, err
	}
	r := FailRequest{Device: q.Get("device")}
	if err := checkDevice(r.Device, devices); err != nil {
		return FailRequest{}, err
	}
	if r.Effect, err = checkEffect(faultspec.TaintEffect(q.Get("effect"))); err != nil {
		return FailRequest{}, err
	}
	r.Message = failMessage(q.Get("message"))
	return r, nil
}

// FailHandler serves POST /devices/fail?device=dev-N[&effect=NoExecute|NoSchedule|None][&message=...]:
// the device breaks now (see FailDevice). 400 for an unknown device, effect
// or parameter.
func (d *Driver) FailHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "only POST is supported", http.StatusMethodNotAllowed)
			return
		}
		r, err := ParseFailQuery(req.URL.RawQuery, d.devices.count)
		if err == nil {
			_, err = d.FailDevice(req.Context(), r.Device, r.Effect, r.Message)
		}
		if err != nil {
			http.Error(w, err.Error(), statusOf(err))
			return
		}
		httpjson.Write(w, FailResponse{Device: d.deviceState(r.Device)})
	})
}

// statusOf is 400 for a request the driver refuses, 500 for a failure.
func statusOf(err error) int {
	var qerr *query.Error
	if errors.As(err, &qerr) || errors.Is(err, ErrUnknownDevice) || errors.Is(err, ErrInvalidEffect) {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// RepairHandler serves POST /devices/repair?device=dev-N: the device is
// repaired (see RepairDevice); repaired is empty when it was not failed.
// 400 for an unknown device or parameter.
func (d *Driver) RepairHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "only POST is supported", http.StatusMethodNotAllowed)
			return
		}
		q, ok := query.Request(w, req, "device")
		if !ok {
			return
		}
		device := q.Get("device")
		repaired, err := d.RepairDevice(req.Context(), device)
		if err != nil {
			http.Error(w, err.Error(), statusOf(err))
			return
		}
		out := RepairResponse{Repaired: []string{}}
		if repaired {
			out.Repaired = append(out.Repaired, device)
		}
		httpjson.Write(w, out)
	})
}

// ResetHandler serves POST /reset: repair every device (remove taints,
// report healthy). Call records are kept.
func (d *Driver) ResetHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "only POST is supported", http.StatusMethodNotAllowed)
			return
		}
		if _, ok := query.Request(w, req); !ok {
			return
		}
		repaired, err := d.RepairAll(req.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		klog.FromContext(req.Context()).Info("Reset requested, devices repaired", "devices", repaired)
		if repaired == nil {
			repaired = []string{}
		}
		httpjson.Write(w, RepairResponse{Repaired: repaired})
	})
}
