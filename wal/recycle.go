package wal

// Segment recycling (docs/CONTRACTS.md §3 "Recycling"). On ext4, an
// fsync after appending to a file also commits the file's new size and
// extents to the journal; an fsync after overwriting blocks the file
// already has commits only the data, and costs well under half as much
// (docs/BENCHMARKS.md).
// So, as pebble does with its WAL files, RemoveBefore keeps up to
// Options.RecycleSegments of the segments it drops, renamed to
// "%016d.recycle" (by their last segment number), and the next rotation
// renames one of them to the new segment's name and overwrites it from
// offset 0: header, then records. Until the segment is closed, the
// bytes after its last record are those of the file's earlier lives;
// closing it (rotation or Close) cuts them, durably, before a next
// segment exists. So only the last segment can hold stale bytes, and
// readers never take them for records of the new segment:
//
//   - the header names the segment it was written as, and each record's
//     checksum covers that number (format version 3, format.go): a
//     header or record of an earlier life fails as this segment's;
//   - the last segment ends at its last good record, a torn tail as
//     replay already knew it, proven by no record of this segment
//     following (stale records never pass as one);
//   - a segment before the last is cut at its end, and read only up to
//     the size the next segment's header records for it anyway.
//
// Segment numbers only grow within a log folder, so no earlier life of a
// file was the segment it now is. Crash safety, step by step:
//
//   - RemoveBefore's rename to the pool is not made durable: a crash may
//     bring the segment back under its old name, below every replay
//     point, like a deletion a crash undid; Open counts it as an old
//     segment and the next RemoveBefore deletes it.
//   - Open deletes every pooled file it finds (a crash left them): the
//     pool holds only files this Log pooled, all of format version 3.
//   - A rotation fsyncs the closing segment, cuts its stale bytes
//     (truncate and fsync: a crash before leaves it the last segment,
//     with a torn tail), then renames the pooled file to the new name
//     (never replacing an existing one, as Create is exclusive), writes
//     the header, fsyncs the file and then the folder, and only then
//     writes records. A crash before that leaves the new segment, the
//     last one, with its old header (another segment's, or torn) and
//     stale records, which replay reads as a torn segment holding
//     nothing (and cuts), after a whole predecessor; a header made
//     durable without its rename leaves a pooled file the next Open
//     deletes.
//   - Records then overwrite the old ones in order; a crash leaves the
//     new ones up to some point and then stale or torn bytes: a torn
//     tail, cut by the next replay.
//   - Close cuts the stale bytes of the active segment like a rotation,
//     so the segment the next Log starts (which records nothing of its
//     predecessor) follows a clean one; after a crash, the replay that
//     comes before Open cuts them.

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tabuladb/tabula/vfs"
)

// pooled is a segment file kept for reuse.
type pooled struct {
	num  uint64 // the segment it was last; it is named poolName(num)
	size int64
}

// poolName returns the name a segment numbered n has in the pool.
func poolName(n uint64) string { return fmt.Sprintf("%016d.recycle", n) }

// parsePoolName returns the number of a pooled file's name.
func parsePoolName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, ".recycle")
	if !ok || len(digits) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}

func (l *Log) poolPath(n uint64) string { return filepath.Join(l.opts.Dir, poolName(n)) }

// removeLeftovers deletes the pooled files a Log that crashed left in
// dir. They are not segments (listSegments skips them); deleting them
// keeps the pool to files this Log pooled itself. A failure only leaves
// a file behind for the next Open.
func removeLeftovers(fsys vfs.FS, dir string) {
	entries, err := fsys.List(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, ok := parsePoolName(e.Name); ok && !e.IsDir {
			_ = fsys.Remove(filepath.Join(dir, e.Name))
		}
	}
}

// recycling reports whether the log keeps segments for reuse.
func (l *Log) recycling() bool {
	return l.reuser != nil && l.opts.RecycleSegments > 0 && !l.noReuse.Load()
}

// poolPickLocked chooses, among doomed, the segments RemoveBefore moves
// to the pool instead of deleting them: the largest of those this Log
// wrote (format version 3), as many as the pool has room for. They are
// counted as pending until poolAddLocked. Called with mu held.
func (l *Log) poolPickLocked(doomed []segmentInfo) map[uint64]bool {
	room := l.opts.RecycleSegments - len(l.pool) - l.poolPending
	if !l.recycling() || room <= 0 {
		return nil
	}
	var mine []segmentInfo
	for _, s := range doomed {
		if s.mine {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b segmentInfo) int { return cmp.Compare(b.size, a.size) })
	keep := map[uint64]bool{}
	for _, s := range mine[:min(room, len(mine))] {
		keep[s.num] = true
	}
	l.poolPending += len(keep)
	return keep
}

// toPool renames segment s to its pool name. It reports whether s is now
// pooled; if not, the caller deletes it.
func (l *Log) toPool(s segmentInfo) bool {
	err := l.opts.FS.Rename(segmentPath(l.opts.Dir, s.num), l.poolPath(s.num))
	if err != nil && !errors.Is(err, vfs.ErrNotApplied) {
		// Maybe renamed: the caller deletes the segment's name, and this
		// one goes too.
		_ = l.opts.FS.Remove(l.poolPath(s.num))
	}
	return err == nil
}

// poolAddLocked adds the files RemoveBefore moved to the pool, of the
// picked ones (see poolPickLocked). A closed log keeps none: it returns
// those the caller must delete. Called with mu held.
func (l *Log) poolAddLocked(picked int, files []pooled) (drop []pooled) {
	l.poolPending -= picked
	if l.closed {
		return files
	}
	l.pool = append(l.pool, files...)
	return nil
}

// poolTakeLocked takes the largest pooled file, for the next segment.
// Called with mu held.
func (l *Log) poolTakeLocked() *pooled {
	if len(l.pool) == 0 || !l.recycling() {
		return nil
	}
	i := 0
	for j, p := range l.pool {
		if p.size > l.pool[i].size {
			i = j
		}
	}
	p := l.pool[i]
	l.pool = slices.Delete(l.pool, i, i+1)
	return &p
}

// openSegment returns the file of a new segment at path, open for
// writing from offset 0: p renamed to it when p is set, or a new file.
// A pooled file that cannot be reused is deleted and a new file created
// instead, except when path exists (another writer made it).
func (l *Log) openSegment(path string, p *pooled) (vfs.Writable, error) {
	if p != nil {
		f, err := l.reuser.Reuse(l.poolPath(p.num), path)
		switch {
		case err == nil:
			return f, nil
		case errors.Is(err, fs.ErrExist):
			return nil, fmt.Errorf("wal: create segment: %w", err)
		case errors.Is(err, errors.ErrUnsupported):
			l.noReuse.Store(true)
		}
		_ = l.opts.FS.Remove(l.poolPath(p.num))
	}
	f, err := l.opts.FS.Create(path)
	if err != nil {
		return nil, fmt.Errorf("wal: create segment: %w", err)
	}
	return f, nil
}

// dropPool deletes the pooled files (on Close: the pool is only for this
// Log; a failure leaves a file for the next Open to delete).
func (l *Log) dropPool(files []pooled) {
	for _, p := range files {
		_ = l.opts.FS.Remove(l.poolPath(p.num))
	}
}
