package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/tabuladb/tabula/opshttp"
)

// Readiness of a tablet server: it holds its lease (serving, neither
// paused nor abandoned) and has loaded every tablet it was asked to load.
// "Asked to load" is the server's own record of LoadTablet calls, not the
// master's view: the server cannot read the master's mind cheaply, and a
// load the master has not sent yet is the master's to report.

// loadRecord tracks the loads in progress and the loads that failed, by
// tablet key. A failed load counts until the tablet is loaded, unloaded,
// or the server registers again (it then owns nothing).
type loadRecord struct {
	mu       sync.Mutex
	inflight map[string]int
	failed   map[string]error
}

func (r *loadRecord) started(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inflight == nil {
		r.inflight = make(map[string]int)
	}
	r.inflight[key]++
}

// done ends a load. A refusal because the tablet is not (or no longer)
// assigned here is not this server's failure: the tablet is someone
// else's, and nothing is left for it to load.
func (r *loadRecord) done(key string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inflight[key]--; r.inflight[key] <= 0 {
		delete(r.inflight, key)
	}
	if err == nil || errors.Is(err, ErrNotAssigned) || errors.Is(err, ErrClosed) {
		delete(r.failed, key)
		return
	}
	if r.failed == nil {
		r.failed = make(map[string]error)
	}
	r.failed[key] = err
}

func (r *loadRecord) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.failed, key)
}

// reset forgets the failures (loads in flight end by themselves).
func (r *loadRecord) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = nil
}

// pending says what is not loaded yet, or nil.
func (r *loadRecord) pending() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.failed) > 0 {
		keys := make([]string, 0, len(r.failed))
		for k := range r.failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("tabletserver: %d tablet load(s) failed, e.g. %s: %v", len(keys), keys[0], r.failed[keys[0]])
	}
	if len(r.inflight) > 0 {
		keys := make([]string, 0, len(r.inflight))
		for k := range r.inflight {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return fmt.Errorf("tabletserver: loading %d tablet(s), e.g. %s", len(keys), keys[0])
	}
	return nil
}

// Ready reports whether the server is fit to take calls: it is not
// closed, holds its lease and has loaded every tablet it was asked to. The
// error says what is missing, for /readyz and operators.
func (s *Server) Ready(context.Context) error {
	if s.closed.Load() {
		return ErrClosed
	}
	switch {
	case s.isAbandoned():
		return errors.New("tabletserver: lease lost: registering again in etcd")
	case s.isPaused(), !s.leaseSafe():
		return errors.New("tabletserver: paused: lease not renewed in time (etcd unreachable?)")
	}
	return s.loads.pending()
}

// Health returns the server's readiness as served by its gRPC health
// service, for the process's HTTP endpoints (opshttp.Serve).
func (s *Server) Health() *opshttp.Health { return s.health }
