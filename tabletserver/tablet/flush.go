package tablet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/sstable"
)

// Flush writes the memtable to SSTables (one per non-empty family), records
// them in the manifest with the new log replay point, and drops the log
// segments they cover.
func (t *Tablet) Flush(ctx context.Context) error {
	if t.closed.Load() {
		return ErrClosed
	}
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	if t.closed.Load() {
		return ErrClosed
	}
	return t.flushLocked(ctx, false)
}

// flushLocked flushes with flushMu held. force rotates the log and saves the
// manifest even when the memtable is empty.
func (t *Tablet) flushLocked(ctx context.Context, force bool) error {
	_, err := t.flushReserving(ctx, force, false)
	return err
}

// flushReserving is flushLocked; with reserve it also takes the next
// sequence number for the caller (Ingest), in the same commit critical
// section as the memtable swap, so that every write before it is in the
// flushed memtable and every write after it gets a greater number. With
// memtables frozen by an earlier failed flush pending, it flushes those
// and reserves nothing (seq 0): the caller flushes again.
func (t *Tablet) flushReserving(ctx context.Context, force, reserve bool) (seq uint64, err error) {
	t.flushStarted()
	defer func() { t.flushEnded(err) }()
	// A cheap early exit: a refused flush leaves the memtable and the log
	// as they are (the manifest save is checked again below).
	if err := t.checkGuard("flush"); err != nil {
		return 0, err
	}
	t.mu.Lock()
	pending := len(t.imm) > 0
	t.mu.Unlock()
	if !pending {
		// Swap the memtable and rotate the log under the commit mutex, so
		// the immutable memtable holds exactly the records of the segments
		// before the new one.
		t.commitMu.Lock()
		if t.failErr != nil {
			t.commitMu.Unlock()
			return 0, fmt.Errorf("%w: %w", ErrFailed, t.failErr)
		}
		if t.mem.empty() && !force {
			if reserve {
				t.lastSeq++
				seq = t.lastSeq
			}
			t.commitMu.Unlock()
			return seq, nil
		}
		seg, err := t.log.Rotate()
		if err != nil {
			t.failErr = err
			t.commitMu.Unlock()
			err = fmt.Errorf("tablet: rotate commit log: %w", err)
			t.failed(err)
			return 0, err
		}
		im := &immutable{m: t.mem, replayPoint: seg, lastSeq: t.lastSeq}
		if reserve {
			t.lastSeq++
			seq = t.lastSeq
		}
		t.mu.Lock()
		t.mem = newMemtable()
		t.active.Store(t.mem)
		t.imm = append(t.imm, im)
		t.flush.changedLocked() // room for stalled writers
		t.mu.Unlock()
		t.commitMu.Unlock()
	}
	for {
		t.mu.Lock()
		if len(t.imm) == 0 {
			t.mu.Unlock()
			break
		}
		im := t.imm[0]
		t.mu.Unlock()
		if err := t.flushImmutable(ctx, im); err != nil {
			return 0, err
		}
	}
	t.requestCompaction()
	return seq, nil
}

// flushAllLocked flushes with flushMu held until every write made before
// the call is in SSTables: a flush that finds memtables frozen by an
// earlier failed flush writes only those, so a second one swaps and
// writes the active memtable (empty: it does nothing).
func (t *Tablet) flushAllLocked(ctx context.Context) error {
	if err := t.flushLocked(ctx, false); err != nil {
		return err
	}
	return t.flushLocked(ctx, false)
}

// waitVisible waits until every batch up to seq is published. The records
// are durable (Rotate synced them); their writers are only returning.
func (t *Tablet) waitVisible(ctx context.Context, seq uint64) error {
	for t.visibleSeq.Load() < seq {
		t.commitMu.Lock()
		failed := t.failErr
		t.commitMu.Unlock()
		if failed != nil {
			return fmt.Errorf("%w: %w", ErrFailed, failed)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Microsecond):
		}
	}
	return nil
}

func (t *Tablet) flushImmutable(ctx context.Context, im *immutable) error {
	start := time.Now()
	if t.testHookFlush != nil {
		t.testHookFlush()
	}
	if err := t.waitVisible(ctx, im.lastSeq); err != nil {
		return err
	}
	sch := t.schema.Load()
	lists := *im.m.lists.Load()
	var made []*tableFile
	fail := func(err error) error { return t.abandon(made, err) }
	for _, name := range sch.names {
		l := lists[name]
		if l == nil || l.empty() {
			continue
		}
		it := &skipIter{s: l}
		fam := sch.byName[name]
		f, err := t.writeTable(fam, uint64(l.count.Load()), func(add func(k, v []byte) error) error {
			if fam.ValueType.IsAggregate() {
				// Each AddToCell is an entry of its own in the memtable:
				// merge them so that files do not grow with the number of
				// increments. The memtable's tombstones are applied and
				// kept; every tombstone elsewhere either is older than the
				// whole memtable (earlier files) or newer (later
				// memtables), so it deletes all parts of a merged cell or
				// none (see tombstonesAmid). Nothing is condemned here:
				// GC is for compactions.
				return mergeEntries(ctx, it, families.Policy{}, aggregation{vt: fam.ValueType}, modeMerge, add, nil)
			}
			for ok := it.First(); ok; ok = it.Next() {
				if err := add(it.Key(), it.Value()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fail(err)
		}
		if f != nil {
			made = append(made, f)
		}
	}
	t.editMu.Lock()
	v := t.head()
	if v == nil {
		t.editMu.Unlock()
		return fail(ErrClosed)
	}
	files := v.files
	for _, f := range made {
		f := f
		files = (&version{files: files}).edit(f.ref.Family, func(fs []*tableFile) []*tableFile { return append(fs, f) })
	}
	err := t.installLocked(files, im, nil)
	t.editMu.Unlock()
	if err != nil {
		return fail(err)
	}
	t.opts.Memory.release(im.m.bytes.Load())
	ev := FlushEvent{MemtableBytes: im.m.bytes.Load(), Files: len(made), Bytes: filesSize(made), Duration: time.Since(start)}
	if ev.Files == 0 {
		// An empty memtable flushed (an unload or split of an idle
		// tablet): routine, not an event an operator needs to see.
		t.logger.Debug("flushed", "dir", t.dir, "memtable_bytes", ev.MemtableBytes, "files", 0, "duration", ev.Duration.Round(time.Millisecond))
	} else {
		t.logger.Info("flushed", "event", "flush", "dir", t.dir, "memtable_bytes", ev.MemtableBytes, "files", ev.Files,
			"bytes", ev.Bytes, "duration", ev.Duration.Round(time.Millisecond))
	}
	t.flushed(ev)
	// The flush is published; only the deletion of the log segments it
	// covers is left. A refused deletion leaves them for a later flush.
	// The seal's flush on a shared log has nothing to release: the
	// segments of this server's log before it hold no record of the
	// tablet (it attached just now; what it replayed is in another log),
	// so it skips the check, a listing of the folder on an object store.
	if t.sealing && t.opts.Log != nil {
		return nil
	}
	if !t.mayDelete("remove commit log segments") {
		return nil
	}
	if err := t.log.RemoveBefore(im.replayPoint); err != nil {
		t.logger.Warn("removing old commit log segments", "dir", t.dir, "err", err)
	}
	return nil
}

// maxTakenFileNums bounds how many numbers in a row writeTable skips
// because a file of that number exists: far more than one crashed flush
// or compaction leaves behind.
const maxTakenFileNums = 1000

// allocFileNum returns a new file number.
func (t *Tablet) allocFileNum() uint64 {
	t.editMu.Lock()
	defer t.editMu.Unlock()
	n := t.nextFileNum
	t.nextFileNum++
	return n
}

// writeTable writes one SSTable of family fam from the entries fill adds
// (in key order), fsyncs it and opens it. It returns nil when fill added
// nothing (the file is removed).
func (t *Tablet) writeTable(fam *families.Family, maxEntries uint64, fill func(add func(k, v []byte) error) error) (*tableFile, error) {
	made, err := t.writeTables(fam, maxEntries, tableCut{}, fill)
	if err != nil || len(made) == 0 {
		return nil, err
	}
	return made[0], nil
}

// tableCut says where writeTables ends one SSTable and starts the next:
// at the first row that starts once the file holds size bytes (0: never).
// inBytes are the bytes the entries are read from (a compaction's inputs),
// which with the entries' count estimate each file's entries for its
// bloom filter. unload gives each file's index and filter back once it is
// opened (sstable.Reader.Unload): a compaction's outputs are not read
// before it is published, and held meanwhile they would double what the
// files being merged hold already; the first read after loads them.
type tableCut struct {
	size, inBytes uint64
	unload        bool
}

// filterEntries bounds the entries of one file of a cut from above, for
// its filter (sstable.WriterOptions.MaxEntries): its share of max, the
// entries of inBytes, plus a quarter, since entries need not be spread
// evenly. A bound too large costs filter bits (the builder folds its
// filter only by whole factors: a bound of up to twice the count keeps
// it), one too small costs false positives in that file.
func (c tableCut) filterEntries(max uint64) uint64 {
	if c.size == 0 || c.inBytes <= c.size {
		return max
	}
	return min(max, uint64(float64(max)*1.25*float64(c.size)/float64(c.inBytes))+1)
}

// writeTables writes the entries fill adds (in key order) into SSTables
// of family fam, cut as cut says, each fsynced and opened; they are in key
// order, and no row spans two of them (runs.go). It returns none when fill
// added nothing. On an error every file it made is closed and removed.
//
// Cutting bounds what one file costs while it is written (its filter's
// bits and index block grow with its entries) and what it holds once open
// (docs/BENCHMARKS.md "Compaction outputs cut into files of a target
// size").
func (t *Tablet) writeTables(fam *families.Family, maxEntries uint64, cut tableCut, fill func(add func(k, v []byte) error) error) (made []*tableFile, err error) {
	var cur *tableOut
	defer func() {
		if err == nil {
			return
		}
		if cur != nil {
			cur.abort(t)
		}
		for _, f := range made {
			f.close()
			_ = t.opts.FS.Remove(f.path)
		}
		made = nil
	}()
	per := cut.filterEntries(maxEntries)
	err = fill(func(k, v []byte) error {
		if t.closed.Load() && t.bgCtx.Err() != nil {
			return ErrClosed
		}
		if cur != nil && cut.size > 0 && cur.w.EstimatedSize() >= cut.size && newRow(cur.w.LastKey(), k) {
			f, err := t.finishTable(fam, cur)
			cur = nil
			if err != nil {
				return err
			}
			if cut.unload {
				f.unload()
			}
			made = append(made, f)
		}
		if cur == nil {
			var err error
			if cur, err = t.createTable(fam, per); err != nil {
				return err
			}
		}
		cur.n++
		return cur.w.Add(k, v)
	})
	if err != nil {
		return nil, fmt.Errorf("tablet: write sstable: %w", err)
	}
	if cur != nil {
		f, err := t.finishTable(fam, cur)
		cur = nil
		if err != nil {
			return nil, err
		}
		if cut.unload {
			f.unload()
		}
		made = append(made, f)
	}
	return made, nil
}

// newRow reports whether key starts another row than last (a key that is
// not a cell key never starts one: the cut waits).
func newRow(last, key []byte) bool {
	a, err := cell.RowPrefix(last)
	if err != nil {
		return false
	}
	b, err := cell.RowPrefix(key)
	if err != nil {
		return false
	}
	return !bytes.Equal(a, b)
}

// tableOut is an SSTable writeTables is writing.
type tableOut struct {
	w         *sstable.Writer
	num       uint64
	rel, path string
	n         int // entries added
}

// createTable creates the next SSTable file of fam and its writer.
func (t *Tablet) createTable(fam *families.Family, maxEntries uint64) (*tableOut, error) {
	fsys := t.opts.FS
	for taken := 0; ; taken++ {
		num := t.allocFileNum()
		rel := fmt.Sprintf("%s/%06d.sst", familyFolder(fam.Name), num)
		path := filepath.Join(t.dir, filepath.FromSlash(rel))
		if err := fsys.MkdirAll(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("tablet: %w", err)
		}
		fh, err := fsys.Create(path)
		if err == nil {
			wo := writerOptions(fam)
			wo.MaxEntries = maxEntries
			w := sstable.NewWriter(fh, wo)
			t.writing.add(w)
			return &tableOut{w: w, num: num, rel: rel, path: path}, nil
		}
		// A file of that number is left by a process of this folder that
		// died before a manifest named it (the same epoch, or Epoch 0:
		// unfenced). It is not ours to overwrite or delete (a save of
		// that process whose outcome is unknown may name it): take the
		// next number. Without this every flush after such a crash would
		// fail until retries had used up the numbers, and with writers
		// stalled on the full memtable (stall.go) that is an outage.
		if !errors.Is(err, fs.ErrExist) || taken == maxTakenFileNums {
			return nil, fmt.Errorf("tablet: create sstable %s: %w", path, err)
		}
		t.logger.Warn("an SSTable of this number exists already, not named by the manifest: using the next number", "dir", t.dir, "path", path)
	}
}

// abort gives up the file: its writer is aborted and the file removed.
func (o *tableOut) abort(t *Tablet) {
	o.w.Abort()
	t.writing.remove(o.w)
	_ = t.opts.FS.Remove(o.path)
}

// finishTable closes o's writer, syncs the folder and opens the file; on
// an error the file is removed.
func (t *Tablet) finishTable(fam *families.Family, o *tableOut) (*tableFile, error) {
	fsys := t.opts.FS
	defer t.writing.remove(o.w)
	if err := o.w.Close(); err != nil {
		_ = fsys.Remove(o.path)
		return nil, fmt.Errorf("tablet: finish sstable %s: %w", o.path, err)
	}
	if err := fsys.SyncDir(filepath.Dir(o.path)); err != nil {
		_ = fsys.Remove(o.path)
		return nil, fmt.Errorf("tablet: sync folder %s: %w", filepath.Dir(o.path), err)
	}
	p := o.w.Properties()
	ref := manifest.FileRef{
		Family: fam.Name, Path: o.rel, FileNum: o.num, Size: p.FileSize,
		NumCells: p.NumCells, NumTombstones: p.NumDeleteFamily + p.NumDeleteColumn,
		MinTimestamp: p.MinTimestamp, MaxTimestamp: p.MaxTimestamp, MinSeq: p.MinSeq, MaxSeq: p.MaxSeq,
	}
	setKeys(&ref, &p)
	// Opened now, not on first use: a file that does not open is never
	// published.
	f, err := t.openFile(ref)
	if err == nil {
		_, err = f.reader()
	}
	if err != nil {
		if f != nil {
			f.close()
		}
		_ = fsys.Remove(o.path)
		return nil, err
	}
	if t.testHookTableWritten != nil {
		t.testHookTableWritten()
	}
	return f, nil
}

// familyFolder returns the folder of a family's SSTables: its name, except
// for names that would clash with the tablet's own entries or climb out of
// the folder ("." "..", "log", and every name starting with "MANIFEST", the
// manifests of each epoch and their temporary files), which get a "~"
// prefix ("~" is not allowed in family names, so nothing collides).
func familyFolder(name string) string {
	switch {
	case name == "." || name == ".." || name == logDirName || strings.HasPrefix(name, manifest.FileName):
		return "~" + name
	}
	return name
}

// abandon closes the files made for an edit that failed with err and
// removes them, unless the manifest naming them may have been saved: then
// they stay, unreferenced if the old manifest is the one read. It returns
// err.
func (t *Tablet) abandon(made []*tableFile, err error) error {
	keep := errors.Is(err, manifest.ErrMaybeSaved)
	for _, f := range made {
		f.close()
		if !keep {
			_ = t.opts.FS.Remove(f.path)
		}
	}
	return err
}

// filesSize is the total size of files in bytes, for operator logs.
func filesSize(files []*tableFile) uint64 {
	var n uint64
	for _, f := range files {
		n += f.ref.Size
	}
	return n
}
