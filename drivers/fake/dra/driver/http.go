package driver

import (
	"encoding/json"
	"net/http"

	"k8s.io/klog/v2"
)

// DeviceState is one entry of GET /devices.
type DeviceState struct {
	Pool    string   `json:"pool"`
	Device  string   `json:"device"`
	Healthy bool     `json:"healthy"`
	Failure *failure `json:"failure,omitempty"`
}

// DevicesHandler serves GET /devices: every device with its injected
// failure, if any.
func (d *Driver) DevicesHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet {
			http.Error(w, "only GET is supported", http.StatusMethodNotAllowed)
			return
		}
		failed, _ := d.devices.failures()
		out := make([]DeviceState, 0, d.devices.count)
		for i := 0; i < d.devices.count; i++ {
			name := DeviceName(i)
			st := DeviceState{Pool: d.devices.pool, Device: name, Healthy: true}
			if f, ok := failed[name]; ok {
				st.Healthy, st.Failure = false, &f
			}
			out = append(out, st)
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
		writeJSON(w, map[string][]string{"repaired": repaired})
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
