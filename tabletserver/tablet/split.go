package tablet

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/manifest"
)

// SplitKey returns a middle row of the tablet, taken from the SSTable
// indexes and weighted by block size across families: the row where half of
// the data lies before it. It returns ErrNoSplitKey when no row splits the
// tablet into two non-empty parts (no data, or one row). Flush first to
// count the memtable's data.
func (t *Tablet) SplitKey() ([]byte, error) {
	v, err := t.currentVersion()
	if err != nil {
		return nil, err
	}
	defer v.unref()
	type point struct {
		row  []byte
		size uint64
	}
	var pts []point
	var total uint64
	var minRow []byte
	for _, name := range t.schema.Load().names {
		for _, f := range v.files[name] {
			rd, err := f.reader()
			if err != nil {
				return nil, err
			}
			for _, e := range rd.IndexEntries(f.lower(), f.upper()) {
				row, ok := rowOfKey(e.LastKey)
				if !ok {
					continue
				}
				pts = append(pts, point{row, e.Size})
				total += e.Size
			}
			// The file's first row within its bounds, to rule out a split
			// that leaves the left child empty.
			it := rd.NewIter(f.lower(), f.upper())
			if it.First() {
				if r, ok := rowOfKey(it.Key()); ok && (minRow == nil || bytes.Compare(r, minRow) < 0) {
					minRow = bytes.Clone(r)
				}
			}
			_ = it.Close()
		}
	}
	if len(pts) == 0 || minRow == nil {
		return nil, ErrNoSplitKey
	}
	sort.SliceStable(pts, func(i, j int) bool { return bytes.Compare(pts[i].row, pts[j].row) < 0 })
	var acc uint64
	idx := len(pts) - 1
	for i, p := range pts {
		acc += p.size
		if 2*acc >= total {
			idx = i
			break
		}
	}
	// Take the first candidate at or after the middle that is strictly
	// inside the tablet's data and range, else the last one before it.
	ok := func(r []byte) bool {
		return bytes.Compare(r, minRow) > 0 && t.inRange(r) && (t.start == nil || bytes.Compare(r, t.start) > 0)
	}
	for i := idx; i < len(pts); i++ {
		if ok(pts[i].row) {
			return bytes.Clone(pts[i].row), nil
		}
	}
	for i := idx - 1; i >= 0; i-- {
		if ok(pts[i].row) {
			return bytes.Clone(pts[i].row), nil
		}
	}
	return nil, ErrNoSplitKey
}

// rowOfKey returns the row of an encoded key (or of an index separator that
// at least starts with a whole row prefix).
func rowOfKey(k []byte) ([]byte, bool) {
	if key, err := cell.DecodeKey(k); err == nil {
		return key.Row, true
	}
	rp, err := cell.RowPrefix(k)
	if err != nil {
		return nil, false
	}
	fake := cell.AppendKey(nil, cell.Key{Kind: cell.KindDeleteFamily})
	// A family tombstone key of the row: the row prefix, then a fixed tail.
	fake = append(bytes.Clone(rp), fake[len(cell.EncodeRow(nil)):]...)
	key, err := cell.DecodeKey(fake)
	if err != nil || len(key.Row) == 0 {
		return nil, false
	}
	return key.Row, true
}

// Split splits the tablet at row (strictly inside its range) into a left
// child [Start, row) in leftDir and a right child [row, End) in rightDir.
// It blocks writes, flushes, and writes each child a manifest whose files
// are references to the parent's files restricted to the child's range (no
// data is copied); then it closes the parent. The parent's folder is left
// intact: delete it only when no child references it (see manifest.Referenced).
// Open the children with Open; their first compactions rewrite the
// references into files of their own.
func (t *Tablet) Split(ctx context.Context, row []byte, leftDir, rightDir string) error {
	if err := cell.ValidateRow(row); err != nil {
		return err
	}
	if (t.start != nil && bytes.Compare(row, t.start) <= 0) || (t.end != nil && bytes.Compare(row, t.end) >= 0) {
		return fmt.Errorf("%w: split row %q is not strictly inside [%q, %q)", ErrOutOfRange, row, t.start, t.end)
	}
	absParent, err := filepath.Abs(t.dir)
	if err != nil {
		return fmt.Errorf("tablet: %w", err)
	}
	children := []struct {
		dir        string
		start, end []byte
	}{{leftDir, t.start, row}, {rightDir, row, t.end}}
	for _, c := range children {
		a, err := filepath.Abs(c.dir)
		if err != nil {
			return fmt.Errorf("tablet: %w", err)
		}
		if a == absParent || leftDir == rightDir {
			return cell.Invalidf("split folders must differ from each other and from the parent's")
		}
		if _, found, err := manifest.Load(t.opts.FS, c.dir); err != nil || found {
			return cell.Invalidf("split folder %s already holds a tablet", c.dir)
		}
	}
	t.gate.Lock()
	defer t.gate.Unlock()
	if t.closed.Load() {
		return ErrClosed
	}
	t.flushMu.Lock()
	err = t.flushAllLocked(ctx)
	t.flushMu.Unlock()
	if err != nil {
		return err
	}
	// No compaction may change the files while the children copy the list.
	t.compactMu.Lock()
	t.editMu.Lock()
	v, verr := t.currentVersion()
	lastSeq, nextFile := t.flushedSeq, t.nextFileNum
	t.editMu.Unlock()
	if verr != nil {
		t.compactMu.Unlock()
		return verr
	}
	err = func() error {
		defer v.unref()
		for _, c := range children {
			guard := func() error { return t.checkGuard("write split child manifest") }
			if err := writeChild(t.opts, absParent, c.dir, c.start, c.end, v, lastSeq, nextFile, guard); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		t.compactMu.Unlock()
		for _, c := range children {
			_ = manifest.Remove(t.opts.FS, c.dir, t.opts.Epoch)
		}
		return err
	}
	// Mark the parent closed before another compaction can start: from
	// now on the children own (references to) its files, which must stay.
	t.closed.Store(true)
	t.compactMu.Unlock()
	return t.closeGated()
}

// writeChild writes a split child's manifest referencing the parent's
// files, at the parent's epoch (the child is opened at a later one, which
// seals it); guard is asked right before the manifest is saved.
func writeChild(opts Options, absParent, dir string, start, end []byte, v *version, lastSeq, nextFile uint64, guard func() error) error {
	fsys, epoch := opts.FS, opts.Epoch
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("tablet: split: %w", err)
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("tablet: split: %w", err)
	}
	st := manifest.State{ReplayPoint: 0, LastSeq: lastSeq, NextFileNum: nextFile,
		RangeStart: bytes.Clone(start), RangeEnd: bytes.Clone(end), Parent: filepath.Base(absParent)}
	if st.Files, err = boundedRefs(absParent, absDir, v, start, end); err != nil {
		return fmt.Errorf("tablet: split: %w", err)
	}
	if err := guard(); err != nil {
		return err
	}
	if err := manifest.SaveEpoch(fsys, dir, epoch, opts.manifestState(st)); err != nil {
		return fmt.Errorf("tablet: split: write child manifest: %w", err)
	}
	return nil
}

// boundedRefs returns the files of version v of the tablet in absParent as
// references from the tablet folder absDir, each bounded to the rows
// [start, end) (nil: unbounded) and files with no key there left out. A
// file v itself references (from an earlier split or merge) is named by
// its real place, so a reference never goes through another reference.
func boundedRefs(absParent, absDir string, v *version, start, end []byte) ([]manifest.FileRef, error) {
	var lo, hi []byte
	if start != nil {
		lo = cell.EncodeRow(start)
	}
	if end != nil {
		hi = cell.EncodeRow(end)
	}
	var out []manifest.FileRef
	for _, ref := range v.fileRefs() {
		l, u, ok := intersect(ref.Lower, ref.Upper, lo, hi)
		if !ok {
			continue
		}
		var f *tableFile
		for _, cand := range v.files[ref.Family] {
			if cand.ref.Path == ref.Path {
				f = cand
			}
		}
		if f != nil {
			// Skip files with no key in the child's part (the keys of
			// its record, which the split child's reference keeps).
			_, smallest, largest := f.keys()
			if (u != nil && bytes.Compare(smallest, u) >= 0) || (l != nil && bytes.Compare(largest, l) < 0) {
				continue
			}
		}
		rel, err := filepath.Rel(absDir, filepath.Join(absParent, filepath.FromSlash(ref.Path)))
		if err != nil {
			return nil, err
		}
		ref.Path = filepath.ToSlash(rel)
		ref.Lower, ref.Upper = bytes.Clone(l), bytes.Clone(u)
		out = append(out, ref)
	}
	return out, nil
}
