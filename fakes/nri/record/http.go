package record

import (
	"net/http"

	"github.com/faultline-k8s/faultline/fakes/lib/httpjson"
	"github.com/faultline-k8s/faultline/fakes/lib/query"
)

// Handler serves
//
//	GET /events[?podUID=<uid>]  the records as a JSON array, in arrival order
//	GET /healthz                200 while ready() returns nil, else 503 and the reason
//
// Any other query parameter is a 400 naming it. It listens on the pod's
// loopback only; specs reach it through a port-forward (fakes/lib/podproxy).
func Handler(r *Recorder, ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events", func(w http.ResponseWriter, req *http.Request) {
		q, ok := query.Request(w, req, "podUID")
		if !ok {
			return
		}
		httpjson.Write(w, r.List(q.Get("podUID")))
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, req *http.Request) {
		if _, ok := query.Request(w, req); !ok {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := ready(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(err.Error() + "\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}
