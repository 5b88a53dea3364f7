package driver

import (
	"encoding/json"
	"errors"
	"net/http"

	"k8s.io/klog/v2"

	"github.com/faultline-k8s/faultline/drivers/fake/dra/faultspec"
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
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		out := make([]DeviceState, 0, d.devices.count)
		for i := 0; i < d.devices.count; i++ {
			out = append(out, d.deviceState(DeviceName(i)))
		}
		writeJSON(w, out)
	})
}

func (d *Driver) deviceState(name string) DeviceState {
	st := DeviceState{Pool: d.devices.pool, Device: name, Healthy: true, PreparedFor: d.preparedFor(name)}
	if f, ok := d.devices.failureOf(name); ok {
		st.Healthy, st.Failure = false, &f
	}
	return st
}

// FailHandler serves POST /devices/fail?device=dev-N[&effect=NoExecute|NoSchedule|None][&message=...]:
// the device breaks now (see FailDevice). 400 for an unknown device or effect.
func (d *Driver) FailHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "only POST is supported", http.StatusMethodNotAllowed)
			return
		}
		q := req.URL.Query()
		device := q.Get("device")
		_, err := d.FailDevice(req.Context(), device, faultspec.TaintEffect(q.Get("effect")), q.Get("message"))
		switch {
		case errors.Is(err, ErrUnknownDevice), errors.Is(err, ErrInvalidEffect):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, FailResponse{Device: d.deviceState(device)})
	})
}

// RepairHandler serves POST /devices/repair?device=dev-N: the device is
// repaired (see RepairDevice); repaired is empty when it was not failed.
func (d *Driver) RepairHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "only POST is supported", http.StatusMethodNotAllowed)
			return
		}
		device := req.URL.Query().Get("device")
		repaired, err := d.RepairDevice(req.Context(), device)
		switch {
		case errors.Is(err, ErrUnknownDevice):
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		out := RepairResponse{Repaired: []string{}}
		if repaired {
			out.Repaired = append(out.Repaired, device)
		}
		writeJSON(w, out)
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
		repaired, err := d.RepairAll(req.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		klog.FromContext(req.Context()).Info("Reset requested, devices repaired", "devices", repaired)
		if repaired == nil {
			repaired = []string{}
		}
		writeJSON(w, RepairResponse{Repaired: repaired})
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
