package opshttp

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Handler serves the operator's HTTP endpoints:
//
//   - /healthz: 200 "ok" as long as the process answers at all (liveness:
//     restart it if this fails);
//   - /readyz: 200 "ready" when ready evaluates to nil, else 503 with
//     the reason (readiness: send it no work, but do not restart it: a
//     standby master or a server loading tablets is alive and well).
//
// /readyz evaluates the check on every request rather than reporting the
// last poll, so a probe never sees a stale answer. routes add the
// process's other endpoints (metrics, status pages).
func Handler(h *Health, routes ...Route) http.Handler {
	mux := http.NewServeMux()
	for _, r := range routes {
		mux.Handle(r.Pattern, r.Handler)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := h.Update(r.Context()); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %v\n", err)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}

// Route is one more endpoint of a process: Pattern as http.ServeMux takes
// it ("GET /metrics", "/status/").
type Route struct {
	Pattern string
	Handler http.Handler
}

// Server is the HTTP server of a process's operator endpoints.
type Server struct {
	srv  *http.Server
	lis  net.Listener
	done chan error
}

// Serve listens on addr ("127.0.0.1:7180"; port 0 picks one) and serves
// Handler(h, routes...) until Close.
func Serve(addr string, h *Health, routes ...Route) (*Server, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("opshttp: operator HTTP endpoints: listening on %s: %w", addr, err)
	}
	s := &Server{
		// Probes are tiny; a slow or idle client must not hold a
		// connection for ever.
		srv:  &http.Server{Handler: Handler(h, routes...), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute},
		lis:  lis,
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(lis) }()
	return s, nil
}

// Addr returns the address the endpoints listen on.
func (s *Server) Addr() string { return s.lis.Addr().String() }

// Close stops the server.
func (s *Server) Close() error {
	err := s.srv.Close()
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
