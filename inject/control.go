package inject

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/halfopen/rehearse"
)

// ControlHandler returns the live control API, for driving drills by hand:
//
//	GET    /upstreams            the upstreams: name, mode, addr, url
//	GET    /faults               every fault with its state and counters
//	POST   /faults               add a fault (a FaultSpec as JSON or YAML);
//	                             its "at" counts from now
//	DELETE /faults               remove every fault (?upstream=NAME: its faults)
//	DELETE /faults/{name}        remove one fault
//	GET    /fault-types          the catalogue: type and summary
//
// Errors are JSON {"error": "..."} with status 400 (bad input) or 404.
// The handler itself checks nothing about who calls: serve it behind a
// ControlGuard (ServeControl and Serve do), on loopback unless it has a
// token.
func (s *Server) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /upstreams", func(w http.ResponseWriter, r *http.Request) {
		type up struct {
			Name string `json:"name"`
			Mode string `json:"mode"`
			Addr string `json:"addr"`
			URL  string `json:"url,omitempty"`
		}
		var out []up
		for _, u := range s.upstreams {
			e := up{Name: u.cfg.Name, Mode: u.cfg.Mode, Addr: u.Addr()}
			if u.cfg.Mode != ModeTCP {
				e.URL = s.URL(u.cfg.Name)
			}
			out = append(out, e)
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults())
	})
	mux.HandleFunc("POST /faults", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		// JSON is YAML: one strict walker decodes either.
		var spec FaultSpec
		if err := spec.UnmarshalJSON(body); err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		st, err := s.AddFault(spec)
		if err != nil {
			writeError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusCreated, st)
	})
	mux.HandleFunc("DELETE /faults", func(w http.ResponseWriter, r *http.Request) {
		up := r.URL.Query().Get("upstream")
		if up != "" && s.byName[up] == nil {
			writeError(w, http.StatusNotFound, fmt.Errorf("unknown upstream %q", up))
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"removed": s.ClearFaults(up)})
	})
	mux.HandleFunc("DELETE /faults/{name}", func(w http.ResponseWriter, r *http.Request) {
		if !s.RemoveFault(r.PathValue("name")) {
			writeError(w, http.StatusNotFound, fmt.Errorf("no fault named %q", r.PathValue("name")))
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"removed": 1})
	})
	mux.HandleFunc("GET /fault-types", func(w http.ResponseWriter, r *http.Request) {
		type ft struct {
			Type    string `json:"type"`
			Summary string `json:"summary"`
		}
		var out []ft
		for _, t := range FaultTypes() {
			out = append(out, ft{t, FaultTypeSummary(t)})
		}
		writeJSON(w, http.StatusOK, out)
	})
	return mux
}

// ServeControl serves the control API on ln until ctx is done, behind a
// ControlGuard for ln's address (no token).
func (s *Server) ServeControl(ctx context.Context, ln net.Listener) error {
	h := NewControlGuard(ln.Addr(), ln.Addr().String(), "").Wrap(s.ControlHandler())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	err := srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("%w: control API: %w", rehearse.ErrEnvironment, err)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
