package tablet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/wal"
)

const (
	rowLockStripes = 512
	logDirName     = "log"
)

// Tablet is the storage engine of one tablet. It is safe for concurrent use.
//
// Lock order: gate → row lock → flushMu → compactMu → editMu → commitMu → mu.
// A writer that stalls on a full memtable (stall.go) waits holding none
// of them.
type Tablet struct {
	opts   Options
	dir    string
	logger *slog.Logger
	clock  func() int64
	start  []byte // row range [start, end); nil = unbounded
	end    []byte
	parent string
	log    tabletLog
	// logName is the shared log's name written into manifests ("" for
	// the tablet's own log).
	logName string

	schema atomic.Pointer[schema]

	// visibleSeq is the snapshot new readers take: every batch with a seq
	// up to it is durable and fully in the memtable or SSTables.
	visibleSeq atomic.Uint64
	closed     atomic.Bool

	// gate is held shared by writers and exclusively by Split and Close, so
	// they can block writes and wait for those in flight.
	gate sync.RWMutex

	rowLocks [rowLockStripes]sync.Mutex

	// commitMu serializes the commit pipeline and protects the fields below.
	commitMu sync.Mutex
	lastSeq  uint64 // highest sequence number assigned
	failErr  error  // set when the log failed: the tablet takes no more writes
	failOnce sync.Once

	// mu protects the read state below; held only briefly, never over I/O.
	mu    sync.Mutex
	mem   *memtable
	imm   []*immutable // being flushed, oldest first
	cur   *version
	flush flushState // what stalled writers wait for (stall.go)
	// active is mem, for awaitRoom's check without mu on every write;
	// set wherever mem is.
	active atomic.Pointer[memtable]

	flushMu   sync.Mutex // one flush at a time
	compactMu sync.Mutex // one compaction at a time
	preempt   preemption // major compactions cancel background ones (preempt.go)

	sealing bool // the open's seal is flushing (set with flushMu held)

	// editMu serializes version edits and manifest saves and protects the
	// fields below.
	editMu      sync.Mutex
	nextFileNum uint64
	manifestVer uint64 // version of the newest manifest this epoch saved
	replayPoint uint64
	flushedSeq  uint64 // manifest LastSeq
	// older are the older epochs' manifests the open's listing showed,
	// left by the seal on an object store for the first batch of
	// removals; ownFrom is the oldest version of this epoch a batch has
	// yet to remove, 0 when none is left behind (fence.go,
	// removeOldVersions).
	older   []string
	ownFrom uint64

	bgCtx     context.Context
	bgCancel  context.CancelFunc
	wg        sync.WaitGroup
	flushCh   chan struct{}
	compactCh chan struct{}

	closeOnce sync.Once
	closeErr  error

	// stallAt is the active memtable's size at which writers stall
	// (stall.go); stalls and stallNanos count the stalls and their time
	// (Stats), timed by now.
	stallAt    int64
	stalls     atomic.Uint64
	stallNanos atomic.Int64
	now        func() time.Time

	// testHookTableWritten, when set by a test, runs after each new
	// SSTable is written and before it is published.
	testHookTableWritten func()
	// testHookCompacting, when set by a test, runs in each compaction
	// after its inputs are picked and before it writes; major tells an
	// all-files compaction from a merge of some.
	testHookCompacting func(ctx context.Context, major bool)
	// testHookFlush, when set by a test, runs at the start of the flush
	// of each immutable memtable, before anything is written.
	testHookFlush func()
	// testHookStall, when set by a test, runs when a writer starts to
	// wait for room in the memtable (once per stall).
	testHookStall func()
	// writing holds the SSTable writers in flight (writers.go).
	writing writerSet
	// holds are the own files snapshots keep (holds.go).
	holds holdSet
}

// immutable is a memtable waiting to be flushed.
type immutable struct {
	m           *memtable
	replayPoint uint64 // log segment new writes went to after the swap
	lastSeq     uint64 // highest sequence number assigned before the swap
}

// Open creates or reopens the tablet in opts.Dir and replays its commit log.
func Open(opts Options) (_ *Tablet, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	sch, err := newSchema(opts.Families)
	if err != nil {
		return nil, err
	}
	// One listing of the folder answers every question of the open (the
	// newest version, saves to skip, the older manifests to delete,
	// whether there is an own log/ folder): on an object store a load
	// costs four requests and no GET of an SSTable, which opens on its
	// first read (tablefile.go,
	// TestLoadOnAnObjectStoreCostsTheSameWithAnySSTables).
	began := time.Now()
	folder, err := manifest.ReadFolder(opts.FS, opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("tablet: open %s: %w", opts.Dir, err)
	}
	st, mID, found, err := folder.LoadFor(opts.FS, opts.Epoch)
	mEpoch := mID.Epoch
	if err != nil {
		return nil, fmt.Errorf("tablet: open %s: %w", opts.Dir, err)
	}
	if found && mEpoch > opts.Epoch && opts.Epoch > 0 {
		return nil, fmt.Errorf("%w: %s holds the manifest of epoch %d, newer than this owner's epoch %d", ErrNewerOwner, opts.Dir, mEpoch, opts.Epoch)
	}
	if !found && !opts.Create {
		return nil, fmt.Errorf("%w: %s holds no manifest: the tablet's files are missing (deleted, or another storage root); it is not recreated empty", ErrNoTablet, opts.Dir)
	}
	if !found {
		st = manifest.State{NextFileNum: 1, RangeStart: opts.Start, RangeEnd: opts.End}
		if err := opts.FS.MkdirAll(opts.Dir); err != nil {
			return nil, fmt.Errorf("tablet: %w", err)
		}
		if opts.Guard != nil {
			if gerr := opts.Guard(); gerr != nil {
				return nil, fmt.Errorf("%w: create %s: %w", ErrGuardRefused, opts.Dir, gerr)
			}
		}
		mID = manifest.ID{Epoch: opts.Epoch}
		// An open that seals (below) saves the first version itself: a
		// tablet whose seal fails has no manifest, as one whose first
		// save failed, and is created again by its next open.
		if !opts.seals() {
			mID.Version = 1
			if err := manifest.SaveVersion(opts.FS, opts.Dir, mID, opts.manifestState(st)); err != nil {
				return nil, fmt.Errorf("tablet: create %s: %w", opts.Dir, err)
			}
		}
	}
	if opts.Epoch > 0 && (mEpoch == opts.Epoch || !found) {
		// Opened again at the same epoch: a save of this epoch whose
		// outcome was unknown may still land, so neither its version
		// number nor the file numbers its state names are used again.
		// That holds for a tablet being created too: a first open whose
		// seal's save was of unknown outcome leaves nothing listed.
		p := folder.Pending(opts.FS, opts.Epoch, mID.Version)
		mID.Version = max(mID.Version, p.Version)
		st.NextFileNum = max(st.NextFileNum, p.NextFileNum)
	}
	if st.NextFileNum == 0 {
		st.NextFileNum = 1
	}
	if floor := uint64(opts.Epoch) << 32; st.NextFileNum < floor {
		st.NextFileNum = floor // never a number an older owner may use
	}
	t := &Tablet{
		opts: opts, dir: opts.Dir, logger: opts.Logger, clock: opts.Clock,
		start: st.RangeStart, end: st.RangeEnd, parent: st.Parent,
		mem:         newMemtable(),
		nextFileNum: st.NextFileNum, replayPoint: st.ReplayPoint, flushedSeq: st.LastSeq,
		manifestVer: mID.Version,
		flushCh:     make(chan struct{}, 1), compactCh: make(chan struct{}, 1),
		flush:   flushState{changed: make(chan struct{})},
		stallAt: stallFactor * opts.MemtableSize, now: time.Now,
	}
	t.schema.Store(sch)
	t.active.Store(t.mem)
	files := map[string][]*tableFile{}
	defer func() {
		if err != nil && !t.closed.Load() { // a failed seal closed the tablet itself
			if t.cur != nil {
				t.cur.unref()
			} else {
				for _, fs := range files {
					for _, f := range fs {
						f.close()
					}
				}
			}
			if t.log != nil {
				_ = t.log.close(false)
			}
			if b := t.mem.bytes.Load(); b > 0 {
				opts.Memory.release(b)
			}
		}
	}()
	for _, ref := range st.Files {
		f, err := t.openFile(ref)
		if err != nil {
			return nil, err
		}
		files[ref.Family] = append(files[ref.Family], f)
	}
	for _, fs := range files {
		sortNewestFirst(fs)
	}
	t.cur = newVersion(files)
	// Before anything can be removed: the files snapshots keep (holds.go).
	// Only a folder listed with holds costs the listing of them.
	if folder.HasDir(manifest.HoldsDir) {
		if err := t.loadHolds(files); err != nil {
			return nil, err
		}
	}

	// The folder's listing shows whether the tablet's own log/ exists:
	// without it there is nothing to replay there (on an object store the
	// listing of log/ would be one more request showing nothing).
	hasOwnLog := folder.HasDir(logDirName)
	opened := time.Now() // the manifest read and the SSTables opened
	if err := t.replay(st, mEpoch, hasOwnLog); err != nil {
		return nil, err
	}
	if opts.Log != nil {
		t.log = sharedHandle{opts.Log.Attach(opts.Name, uint64(opts.Epoch))}
		t.logName = opts.Log.Name()
	} else {
		cl, err := wal.Open(wal.Options{Dir: filepath.Join(t.dir, logDirName), FS: opts.FS, SyncMode: opts.SyncMode, SyncInterval: opts.SyncInterval})
		if err != nil {
			return nil, fmt.Errorf("tablet: open commit log: %w", err)
		}
		t.log = ownLog{cl}
	}
	t.visibleSeq.Store(t.lastSeq)
	opts.Memory.register(t)
	replayed := time.Now()
	t.bgCtx, t.bgCancel = context.WithCancel(context.Background())
	// On a shared log the tablet seals at every open: its records from
	// now on go to a log its manifest must name before any is written.
	if opts.seals() {
		if err := t.seal(folder); err != nil {
			_ = t.Close()
			return nil, err
		}
	}
	if opts.Log != nil && st.Log == "" && hasOwnLog && t.mayDelete("remove the tablet's own commit log") {
		// Written before the tablet moved to a shared log; sealed now.
		if err := opts.FS.RemoveAll(filepath.Join(t.dir, logDirName)); err != nil {
			t.logger.Warn("removing the tablet's own commit log", "dir", t.dir, "err", err)
		}
	}
	if !opts.DisableBackgroundWork {
		t.wg.Add(2)
		go t.flushLoop()
		go t.compactLoop()
		t.requestCompaction()
		if t.mem.bytes.Load() > opts.MemtableSize {
			t.requestFlush()
		}
	}
	// Where a load's time goes, for an operator asking why a tablet took
	// long to serve again after a failover (docs/OPERATIONS.md).
	t.logger.Info("opened", "dir", t.dir, "epoch", opts.Epoch, "files", len(st.Files),
		"manifest_and_files", opened.Sub(began).Round(time.Millisecond),
		"replay", replayed.Sub(opened).Round(time.Millisecond),
		"seal", time.Since(replayed).Round(time.Millisecond))
	return t, nil
}

// replay inserts the commit log records after the manifest's LastSeq into
// the memtable: from the tablet's own log, or from the shared log the
// manifest names, keeping only the records its writer (the owner at epoch
// mEpoch, which wrote the manifest) tagged. It is never cut short by a
// context.
func (t *Tablet) replay(st manifest.State, mEpoch int64, hasOwnLog bool) error {
	t.lastSeq = st.LastSeq
	sch := t.schema.Load()
	apply := func(p []byte) error {
		b, err := decodeBatch(p)
		if err != nil {
			return err
		}
		if b.seq <= st.LastSeq {
			return nil
		}
		// The payload is only valid during the call: copy what the memtable keeps.
		b.row = bytes.Clone(b.row)
		kept := b.entries[:0]
		for _, e := range b.entries {
			if sch.byName[e.family] == nil {
				continue
			}
			e.qualifier = bytes.Clone(e.qualifier)
			e.value = bytes.Clone(e.value)
			kept = append(kept, e)
		}
		b.entries = kept
		t.opts.Memory.charge(t.mem.insertBatchLocked(&b))
		if b.seq > t.lastSeq {
			t.lastSeq = b.seq
		}
		return nil
	}
	var err error
	switch {
	case st.Log == "" && !hasOwnLog:
		// No log/ folder: nothing was written to the tablet's own log.
	case st.Log == "":
		_, err = wal.Replay(t.opts.FS, filepath.Join(t.dir, logDirName), st.ReplayPoint, apply)
	case t.opts.Log == nil:
		err = fmt.Errorf("its manifest names the shared commit log %q: open it with Options.Log", st.Log)
	default:
		err = t.opts.Log.Replay(st.Log, t.opts.Name, uint64(mEpoch), st.ReplayPoint, apply)
	}
	if err != nil {
		return fmt.Errorf("tablet: replay commit log of %s: %w", t.dir, err)
	}
	return nil
}

// Closed reports whether Close has been called.
func (t *Tablet) Closed() bool { return t.closed.Load() }

// Range returns the tablet's row range [start, end); nil means unbounded.
func (t *Tablet) Range() (start, end []byte) { return bytes.Clone(t.start), bytes.Clone(t.end) }

// inRange reports whether row is in [start, end).
func (t *Tablet) inRange(row []byte) bool {
	return (t.start == nil || bytes.Compare(row, t.start) >= 0) && (t.end == nil || bytes.Compare(row, t.end) < 0)
}

// SetFamilies replaces the schema. Added families take writes at once;
// modified policies apply to reads at once; deleted families' data is
// dropped (their memtable entries and SSTables, after a flush that moves
// the log's replay point past them). A family whose value type changed
// (the master refuses that, but a family deleted and made again under the
// same name may reach the tablet as one change) is deleted and added: its
// old cells are dropped, never read through the new type, and it takes
// writes again once they are.
func (t *Tablet) SetFamilies(fams []families.Family) error {
	sch, err := newSchema(fams)
	if err != nil {
		return err
	}
	if t.closed.Load() {
		return ErrClosed
	}
	old := t.schema.Load()
	var dropped []string
	interim := sch // the schema while dropped families' data goes
	for _, n := range old.names {
		if f := sch.byName[n]; f == nil {
			dropped = append(dropped, n)
		} else if f.ValueType != old.byName[n].ValueType {
			dropped = append(dropped, n)
			interim = nil
		}
	}
	if interim == nil {
		var kept []families.Family
		for _, n := range sch.names {
			if f := old.byName[n]; f == nil || f.ValueType == sch.byName[n].ValueType {
				kept = append(kept, *sch.byName[n])
			}
		}
		if interim, err = newSchema(kept); err != nil {
			return err
		}
	}
	// Dropping families rewrites the manifest: ask the guard before
	// changing anything, so a refusal leaves the tablet as it was.
	if len(dropped) > 0 {
		if err := t.checkGuard("drop families"); err != nil {
			return err
		}
	}
	t.commitMu.Lock()
	t.schema.Store(interim)
	t.commitMu.Unlock()
	if len(dropped) == 0 {
		return nil
	}
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.commitMu.Lock()
	t.mu.Lock()
	for _, n := range dropped {
		t.mem.dropFamilyLocked(n)
		for _, im := range t.imm {
			im.m.dropFamilyLocked(n)
		}
	}
	t.mu.Unlock()
	t.commitMu.Unlock()
	// Flush so the log no longer replays the dropped families' entries,
	// then drop their files. A memtable frozen by an earlier failed flush
	// is written first, alone (flushAllLocked): the second flush swaps the
	// active memtable, so the replay point passes every record written
	// before the drop, which a family of the same name added later would
	// otherwise get back (TestDroppedFamilyAfterAFailedFlushStaysDropped).
	ctx := t.bgCtxOrBackground()
	if err := t.flushLocked(ctx, false); err != nil {
		return err
	}
	if err := t.flushLocked(ctx, true); err != nil {
		return err
	}
	t.editMu.Lock()
	defer t.editMu.Unlock()
	v := t.head()
	if v == nil {
		return ErrClosed
	}
	files := v.files
	for _, n := range dropped {
		files = (&version{files: files}).edit(n, func([]*tableFile) []*tableFile { return nil })
	}
	if err := t.installLocked(files, nil, dropFiles(v, dropped)); err != nil {
		return err
	}
	if interim != sch {
		t.commitMu.Lock()
		t.schema.Store(sch)
		t.commitMu.Unlock()
	}
	return nil
}

func dropFiles(v *version, fams []string) []*tableFile {
	var out []*tableFile
	for _, n := range fams {
		out = append(out, v.files[n]...)
	}
	return out
}

func (t *Tablet) bgCtxOrBackground() context.Context {
	if t.bgCtx != nil {
		return t.bgCtx
	}
	return context.Background()
}

// installLocked saves a manifest listing files and makes them the current
// version; obsolete files are deleted once no reader holds them. With
// flushed set, the manifest's replay point and LastSeq advance too. editMu
// held.
func (t *Tablet) installLocked(files map[string][]*tableFile, flushed *immutable, obsolete []*tableFile) error {
	nv := &version{files: files}
	st := manifest.State{
		Files: nv.fileRefs(), ReplayPoint: t.replayPoint, Log: t.logName, LastSeq: t.flushedSeq, NextFileNum: t.nextFileNum,
		RangeStart: t.start, RangeEnd: t.end, Parent: t.parent,
	}
	if flushed != nil {
		st.ReplayPoint = flushed.replayPoint
		if flushed.lastSeq > st.LastSeq {
			st.LastSeq = flushed.lastSeq
		}
	}
	if err := t.checkGuard("save manifest"); err != nil {
		return err
	}
	// A new version every save, never a file rewritten in place; a failed
	// attempt's version is not reused (it may exist: ErrMaybeSaved).
	t.manifestVer++
	id := manifest.ID{Epoch: t.opts.Epoch, Version: t.manifestVer}
	if err := manifest.SaveVersion(t.opts.FS, t.dir, id, t.opts.manifestState(st)); err != nil {
		err = fmt.Errorf("tablet: save manifest: %w", err)
		// Like a failed log: the tablet takes no more writes, and its
		// owner hands it on (OnFailure).
		t.commitMu.Lock()
		if t.failErr == nil {
			t.failErr = err
		}
		t.commitMu.Unlock()
		t.failed(err)
		return err
	}
	t.removeOldVersions(id)
	t.replayPoint, t.flushedSeq = st.ReplayPoint, st.LastSeq
	for _, f := range obsolete {
		f.obsolete.Store(true)
	}
	nv = newVersion(files)
	t.mu.Lock()
	old := t.cur
	t.cur = nv
	if flushed != nil && len(t.imm) > 0 && t.imm[0] == flushed {
		// Out of the backing array too: it would keep the flushed
		// memtable's arena alive until the next swap.
		t.imm[0] = nil
		t.imm = t.imm[1:]
	}
	t.mu.Unlock()
	if old != nil {
		old.unref()
	}
	return nil
}

// memBytes returns the tablet's memtable bytes (active and being flushed).
func (t *Tablet) memBytes() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mem == nil {
		return 0
	}
	n := t.mem.bytes.Load()
	for _, im := range t.imm {
		n += im.m.bytes.Load()
	}
	return n
}

func (t *Tablet) requestFlush() {
	select {
	case t.flushCh <- struct{}{}:
	default:
	}
}

func (t *Tablet) requestCompaction() {
	select {
	case t.compactCh <- struct{}{}:
	default:
	}
}

func (t *Tablet) flushLoop() {
	defer t.wg.Done()
	for {
		select {
		case <-t.bgCtx.Done():
			return
		case <-t.flushCh:
		}
		if err := t.Flush(t.bgCtx); err != nil {
			if t.bgCtx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			t.logger.Error("background flush", "dir", t.dir, "err", err)
			select {
			case <-t.bgCtx.Done():
				return
			case <-time.After(time.Second):
			}
			t.requestFlush()
		}
	}
}

func (t *Tablet) compactLoop() {
	defer t.wg.Done()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.bgCtx.Done():
			return
		case <-t.compactCh:
		case <-tick.C:
		}
		if err := t.backgroundCompact(t.bgCtx); err != nil {
			if t.bgCtx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			t.logger.Error("background compaction", "dir", t.dir, "err", err)
		}
	}
}

// Close stops background work, waits for it and for writes in flight, and
// closes the commit log. It does not flush: the log holds the data. Readers
// still open keep their files until they close. Close is idempotent.
func (t *Tablet) Close() error {
	t.gate.Lock()
	defer t.gate.Unlock()
	return t.closeGated()
}

// closeGated closes with the gate held exclusively.
func (t *Tablet) closeGated() error {
	t.closeOnce.Do(func() {
		t.closed.Store(true)
		t.bgCancel()
		t.wg.Wait()
		// Wait for an explicit Flush or Compact in flight.
		t.flushMu.Lock()
		t.compactMu.Lock()
		clean := t.flushedAll()
		if clean && t.logName != "" {
			t.releaseSharedLog()
			// If the release was refused or failed, the manifest still
			// names the log and a replay point in it: keep the pin, so
			// the segments from that point on stay for the next owner.
			clean = t.logName == ""
		}
		t.closeErr = t.log.close(clean)
		t.mu.Lock()
		v := t.cur
		t.cur = nil
		t.mu.Unlock()
		t.compactMu.Unlock()
		t.flushMu.Unlock()
		if v != nil {
			v.unref()
		}
		t.opts.Memory.unregister(t)
		t.opts.Memory.release(t.memBytes())
		t.mu.Lock()
		t.mem, t.imm = nil, nil
		t.active.Store(nil)
		t.mu.Unlock()
	})
	return t.closeErr
}

// flushedAll reports whether the manifest covers every record the tablet
// wrote: nothing is waiting in a memtable and the log never failed.
func (t *Tablet) flushedAll() bool {
	t.commitMu.Lock()
	failed := t.failErr != nil
	t.commitMu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	return !failed && t.mem.empty() && len(t.imm) == 0
}

// releaseSharedLog saves a last manifest that names no log, when the
// tablet closes with everything flushed: its next owner then reads nothing
// of this server's log, whose last segment may hold many tablets' records
// (on an object store, one object per group commit). Best effort: if the
// save is refused or fails, the next owner reads the log and skips what the
// manifest covers. Called by Close with flushMu and compactMu held.
func (t *Tablet) releaseSharedLog() {
	if t.checkGuard("release the shared commit log") != nil {
		return
	}
	t.editMu.Lock()
	defer t.editMu.Unlock()
	v := t.head()
	if v == nil {
		return
	}
	name, point := t.logName, t.replayPoint
	t.logName, t.replayPoint = "", 0
	if err := t.installLocked(v.files, nil, nil); err != nil {
		t.logName, t.replayPoint = name, point
		t.logger.Warn("saving the closing manifest", "dir", t.dir, "err", err)
	}
}
