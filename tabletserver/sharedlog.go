package tabletserver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/sharedlog"
	"github.com/tabuladb/tabula/vfs"
)

// The shared commit log (docs/CONTRACTS.md §3 "Commit log").
//
// Every tablet the server loads writes its records to one log, so that
// concurrent writes to many tablets share one fsync (one PUT on an object
// store). A log is only ever appended by the process that created it, and
// it is named after the etcd lease the server registered under
// (meta.LogName): a server that registers under a new lease (after losing
// the old one) starts a new log, and so does one whose log failed. The
// master's GC keeps every log whose lease is alive or that a tablet's
// manifest still names.

// openLog starts the server's n-th shared log under lease and makes it the
// one new tablets attach to. The previous log is closed: its tablets have
// all been closed (a new lease) or have failed with it.
func (s *Server) openLog(lease int64) error {
	s.walMu.Lock()
	defer s.walMu.Unlock()
	return s.openLogLocked(lease)
}

// openLogLocked is openLog with walMu held.
func (s *Server) openLogLocked(lease int64) error {
	if s.walClosed {
		return ErrClosed
	}
	var l *sharedlog.Log
	var err error
	for {
		name := meta.LogName(lease, s.walN+1)
		l, err = sharedlog.Open(sharedlog.Options{
			FS: s.opts.FS, Root: s.opts.DataDir, Name: name,
			SyncMode: s.syncMode, MaxBytes: s.opts.MaxLogBytes, SpillDir: s.opts.SpillDir,
			OnPressure: func(names []string) { s.flushForLog(l, names) }, Logger: s.logger,
			OnSync: s.metrics.onSync(),
		})
		if err == nil {
			s.walN++
			break
		}
		if errors.Is(err, sharedlog.ErrExists) {
			s.walN++ // an earlier failed attempt left a segment: skip the name
			continue
		}
		// Nothing was written to it that anyone needs; the name is tried
		// again next time (so a store that stays down does not leave a
		// trail of empty logs behind), once what the attempt may have
		// created is gone.
		if rerr := vfs.Or(s.opts.FS).RemoveAll(sharedlog.Dir(s.opts.DataDir, name)); rerr != nil {
			s.walN++
		}
		// Not prefixed: a caller that returns it wraps it in a
		// "tabletserver: …" of its own (Start, load, split, merge); the
		// others log it.
		return fmt.Errorf("starting the shared commit log: %w", err)
	}
	if old := s.wal; old != nil {
		if err := old.Close(); err != nil {
			s.logger.Warn("closing the previous shared commit log", "log", old.Name(), "err", err)
		}
	}
	s.wal = l
	s.logger.Info("shared commit log started", "log", l.Name())
	return nil
}

// sharedLog returns the log a tablet loaded now writes to, starting a new
// one first if the current one failed (its tablets have failed too and
// are being reassigned; their records stay in the failed log).
func (s *Server) sharedLog() (*sharedlog.Log, error) {
	// walMu is held over the replacement, so there is one at a time: a load
	// and the renewal (logrenew.go) that both saw the failed log must not
	// each start one, the second closing the first under a tablet that had
	// just attached to it.
	s.walMu.Lock()
	defer s.walMu.Unlock()
	if l := s.wal; l == nil || l.Err() != nil {
		if l != nil {
			s.logger.Error("the shared commit log failed: starting another", "log", l.Name(), "err", l.Err())
		}
		if err := s.openLogLocked(s.leaseID.Load()); err != nil {
			return nil, err
		}
	}
	return s.wal, nil
}

// closeLog closes the shared log at shutdown, after every tablet.
func (s *Server) closeLog() error {
	s.walMu.Lock()
	defer s.walMu.Unlock()
	s.walClosed = true
	if s.wal == nil {
		return nil
	}
	err := s.wal.Close()
	s.wal = nil
	return err
}

// flushForLog flushes the tablets (named "<table>/<id>") that hold the
// shared log l's oldest segment, so it can be deleted. A tablet this server
// no longer serves was closed unflushed (failed, fenced, or of a deleted
// table): its pin goes once its records are no longer needed, because a
// newer owner's manifest superseded them or the tablet's folder is gone.
func (s *Server) flushForLog(l *sharedlog.Log, names []string) {
	for _, name := range names {
		table, id, _ := strings.Cut(name, "/")
		s.mu.Lock()
		h := s.tablets[tabletKey(table, id)]
		s.mu.Unlock()
		if h != nil {
			if err := h.t.Flush(context.Background()); err != nil {
				s.logger.Warn("flushing a tablet for the shared commit log", "tablet", name, "err", err)
			}
			continue
		}
		if err := s.releaseOrphan(l, table, id); err != nil {
			s.logger.Warn("the shared commit log is held by a tablet this server no longer serves", "tablet", name, "err", err)
		}
	}
}

// releaseOrphan releases l's pins of a tablet this server no longer serves
// when its newest manifest shows they are not needed.
func (s *Server) releaseOrphan(l *sharedlog.Log, table, id string) error {
	dir, err := s.tabletPath(table, id)
	if err != nil {
		return err
	}
	_, mid, found, err := manifest.LoadLatest(s.opts.FS, dir)
	switch {
	case err != nil:
		return err
	case !found: // deleted: nothing will replay it
		return l.Release(tabletKey(table, id), math.MaxUint64)
	case mid.Epoch > 0:
		// Every owner below the newest manifest's epoch was superseded.
		return l.Release(tabletKey(table, id), uint64(mid.Epoch-1))
	}
	return nil
}
