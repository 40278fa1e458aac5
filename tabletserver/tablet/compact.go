package tablet

import (
	"bytes"
	"context"
	"errors"
	"math"
	"time"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/sstable"
)

// Compact compacts every family. A merging compaction (major=false) merges
// a family's newest SSTables into one, keeping tombstones; when it would
// merge every file of the family it is a major one. A major compaction
// rewrites each family into one file without tombstones, deleted cells or
// what the GC policy condemns. Both first drop whole files past the TTL
// without reading them. Compaction never blocks reads or writes.
func (t *Tablet) Compact(ctx context.Context, major bool) error {
	if t.closed.Load() {
		return ErrClosed
	}
	pick := pickExplicit
	if major {
		pick = pickAll
		end := t.preempt.beginMajor()
		defer func() {
			if end() {
				t.requestCompaction() // what arrived meanwhile
			}
		}()
	}
	for _, name := range t.schema.Load().names {
		if _, err := t.compactFamily(ctx, name, pick); err != nil {
			return err
		}
	}
	return nil
}

// backgroundCompact does the compactions the tablet's state calls for:
// expired files, families over the L0 trigger, split references.
func (t *Tablet) backgroundCompact(ctx context.Context) error {
	for _, name := range t.schema.Load().names {
		if t.closed.Load() {
			return ErrClosed
		}
		t.mu.Lock()
		if t.cur == nil {
			t.mu.Unlock()
			return ErrClosed
		}
		files, runs := t.cur.files[name], t.cur.runs[name]
		t.mu.Unlock()
		if len(runs) > t.opts.L0Trigger || longRun(runs) != nil || hasReferences(files) {
			// One compaction may leave a run for the next (a merged run
			// now as big as the next older file): go on while the picker
			// finds one. Every compaction removes at least one file.
			for {
				cctx, done, ok := t.preempt.startBackground(ctx)
				if !ok {
					return nil // a major compaction does it all
				}
				did, err := t.compactFamily(cctx, name, t.pickBackground)
				wasPreempted := err != nil && preempted(cctx)
				done()
				if wasPreempted {
					return nil
				}
				if err != nil {
					return err
				}
				if !did {
					break
				}
			}
			continue
		}
		if err := t.dropExpiredFiles(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

func hasReferences(fs []*tableFile) bool {
	for _, f := range fs {
		if !f.own || f.ref.Lower != nil || f.ref.Upper != nil {
			return true
		}
	}
	return false
}

// head returns the current version without a reference: for callers that
// hold editMu, under which it is not replaced. nil once closed.
func (t *Tablet) head() *version {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// currentVersion returns a referenced current version.
func (t *Tablet) currentVersion() (*version, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur == nil {
		return nil, ErrClosed
	}
	t.cur.ref()
	return t.cur, nil
}

// dropExpiredFiles drops the family's files past the TTL (alone, without a
// merge).
func (t *Tablet) dropExpiredFiles(ctx context.Context, name string) error {
	if err := t.checkGuard("drop expired files"); err != nil {
		return err
	}
	if err := t.opts.Compactions.acquire(ctx); err != nil {
		return err
	}
	defer t.opts.Compactions.release()
	t.compactMu.Lock()
	defer t.compactMu.Unlock()
	fam := t.schema.Load().byName[name]
	if fam == nil || t.closed.Load() {
		return nil
	}
	return t.dropExpiredLocked(name, fam.Policy(t.clock()))
}

// dropExpiredLocked removes from the version every file of the family
// whose newest cell is past the TTL cutoff, without reading it. A file with
// tombstones goes only when every older file goes too, since its tombstones
// may delete cells of older files that are still live. compactMu held.
func (t *Tablet) dropExpiredLocked(name string, p families.Policy) error {
	cutoff, ok := p.ExpiredFileCutoff()
	if !ok {
		return nil
	}
	v, err := t.currentVersion()
	if err != nil {
		return err
	}
	defer v.unref()
	files := v.files[name] // newest first
	drop := map[*tableFile]bool{}
	olderAllDropped := true
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		expired := f.ref.NumCells == 0 || f.ref.MaxTimestamp < cutoff
		if expired && (f.ref.NumTombstones == 0 || olderAllDropped) {
			drop[f] = true
		} else {
			olderAllDropped = false
		}
	}
	if len(drop) == 0 {
		return nil
	}
	return t.replaceFiles(name, drop)
}

// replaceFiles removes the files in drop from the family and adds outs,
// saving the manifest. Files no longer listed are deleted once
// unreferenced (only those in the tablet's own folder).
func (t *Tablet) replaceFiles(name string, drop map[*tableFile]bool, outs ...*tableFile) error {
	t.editMu.Lock()
	defer t.editMu.Unlock()
	v := t.head()
	if v == nil {
		return ErrClosed
	}
	var obsolete []*tableFile
	files := v.edit(name, func(fs []*tableFile) []*tableFile {
		kept := fs[:0]
		for _, f := range fs {
			if drop[f] {
				obsolete = append(obsolete, f)
			} else {
				kept = append(kept, f)
			}
		}
		// The dropped files must not stay reachable past kept's length:
		// the version would keep their indexes and filters alive.
		clear(fs[len(kept):])
		return append(kept, outs...)
	})
	if len(obsolete) != len(drop) {
		// The family changed under us (SetFamilies dropped it): discard.
		return errCompactionRace
	}
	return t.installLocked(files, nil, obsolete)
}

// errCompactionRace is internal: a compaction's inputs vanished.
var errCompactionRace = errorString("tablet: compaction inputs changed")

type errorString string

func (e errorString) Error() string { return string(e) }

// compactFamily runs one compaction of a family, of the files pick
// chooses (see Compact). It reports whether it wrote or removed anything.
// The inputs are picked under compactMu from the current files: a caller's
// earlier look at them (backgroundCompact's count) may be stale, as when an
// operator's major compaction ran in between.
func (t *Tablet) compactFamily(ctx context.Context, name string, pick picker) (bool, error) {
	// A cheap early exit; every manifest save is checked again.
	if err := t.checkGuard("compact"); err != nil {
		return false, err
	}
	if err := t.opts.Compactions.acquire(ctx); err != nil {
		return false, err
	}
	defer t.opts.Compactions.release()
	t.compactMu.Lock()
	defer t.compactMu.Unlock()
	fam := t.schema.Load().byName[name]
	if fam == nil || t.closed.Load() {
		return false, nil
	}
	now := t.clock()
	policy := fam.Policy(now)
	if err := t.dropExpiredLocked(name, policy); err != nil {
		return false, err
	}
	v, err := t.currentVersion()
	if err != nil {
		return false, err
	}
	defer v.unref()
	files := v.files[name]
	var inputs []*tableFile
	if hasReferences(files) {
		inputs = files // a split's references: rewrite into files of our own
	} else {
		inputs = pick(files)
	}
	if len(inputs) == 0 {
		return false, nil
	}
	start := time.Now()
	mode := modeMerge
	if len(inputs) == len(files) {
		mode = modeMajor
		if alreadyCompact(inputs, fam, policy, now) {
			return false, nil // already as compact as it gets
		}
	} else if len(inputs) < 2 {
		return false, nil
	}
	agg := aggregation{vt: fam.ValueType}
	if mode == modeMerge && fam.ValueType.IsAggregate() {
		agg.keepParts = tombstonesAmid(files, inputs)
	}
	if t.testHookCompacting != nil {
		t.testHookCompacting(ctx, mode == modeMajor)
	}
	// A compaction cancelled before it starts writing (a major compaction
	// preempting it) writes nothing; once writing, the merge checks ctx
	// every 1024 rows.
	if err := ctx.Err(); err != nil {
		return false, err
	}
	var maxSeq uint64
	for _, f := range inputs {
		maxSeq = max(maxSeq, f.ref.MaxSeq)
	}
	if err := t.waitVisible(ctx, maxSeq); err != nil {
		return false, err
	}
	cut := tableCut{inBytes: filesSize(inputs), unload: true}
	if t.opts.TargetFileSize > 0 {
		cut.size = uint64(t.opts.TargetFileSize)
	}
	outs, err := t.writeTables(fam, entriesOf(inputs), cut, func(add func(k, v []byte) error) error {
		return mergeInputs(ctx, inputs, policy, agg, mode, add)
	})
	if err != nil {
		return false, err
	}
	if mode == modeMajor {
		for _, f := range outs {
			f.majorOf = fam
		}
	}
	drop := map[*tableFile]bool{}
	for _, f := range inputs {
		drop[f] = true
	}
	if err := t.replaceFiles(name, drop, outs...); err != nil {
		// Never published: remove them directly (the guarded deletion
		// of obsolete files is for files a manifest listed), unless a
		// manifest that may have been saved names them.
		for _, f := range outs {
			f.close()
			if !errors.Is(err, manifest.ErrMaybeSaved) {
				_ = t.opts.FS.Remove(f.path)
			}
		}
		if err == errCompactionRace {
			return false, nil
		}
		return false, err
	}
	outBytes := filesSize(outs)
	ev := CompactionEvent{Family: name, Major: mode == modeMajor, Inputs: len(inputs),
		BytesIn: filesSize(inputs), BytesOut: outBytes, Duration: time.Since(start)}
	t.logger.Info("compacted", "event", "compaction", "dir", t.dir, "family", name, "major", ev.Major, "inputs", ev.Inputs,
		"bytes_in", ev.BytesIn, "bytes_out", ev.BytesOut, "duration", ev.Duration.Round(time.Millisecond))
	t.compacted(ev)
	return true, nil
}

// tombstonesAmid reports whether a file of the family outside the inputs
// holds tombstones whose sequence numbers may fall among the inputs'. A
// merging compaction of an aggregate family then keeps the parts of each
// aggregate cell apart (aggregation.keepParts): such a tombstone deletes
// the parts written before it and not those after, which one merged entry
// with one sequence number cannot express.
//
// Merging is safe otherwise. Tombstones of the inputs are applied before
// merging (a deleted part is left out). Tombstones in the memtables and
// in files flushed later all have larger sequence numbers than every
// input, so each deletes either all parts of a cell or none (the parts
// share column and timestamp), as it does the merged entry. Files are
// flushed in sequence order and compactions merge the newest files, so
// the files left out are older and their tombstones come before every
// input: this check only makes that argument independent of how inputs
// are picked.
func tombstonesAmid(files, inputs []*tableFile) bool {
	in := map[*tableFile]bool{}
	lo, hi := uint64(math.MaxUint64), uint64(0)
	for _, f := range inputs {
		in[f] = true
		lo, hi = min(lo, f.ref.MinSeq), max(hi, f.ref.MaxSeq)
	}
	for _, f := range files {
		if !in[f] && f.ref.NumTombstones > 0 && f.ref.MaxSeq > lo && f.ref.MinSeq <= hi {
			return true
		}
	}
	return false
}

// mergeInputs merges the inputs row by row through the assembler, calling
// add with the entries to keep, in key order.
func mergeInputs(ctx context.Context, inputs []*tableFile, p families.Policy, agg aggregation, mode assembleMode, add func(k, v []byte) error) error {
	var srcs []internalIter
	// The writer copies what add is given: once a row is written, the
	// blocks the inputs left while reading it are recycled.
	pins := new(sstable.Pins)
	for _, r := range sortedRuns(inputs) {
		// Each block is read once, from files about to be deleted: left
		// out of the cache, they do not push out the blocks reads use.
		if len(r.files) > 1 {
			srcs = append(srcs, newRunIter(r.files, nil, nil, true, pins))
			continue
		}
		f := r.files[0]
		rd, err := f.reader()
		if err != nil {
			for _, s := range srcs {
				_ = s.Close()
			}
			return err
		}
		it := rd.NewIter(f.lower(), f.upper())
		it.DontFillCache()
		it.SetPins(pins)
		srcs = append(srcs, it)
	}
	return mergeEntries(ctx, newMergeIter(srcs), p, agg, mode, add, pins)
}

// mergeEntries runs the entries of m (closed on return) row by row through
// the assembler, calling add with the entries to keep, in key order. add
// must not keep the bytes it is given: pins (nil: none), the pins of m's
// SSTable iterators, are released after each row.
func mergeEntries(ctx context.Context, m internalIter, p families.Policy, agg aggregation, mode assembleMode, add func(k, v []byte) error, pins *sstable.Pins) error {
	defer pins.Release()
	defer m.Close()
	buf := rowBuffer{reuse: true, keepEnc: true}
	var addErr error
	emit := func(e *rawEntry) {
		if addErr == nil {
			addErr = add(e.enc, e.value)
		}
	}
	rows := 0
	var rpBuf []byte
	for ok := m.SeekGE(nil); ok; {
		if rows++; rows%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		_, n, err := buf.startRow(m.Key())
		if err != nil {
			return err
		}
		// The iterator's key moves on: keep a copy of the row prefix.
		rpBuf = append(rpBuf[:0], m.Key()[:n]...)
		rp := rpBuf
		for ok && bytes.HasPrefix(m.Key(), rp) {
			if err := buf.add(m.Key(), m.Value()); err != nil {
				return err
			}
			ok = m.Next()
		}
		if err := m.Err(); err != nil {
			return err
		}
		if es := buf.entries; len(es) == 1 {
			if simple, keep := assembleOne(&es[0], math.MaxUint64, &p, agg, mode); simple {
				if keep {
					emit(&es[0])
				}
				if addErr != nil {
					return addErr
				}
				pins.Release()
				continue
			}
		}
		assembleFamily(buf.entries, math.MaxUint64, p, agg, mode, emit)
		if addErr != nil {
			return addErr
		}
		pins.Release()
	}
	return m.Err()
}

// entriesOf sums the entries of files: the most a merge of them writes
// (a split's reference counts its whole file).
func entriesOf(files []*tableFile) uint64 {
	var n uint64
	for _, f := range files {
		e, _, _ := f.keys()
		n += e
	}
	return n
}
