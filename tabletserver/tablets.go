package tabletserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/meta"
	"github.com/tabuladb/tabula/storepath"
	"github.com/tabuladb/tabula/tabletserver/tablet"
)

// trustedSchema returns table's schema as etcd holds it: families, GC
// rules and the rest come from there, never from the request, so a caller
// that is not the master cannot make a tablet server apply a schema (a
// forged TTL of a microsecond followed by a major compaction would erase a
// table). From the request only the split threshold is taken when etcd's
// is 0 (the master fills in its cluster default there).
func (s *Server) trustedSchema(ctx context.Context, table string, req *tabulapb.TableSchema) (*tabulapb.TableSchema, error) {
	rec, rev, err := meta.GetTable(ctx, s.etcd, s.layout, table)
	if err != nil {
		return nil, err
	}
	s.schemaCache.put(table, rec.Schema, rev)
	return withThreshold(rec.Schema, req), nil
}

// withThreshold is sch with req's split threshold when etcd's is 0 (a
// copy then: sch may be the cache's, shared by every load of its table).
func withThreshold(sch, req *tabulapb.TableSchema) *tabulapb.TableSchema {
	if sch.GetSplitThresholdBytes() == 0 && req.GetSplitThresholdBytes() > 0 {
		sch = proto.Clone(sch).(*tabulapb.TableSchema)
		sch.SplitThresholdBytes = req.GetSplitThresholdBytes()
	}
	return sch
}

// schemaCache holds each table's schema as this server last read it from
// etcd, with the table record's ModRevision then. A load reads its
// tablet's record and, in the same request, the table's record only if
// its ModRevision is no longer the cached one (meta.GetTabletAndTable):
// the schema a load applies is the one etcd holds at the revision of the
// tablet record it checked (never older than that record, and as new as
// when every load read the table itself), and the loads of one table's
// tablets (a dead server's 100 tablets of a table) decode it once. Like
// Server.schemas, an entry lives as long as the server: one small schema
// per table it ever loaded a tablet of.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]cachedSchema
}

type cachedSchema struct {
	schema *tabulapb.TableSchema // never changed once cached: loads share it
	rev    int64                 // the table record's ModRevision
}

// get returns table's cached schema and its revision (nil, 0: none).
func (c *schemaCache) get(table string) (*tabulapb.TableSchema, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[table]
	return e.schema, e.rev
}

// put caches sch as table's schema at rev unless a newer one is cached
// (reads of one table may answer out of order).
func (c *schemaCache) put(table string, sch *tabulapb.TableSchema, rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]cachedSchema{}
	}
	if e, ok := c.m[table]; !ok || e.rev < rev {
		c.m[table] = cachedSchema{schema: sch, rev: rev}
	}
}

// readAssignment reads tablet table/id's record and its table's schema
// in one request at one revision, the schema from the cache while the
// table's record has not changed since it was cached. A tablet that does
// not exist is answered with ModRevision 0.
func (s *Server) readAssignment(ctx context.Context, table, id string) (meta.VersionedTablet, *tabulapb.TableSchema, error) {
	cached, rev := s.schemaCache.get(table)
	r, err := meta.GetTabletAndTable(ctx, s.etcd, s.layout, table, id, rev)
	if err != nil {
		return meta.VersionedTablet{}, nil, err
	}
	if !r.Changed {
		return r.Tablet, cached, nil
	}
	s.schemaCache.put(table, r.Table.Schema, r.TableRev)
	return r.Tablet, r.Table.Schema, nil
}

// tabletPath is <root>/tables/<table>/<id>, after checking that both names
// are plain path elements (storepath).
func (s *Server) tabletPath(table, id string) (string, error) {
	return storepath.Tablet(s.opts.DataDir, table, id)
}

// engineOptions are the options of one tablet's engine on this server.
func (s *Server) engineOptions(dir string, fams []families.Family, start, end []byte, epoch int64) tablet.Options {
	return tablet.Options{
		Dir: dir, FS: s.opts.FS, Families: fams, Start: nilIfEmpty(start), End: nilIfEmpty(end), Epoch: epoch,
		SyncMode: s.syncMode, MemtableSize: s.opts.MemtableSize, ManifestFormat: s.opts.ManifestFormat,
		Cache: s.cache, Memory: s.memory, Compactions: s.limiter,
		DisableBackgroundWork: s.opts.DisableBackgroundWork,
		Logger:                s.logger.With("table", filepath.Base(filepath.Dir(dir)), "tablet", filepath.Base(dir)),
		Guard:                 s.writeGuard,
		Events:                s.metrics.engineEvents(),
		OnFailure: func(err error) {
			s.tabletFailed(filepath.Base(filepath.Dir(dir)), filepath.Base(dir), epoch, err)
		},
	}
}

// openEngine opens the engine of the tablet in dir, refusing if an engine
// of this process still has that folder open: two engines on one folder
// would pick the same file numbers and overwrite each other's manifest
// (one engine per folder is the in-process half of "one owner per tablet").
// The folder is reserved while the engine opens, not the whole registry:
// opening replays logs from the store, and after a store outage every
// tablet of the server loads at once.
func (s *Server) openEngine(dir string, fams []families.Family, start, end []byte, epoch int64, create bool) (*tablet.Tablet, error) {
	s.engines.Lock()
	if t := s.engines.m[dir]; (t != nil && !t.Closed()) || s.engines.opening[dir] {
		s.engines.Unlock()
		return nil, fmt.Errorf("%w: tablet folder %s is already open on this server", ErrAlreadyOpen, dir)
	}
	s.engines.opening[dir] = true
	s.engines.Unlock()
	defer func() {
		s.engines.Lock()
		delete(s.engines.opening, dir)
		s.engines.Unlock()
	}()
	opts := s.engineOptions(dir, fams, start, end, epoch)
	opts.Create = create
	wal, err := s.sharedLog()
	if err != nil {
		return nil, err
	}
	opts.Log, opts.Name = wal, tabletKey(filepath.Base(filepath.Dir(dir)), filepath.Base(dir))
	t, err := tablet.Open(opts)
	if err != nil {
		return nil, err
	}
	s.engines.Lock()
	defer s.engines.Unlock()
	if len(s.engines.m) >= max(2*s.engines.pruned, 64) {
		for d, o := range s.engines.m {
			if o.Closed() {
				delete(s.engines.m, d)
			}
		}
		s.engines.pruned = len(s.engines.m)
	}
	s.engines.m[dir] = t
	return t, nil
}

// writeGuard is every tablet's tablet.Options.Guard: once the lease is no
// longer safe, another server may own the tablet and write its folder, so
// background flushes and compactions that wake up before the lease loop
// fences must not save a manifest or delete files (docs/CONTRACTS.md §4).
func (s *Server) writeGuard() error {
	if !s.leaseSafe() {
		return ErrFenced
	}
	return nil
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// resolve finds the tablet a data call names, at exactly its epoch.
func (s *Server) resolve(ref *tabulapb.TabletRef, row []byte) (*held, error) {
	if ref == nil {
		return nil, cell.Invalidf("tablet: the TabletRef is missing")
	}
	table, id := ref.GetTable(), ref.GetTabletId()
	if s.closed.Load() {
		return nil, notServing(table, id, row, "server is shutting down")
	}
	if !s.leaseSafe() {
		return nil, &notServingError{table: table, tablet: id, row: row, reason: "server lease not renewed in time", cause: ErrFenced}
	}
	s.mu.RLock()
	h := s.tablets[tabletKey(table, id)]
	s.mu.RUnlock()
	switch {
	case h == nil:
		return nil, notServing(table, id, row, "tablet not loaded on this server")
	case h.epoch != ref.GetEpoch():
		return nil, notServing(table, id, row, fmt.Sprintf("epoch %d is not the current epoch %d", ref.GetEpoch(), h.epoch))
	case h.splitting.Load():
		return nil, notServing(table, id, row, "tablet is splitting or merging")
	}
	return h, nil
}

// heldTablets returns a snapshot of the held tablets, of one table if
// table is not empty.
func (s *Server) heldTablets(table string) []*held {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*held, 0, len(s.tablets))
	for _, h := range s.tablets {
		if table == "" || h.table == table {
			out = append(out, h)
		}
	}
	return out
}

// splitThreshold is the size past which a tablet of table splits.
func (s *Server) splitThreshold(table string) int64 {
	s.mu.RLock()
	sch := s.schemas[table]
	s.mu.RUnlock()
	if t := sch.GetSplitThresholdBytes(); t > 0 {
		return t
	}
	return s.opts.SplitThreshold
}

// familiesOf returns the families of table's latest schema.
func (s *Server) familiesOf(table string) ([]families.Family, error) {
	s.mu.RLock()
	sch := s.schemas[table]
	s.mu.RUnlock()
	if sch == nil {
		return nil, fmt.Errorf("tabletserver: no schema for table %s", table)
	}
	return familiesFromSchema(sch)
}

// load opens tablet info at its epoch after checking in etcd that the
// tablet is assigned here at that epoch. Loading a tablet already held at
// that epoch is a no-op; one held at another epoch is closed (without a
// flush: another server may have written its log since) and reopened.
func (s *Server) load(ctx context.Context, info *tabulapb.TabletInfo, schema *tabulapb.TableSchema) error {
	table, id := info.GetTable(), info.GetTabletId()
	dir, err := s.checkLoad(info, schema)
	if err != nil {
		return err
	}
	unlock := s.keys.lock(tabletKey(table, id))
	defer unlock()

	gen := s.generation()
	// The families come from etcd, never from the request
	// (trustedSchema), read with the record that assigns the tablet.
	rec, trusted, err := s.readAssignment(ctx, table, id)
	if err != nil {
		return err // a table that does not exist: NOT_FOUND, as before
	}
	return s.loadAssigned(ctx, info, schema, dir, gen, rec, trusted)
}

// checkLoad checks what a load can check before reading etcd: the names,
// the schema's presence, that the server is open and its lease safe. It
// returns the tablet's folder.
func (s *Server) checkLoad(info *tabulapb.TabletInfo, schema *tabulapb.TableSchema) (string, error) {
	table, id := info.GetTable(), info.GetTabletId()
	dir, err := s.tabletPath(table, id)
	if err != nil {
		return "", err
	}
	if schema == nil {
		return "", cell.Invalidf("schema is missing")
	}
	if schema.GetName() != "" && schema.GetName() != table {
		return "", cell.Invalidf("schema names table %s, the tablet is of table %s", schema.GetName(), table)
	}
	if s.closed.Load() {
		return "", ErrClosed
	}
	if !s.leaseSafe() {
		return "", ErrFenced
	}
	return dir, nil
}

// generation is the server generation a load reads before it checks
// etcd's assignment (install refuses the tablet if it moved since).
func (s *Server) generation() uint64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.gen.Load()
}

// loadAssigned is the rest of a load once etcd's record of the tablet
// (rec) and its table's schema (trusted) were read, the tablet's key
// locked and the server generation gen read before that read: the
// fencing checks against the record, then the open, the seal of a fresh
// tablet and its install. A batch of loads (loadbatch.go) runs it for
// each tablet of the batch on its own.
func (s *Server) loadAssigned(ctx context.Context, info *tabulapb.TabletInfo, schema *tabulapb.TableSchema, dir string, gen uint64, rec meta.VersionedTablet, trusted *tabulapb.TableSchema) error {
	table, id := info.GetTable(), info.GetTabletId()
	key := tabletKey(table, id)
	if rec.ModRevision == 0 {
		return fmt.Errorf("%w: %v: tablet %s/%s", ErrNotAssigned, meta.ErrNotFound, table, id)
	}
	schema = withThreshold(trusted, schema)
	fams, err := familiesFromSchema(schema)
	if err != nil {
		return err
	}
	if rec.Server != s.id || rec.Epoch != info.GetEpoch() {
		return fmt.Errorf("%w: etcd assigns tablet %s/%s to server %q at epoch %d, not to %q at epoch %d",
			ErrNotAssigned, table, id, rec.Server, rec.Epoch, s.id, info.GetEpoch())
	}
	if lease := s.leaseID.Load(); rec.Lease != lease {
		return fmt.Errorf("%w: tablet %s/%s is assigned here under lease %x, this server holds lease %x",
			ErrNotAssigned, table, id, rec.Lease, lease)
	}
	if u, ok := s.unloadedEpoch(key); ok && rec.Epoch <= u {
		return fmt.Errorf("%w: tablet %s/%s was unloaded here at epoch %d; epoch %d will not be served again",
			ErrNotAssigned, table, id, u, rec.Epoch)
	}

	s.mu.Lock()
	old := s.tablets[key]
	if old != nil && old.epoch == rec.Epoch {
		s.schemas[table] = schema
		s.mu.Unlock()
		return old.t.SetFamilies(fams)
	}
	if old != nil {
		delete(s.tablets, key)
	}
	s.mu.Unlock()
	if old != nil {
		if err := old.t.Close(); err != nil {
			s.logger.Warn("closing tablet held at an old epoch", "tablet", key, "epoch", old.epoch, "err", err)
		}
	}

	s.awaitLog(ctx) // a failed log's successor, if it is on its way
	t, err := s.openEngine(dir, fams, rec.Start, rec.End, rec.Epoch, rec.Fresh)
	if err != nil {
		return fmt.Errorf("tabletserver: opening tablet %s: %w", key, err)
	}
	if rec.Fresh {
		// Its files exist now: from here on a missing folder is lost data,
		// never a reason to start empty. Nothing is served before etcd
		// says so.
		next := rec.TabletRecord
		next.Fresh = false
		if err := s.recordFresh(ctx, rec, next); err != nil {
			t.Close()
			return fmt.Errorf("tabletserver: recording that tablet %s was created: %w", key, err)
		}
	}
	if err := s.install(gen, schema, nil, &held{table: table, id: id, epoch: rec.Epoch, dir: dir, t: t}); err != nil {
		return err
	}
	s.counters.loads.Add(1)
	s.logger.Info("loaded tablet", "tablet", key, "epoch", rec.Epoch, "start", rec.Start, "end", rec.End)
	return nil
}

// install is the one step that puts opened tablets into the served set,
// for a load (in: the tablet), a split (in: the children, out: the
// parent) and a merge (in: the merged tablet, out: both parents). gen is
// the server generation the caller read before it checked etcd's
// assignment and opened the tablets.
//
// It guarantees, in one critical section of mu (so a data call sees either
// the tablets out or the tablets in, never neither, and never a tablet of
// a registration the server has given up):
//   - each tablet of out that is still the one held under its key leaves
//     the served set, whatever happens to in (closing it is the caller's);
//   - the tablets of in are served only if the server is still in
//     generation gen (no abandon since: they are still this registration's)
//     and not closed; then each is stamped with gen, its load meter opens,
//     and schema (when not nil) becomes its table's schema;
//   - otherwise none of in is served: each is closed, and install returns
//     ErrClosed or ErrFenced.
func (s *Server) install(gen uint64, schema *tabulapb.TableSchema, out []*held, in ...*held) error {
	s.mu.Lock()
	for _, h := range out {
		if key := tabletKey(h.table, h.id); s.tablets[key] == h {
			delete(s.tablets, key)
		}
	}
	ok := s.gen.Load() == gen && !s.closed.Load()
	if ok {
		now := time.Now()
		for _, h := range in {
			h.gen = gen
			h.load.Open(now)
			s.tablets[tabletKey(h.table, h.id)] = h
		}
		if schema != nil && len(in) > 0 {
			s.schemas[in[0].table] = schema
		}
	}
	s.mu.Unlock()
	if ok {
		return nil
	}
	for _, h := range in {
		h.t.Close()
	}
	if s.closed.Load() {
		return ErrClosed
	}
	return ErrFenced
}

// unload stops serving a tablet: it flushes (so the next owner has little
// to replay) and closes it. Unloading a tablet not held is a no-op; a ref
// with another epoch than the held one is refused.
func (s *Server) unload(ctx context.Context, ref *tabulapb.TabletRef) error {
	if ref == nil {
		return cell.Invalidf("tablet: the TabletRef is missing")
	}
	table, id := ref.GetTable(), ref.GetTabletId()
	key := tabletKey(table, id)
	unlock := s.keys.lock(key)
	defer unlock()
	s.mu.Lock()
	h := s.tablets[key]
	if h == nil {
		// Not held: remember the epoch anyway, so a load of it that is
		// still on its way is refused. The master takes a successful
		// unload as proof that this server will not serve the tablet at
		// that epoch again (docs/OWNERSHIP.md).
		if e := ref.GetEpoch(); e > 0 {
			s.noteUnloadedLocked(key, e)
		}
		s.mu.Unlock()
		return nil
	}
	if ref.GetEpoch() != 0 && h.epoch != ref.GetEpoch() {
		s.mu.Unlock()
		return notServing(table, id, nil, fmt.Sprintf("held at epoch %d, not %d", h.epoch, ref.GetEpoch()))
	}
	delete(s.tablets, key)
	s.noteUnloadedLocked(key, h.epoch)
	s.mu.Unlock()

	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.leaseSafe() && !s.tableDeleting(ctx, table) {
		if err := h.t.Flush(ctx); err != nil && !errors.Is(err, tablet.ErrClosed) {
			s.logger.Warn("flushing tablet on unload", "tablet", key, "err", err)
		}
	}
	if err := h.t.Close(); err != nil {
		s.logger.Warn("closing tablet on unload", "tablet", key, "err", err)
	}
	s.logger.Info("unloaded tablet", "tablet", key, "epoch", h.epoch)
	return nil
}

// noteUnloadedLocked records that key will not be served at epoch or
// below again on this server. s.mu held.
func (s *Server) noteUnloadedLocked(key string, epoch int64) {
	if epoch > s.unloaded[key] {
		s.unloaded[key] = epoch
	}
}

// unloadedEpoch returns the highest epoch key was unloaded at.
func (s *Server) unloadedEpoch(key string) (int64, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.unloaded[key]
	return e, ok
}

// inside reports whether row lies strictly inside (start, end): a valid
// split point.
func inside(row, start, end []byte) bool {
	return len(row) > 0 && bytes.Compare(row, start) > 0 && (len(end) == 0 || bytes.Compare(row, end) < 0)
}

// tableDeleting reports whether etcd marks table as being deleted: its
// tablets are unloaded without a flush, which would only write (on an object
// store: upload) files about to be deleted. Their records stay in the shared
// log until the log is deleted. When etcd cannot say, the tablet is flushed.
func (s *Server) tableDeleting(ctx context.Context, table string) bool {
	rec, _, err := meta.GetTable(ctx, s.etcd, s.layout, table)
	return err == nil && rec.Schema.GetState() == meta.TableDeleting
}
