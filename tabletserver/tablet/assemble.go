package tablet

import (
	"bytes"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
)

// rawEntry is one internal entry of a row, decoded; enc, key's slices and
// value are owned by the row being assembled.
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
// iterators whose buffers move on.
type rowBuffer struct {
	arena   []byte
	entries []rawEntry
	// reuse lets reset keep the arena; only when nothing emitted from a
	// row outlives the next row (compaction, whose writer copies).
	reuse bool
	chunk int // size of the last arena chunk
}

func (b *rowBuffer) reset() {
	if b.reuse {
		b.arena = b.arena[:0]
	} else {
		// Keep appending after the previous row's bytes, which cells
		// handed out still point into; they are never overwritten.
		b.arena = b.arena[len(b.arena):]
	}
	b.entries = b.entries[:0]
}

// add copies key and value in. Keys that do not decode are reported.
func (b *rowBuffer) add(key, value []byte) error {
	// Copy into fresh memory when the arena would grow, so earlier
	// entries' slices stay valid.
	need := len(key) + len(value)
	if cap(b.arena)-len(b.arena) < need {
		// Grow chunk sizes geometrically from 512 bytes (a point read stays
		// small) to 32 KiB (a scan amortizes its allocations).
		b.chunk = min(max(2*b.chunk, 512), 32<<10)
		n := max(b.chunk, need)
		b.arena = make([]byte, 0, n)
	}
	off := len(b.arena)
	b.arena = append(b.arena, key...)
	b.arena = append(b.arena, value...)
	enc := b.arena[off : off+len(key) : off+len(key)]
	val := b.arena[off+len(key) : off+need : off+need]
	k, err := cell.DecodeKey(enc)
	if err != nil {
		return err
	}
	b.entries = append(b.entries, rawEntry{enc: enc, key: k, value: val})
	return nil
}
