package tablet

import (
	"bytes"
	"context"
	"fmt"

	"github.com/tabuladb/tabula/cell"
)

// DropRange deletes every cell of the rows in [start, end) (clipped to the
// tablet's range; nil start is the tablet's start, nil end its end) that
// was written before the call, without a tombstone per cell: SSTables
// wholly inside the range leave the version unread, SSTables partly in it
// are rewritten without it (only their kept part is read).
//
// How it holds: the memtable is flushed first (the cut), so every write
// acknowledged before the call is in an SSTable and the manifest's LastSeq
// covers it: replaying the commit log after a crash cannot bring it back.
// Then, with compactions held off (compactMu), a single manifest save
// removes the range from those SSTables. Writes after the cut go to the new
// memtable and later flushes, which the drop does not touch, so they
// survive; a write racing the call lands wholly on one side (a batch is one
// row, flushed whole). A split waits for the drop or closes the tablet
// first (then the drop fails with ErrClosed and the caller retries on the
// children).
//
// On an error nothing of the drop is published (unless the manifest save
// itself failed, which fails the tablet as any manifest save does).
func (t *Tablet) DropRange(ctx context.Context, start, end []byte) error {
	if t.closed.Load() {
		return ErrClosed
	}
	if start != nil && end != nil && bytes.Compare(start, end) >= 0 {
		return cell.Invalidf("drop range: start %q is not before end %q", start, end)
	}
	// Clip to the tablet: data outside it is not this tablet's.
	lo, hi, ok := intersect(t.start, t.end, start, end)
	if !ok {
		return nil
	}
	if err := t.checkGuard("drop range"); err != nil {
		return err
	}
	var klo, khi []byte
	if lo != nil {
		klo = cell.EncodeRow(lo)
	}
	if hi != nil {
		khi = cell.EncodeRow(hi)
	}

	t.flushMu.Lock()
	if t.closed.Load() {
		t.flushMu.Unlock()
		return ErrClosed
	}
	// The cut. The first flush may only finish memtables frozen by an
	// earlier failed flush; the second swaps the active one.
	err := t.flushLocked(ctx, false)
	if err == nil {
		err = t.flushLocked(ctx, false)
	}
	if err != nil {
		t.flushMu.Unlock()
		return err
	}
	// No compaction may merge the files below the cut into files the
	// drop does not know of. Taken before flushMu is released, so the
	// version read below holds every file of the cut.
	t.compactMu.Lock()
	defer t.compactMu.Unlock()
	t.flushMu.Unlock()
	if t.closed.Load() {
		return ErrClosed
	}
	v, err := t.currentVersion()
	if err != nil {
		return err
	}
	defer v.unref()

	// Plan: per family, the files to remove and their rewritten copies.
	sch := t.schema.Load()
	drop := map[string]map[*tableFile]bool{}
	var made []*tableFile
	fail := func(err error) error { return t.abandon(made, err) }
	outs := map[string][]*tableFile{}
	for name, files := range v.files {
		for _, f := range files {
			switch overlapOf(f, klo, khi) {
			case overlapNone:
				continue
			case overlapPartial:
				in, err := hasKeysIn(f, klo, khi)
				if err != nil {
					return fail(err)
				}
				if !in {
					continue // spans the range but holds nothing in it
				}
				fam := sch.byName[name]
				if fam == nil {
					continue // dropped family: SetFamilies removes its files
				}
				out, err := t.writeTable(fam, entriesOf([]*tableFile{f}), func(add func(k, v []byte) error) error {
					return copyOutside(ctx, f, klo, khi, add)
				})
				if err != nil {
					return fail(err)
				}
				if out != nil {
					made = append(made, out)
					outs[name] = append(outs[name], out)
				}
			}
			if drop[name] == nil {
				drop[name] = map[*tableFile]bool{}
			}
			drop[name][f] = true
		}
	}
	if len(drop) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}

	t.editMu.Lock()
	defer t.editMu.Unlock()
	head := t.head()
	if head == nil {
		return fail(ErrClosed)
	}
	files := head.files
	var obsolete []*tableFile
	for name, d := range drop {
		var gone []*tableFile
		next := (&version{files: files}).edit(name, func(fs []*tableFile) []*tableFile {
			kept := fs[:0]
			for _, f := range fs {
				if d[f] {
					gone = append(gone, f)
				} else {
					kept = append(kept, f)
				}
			}
			clear(fs[len(kept):]) // see replaceFiles
			return append(kept, outs[name]...)
		})
		if len(gone) != len(d) {
			// Only SetFamilies removes files while compactMu is held:
			// the family is gone, and its rewritten copies with it.
			for _, f := range outs[name] {
				f.close()
				_ = t.opts.FS.Remove(f.path)
				made = removeFile(made, f)
			}
			continue
		}
		files = next
		obsolete = append(obsolete, gone...)
	}
	if err := t.installLocked(files, nil, obsolete); err != nil {
		return fail(err)
	}
	t.logger.Debug("dropped range", "dir", t.dir, "start", lo, "end", hi, "files", len(obsolete), "rewritten", len(made))
	return nil
}

func removeFile(fs []*tableFile, f *tableFile) []*tableFile {
	for i, g := range fs {
		if g == f {
			return append(fs[:i], fs[i+1:]...)
		}
	}
	return fs
}

type overlap int

const (
	overlapNone overlap = iota
	overlapPartial
	overlapWhole
)

// overlapOf tells how the encoded-key range [lo, hi) (nil = unbounded)
// covers the keys file f holds within its bounds, from its keys
// (tableFile.keys) and bounds alone: the file is not read.
func overlapOf(f *tableFile, lo, hi []byte) overlap {
	entries, smallest, largest := f.keys()
	if entries == 0 {
		return overlapWhole // an empty file: nothing to keep
	}
	if len(smallest) == 0 || len(largest) == 0 {
		return overlapPartial // bounds unknown: read it rather than guess
	}
	// The file's keys lie in [first, end): its smallest key or lower
	// bound, and the successor of its largest key (largest+0x00) or its
	// upper bound.
	first := smallest
	if l := f.lower(); l != nil && bytes.Compare(l, first) > 0 {
		first = l
	}
	end := append(bytes.Clone(largest), 0)
	if u := f.upper(); u != nil && bytes.Compare(u, end) < 0 {
		end = u
	}
	switch {
	case bytes.Compare(first, end) >= 0:
		return overlapWhole // no key within its bounds
	case hi != nil && bytes.Compare(first, hi) >= 0, lo != nil && bytes.Compare(end, lo) <= 0:
		return overlapNone
	case (lo == nil || bytes.Compare(first, lo) >= 0) && (hi == nil || bytes.Compare(end, hi) <= 0):
		return overlapWhole
	}
	return overlapPartial
}

// hasKeysIn reports whether f holds a key in [lo, hi) within its bounds:
// one seek, reading at most a block or two (a file spanning a range may hold
// nothing in it, and then needs no rewrite).
func hasKeysIn(f *tableFile, lo, hi []byte) (bool, error) {
	l, u, ok := intersect(f.lower(), f.upper(), lo, hi)
	if !ok {
		return false, nil
	}
	rd, err := f.reader()
	if err != nil {
		return false, fmt.Errorf("tablet: drop range: %w", err)
	}
	it := rd.NewIter(l, u)
	found := it.First()
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("tablet: drop range: read %s: %w", f.path, err)
	}
	return found, nil
}

// copyOutside adds f's entries outside [lo, hi), within f's bounds, in key
// order, reading neither the dropped part nor anything past the bounds.
func copyOutside(ctx context.Context, f *tableFile, lo, hi []byte, add func(k, v []byte) error) error {
	var parts [][2][]byte
	if lo != nil {
		if l, u, ok := intersect(f.lower(), f.upper(), nil, lo); ok {
			parts = append(parts, [2][]byte{l, u})
		}
	}
	if hi != nil {
		if l, u, ok := intersect(f.lower(), f.upper(), hi, nil); ok {
			parts = append(parts, [2][]byte{l, u})
		}
	}
	rd, err := f.reader()
	if err != nil {
		return err
	}
	n := 0
	for _, b := range parts {
		it := rd.NewIter(b[0], b[1])
		for ok := it.First(); ok; ok = it.Next() {
			if n++; n%4096 == 0 {
				if err := ctx.Err(); err != nil {
					_ = it.Close()
					return err
				}
			}
			if err := add(it.Key(), it.Value()); err != nil {
				_ = it.Close()
				return err
			}
		}
		err := it.Err()
		if cerr := it.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("tablet: drop range: read %s: %w", f.path, err)
		}
	}
	return nil
}
