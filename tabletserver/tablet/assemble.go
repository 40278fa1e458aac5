package tablet

import (
	"bytes"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// rawEntry is one internal entry of a row, decoded; enc (nil unless the
// rowBuffer keeps it) and key's slices are owned by the row being
// assembled, value aliases immutable memory of the source (see
// rowBuffer.add).
type rawEntry struct {
	enc   []byte
	key   cell.Key
	value []byte
}

// assembleMode says what the row assembler emits.
type assembleMode uint8

const (
	// modeRead emits the cells a reader sees: live and not condemned.
	modeRead assembleMode = iota
	// modeMerge (merging compaction) emits the tombstones and every live
	// cell, dropping only what a tombstone of the same inputs hides and
	// older versions of the same (column, timestamp).
	modeMerge
	// modeMajor (major compaction) emits live, uncondemned cells only.
	modeMajor
)

// assembleFamily resolves one row's entries of one family, in key order.
// Entries with a sequence number above snap are invisible. A family
// tombstone hides entries with a smaller sequence number; a column tombstone
// hides the column's entries with a smaller sequence number whose timestamp
// its range covers; of several entries for one (column, timestamp) only the
// newest counts. The GC policy then condemns by the version index among the
// live cells of each column (modeRead and modeMajor).
func assembleFamily(es []rawEntry, snap uint64, p families.Policy, mode assembleMode, emit func(e *rawEntry)) {
	var famSeq uint64
	var famTomb *rawEntry
	i := 0
	for ; i < len(es) && es[i].key.Kind == cell.KindDeleteFamily; i++ {
		if s := es[i].key.Seq; s <= snap && s > famSeq {
			famSeq, famTomb = s, &es[i]
		}
	}
	if mode == modeMerge && famTomb != nil {
		emit(famTomb)
	}
	unlimited := p.Unlimited()
	type tomb struct {
		seq        uint64
		start, end int64
	}
	var tombs []tomb
	for i < len(es) {
		// One column: its tombstones, then its cells.
		q := es[i].key.Qualifier
		tombs = tombs[:0]
		for ; i < len(es) && es[i].key.Kind == cell.KindDeleteColumn && bytes.Equal(es[i].key.Qualifier, q); i++ {
			e := &es[i]
			if e.key.Seq > snap || e.key.Seq <= famSeq {
				continue
			}
			start, end, err := cell.DecodeDeleteRange(e.value)
			if err != nil {
				continue // not written by us; treat as no delete
			}
			tombs = append(tombs, tomb{e.key.Seq, start, end})
			if mode == modeMerge {
				emit(e)
			}
		}
		rank := 0
		haveTs := false
		var lastTs int64
		for ; i < len(es) && es[i].key.Kind == cell.KindSet && bytes.Equal(es[i].key.Qualifier, q); i++ {
			e := &es[i]
			if e.key.Seq > snap {
				continue
			}
			if haveTs && e.key.Timestamp == lastTs {
				continue // an older write of the same (column, timestamp)
			}
			haveTs, lastTs = true, e.key.Timestamp
			if e.key.Seq < famSeq {
				continue
			}
			deleted := false
			for _, t := range tombs {
				if t.seq > e.key.Seq && cell.DeleteRangeCovers(t.start, t.end, e.key.Timestamp) {
					deleted = true
					break
				}
			}
			if deleted {
				continue
			}
			condemned := !unlimited && p.Condemned(e.key.Timestamp, rank)
			rank++
			if condemned && mode != modeMerge {
				continue
			}
			emit(e)
		}
		// Defensive: an entry out of the expected order (should not happen
		// with well-formed keys) must not stall the loop.
		if i < len(es) && es[i].key.Kind == cell.KindDeleteFamily {
			i++
		}
	}
}

// rowBuffer collects one row's entries of one family, copying them out of
// iterators whose buffers move on. A row starts with startRow, which
// decodes the row once; each family's entries then follow startFamily, and
// add decodes only what follows the row prefix of each key.
type rowBuffer struct {
	arena   []byte
	entries []rawEntry
	// reuse lets startRow recycle the arena; only when nothing emitted
	// from a row outlives the next row (compaction, whose writer copies).
	reuse bool
	// keepEnc keeps each entry's encoded key (rawEntry.enc), which only a
	// compaction, writing entries out again, needs.
	keepEnc bool
	chunk   int    // size of the last arena chunk
	rowLen  int    // length of the current row prefix
	row     []byte // the current row, decoded, in the arena
}

// alloc returns n bytes of the arena. With reuse unset, bytes handed out
// are never written again: cells handed out point into them.
func (b *rowBuffer) alloc(n int) []byte {
	if cap(b.arena)-len(b.arena) < n {
		// Fresh memory when the arena would grow, so earlier slices stay
		// valid. Chunk sizes grow geometrically from 128 bytes (a point
		// read stays small) to 32 KiB (a scan amortizes its allocations).
		b.chunk = min(max(2*b.chunk, 128), 32<<10)
		b.arena = make([]byte, 0, max(b.chunk, n))
	}
	off := len(b.arena)
	b.arena = b.arena[:off+n]
	return b.arena[off : off+n : off+n]
}

// startRow begins the row of key (any of the row's encoded keys) and
// returns the decoded row, which stays valid like the arena's other bytes,
// and the length of the row prefix that every entry of the row starts with.
func (b *rowBuffer) startRow(key []byte) (row []byte, prefixLen int, err error) {
	if b.reuse {
		b.arena = b.arena[:0]
	}
	b.entries = b.entries[:0]
	// The decoded row is never longer than the key.
	dst := b.alloc(len(key))[:0]
	row, n, err := cell.AppendKeyRow(dst, key)
	if err != nil {
		return nil, 0, err
	}
	// Give back what the row did not use.
	b.arena = b.arena[:len(b.arena)-len(key)+len(row)]
	b.rowLen, b.row = n, row[:len(row):len(row)]
	return b.row, n, nil
}

// startFamily empties the entries for the next family of the row.
func (b *rowBuffer) startFamily() { b.entries = b.entries[:0] }

// add copies key in and keeps value as it is. key must start with the
// current row's prefix. Keys that do not decode are reported.
//
// Only the key is copied: iterators reuse their key buffers, but values
// alias memory that is never written again (a decoded SSTable block, or a
// memtable node's copy made at insert), so cells may point into it for as
// long as they live. Copying values made up most of a scan's memory
// traffic.
//
// Without keepEnc (reads) not even the key is kept: only its qualifier is
// copied, which is all a cell needs beyond the row.
func (b *rowBuffer) add(key, value []byte) error {
	if !b.keepEnc {
		k, err := cell.DecodeKeyInRow(key, b.rowLen, b.row)
		if err != nil {
			return err
		}
		if len(k.Qualifier) > 0 {
			q := b.alloc(len(k.Qualifier))
			copy(q, k.Qualifier)
			k.Qualifier = q
		}
		b.entries = append(b.entries, rawEntry{key: k, value: value[:len(value):len(value)]})
		return nil
	}
	enc := b.alloc(len(key))
	copy(enc, key)
	k, err := cell.DecodeKeyInRow(enc, b.rowLen, b.row)
	if err != nil {
		return err
	}
	b.entries = append(b.entries, rawEntry{enc: enc, key: k, value: value[:len(value):len(value)]})
	return nil
}
