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

// aggregation says how the entries of one (column, timestamp) of a family
// combine.
type aggregation struct {
	// vt is the family's value type: for Bytes the newest entry replaces
	// the others; for an aggregate type every live entry (each an
	// AddToCell or MergeToCell input, or an earlier merge of some) merges
	// into one cell.
	vt families.ValueType
	// keepParts, in modeMerge only, emits the live entries of an
	// aggregate cell each as it is instead of one merged entry. A merged
	// entry carries one sequence number (its newest part's), so it is
	// right only if no tombstone outside the merge can fall between the
	// parts' sequence numbers: such a tombstone would delete the older
	// parts and not the newer, and no single sequence number says that
	// (compactFamily decides).
	keepParts bool
}

// assembleFamily resolves one row's entries of one family, in key order.
// Entries with a sequence number above snap are invisible. A family
// tombstone hides entries with a smaller sequence number; a column tombstone
// hides the column's entries with a smaller sequence number whose timestamp
// its range covers; of several entries for one (column, timestamp) only the
// newest counts, or, in an aggregate family, all the live ones merge into
// one cell (see aggregation). The GC policy then condemns by the version
// index among the live cells of each column (modeRead and modeMajor); a
// merged cell is one version.
func assembleFamily(es []rawEntry, snap uint64, p families.Policy, agg aggregation, mode assembleMode, emit func(e *rawEntry)) {
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
		if agg.vt.IsAggregate() {
			i = assembleAggregates(es, i, q, snap, famSeq, tombsCover(tombs), p, agg, mode, &rank, emit)
		}
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

// assembleOne is assembleFamily for a family with exactly one entry in the
// row (most rows of most tables: one cell, one version), without its
// general loop and callback: scans and compactions take most rows this
// way. simple is false for what it leaves to assembleFamily (tombstones,
// aggregates); emit says whether assembleFamily would emit the entry. It
// must agree with assembleFamily on every single entry in every mode
// (TestAssembleOneMatchesAssembleFamily).
func assembleOne(e *rawEntry, snap uint64, p *families.Policy, agg aggregation, mode assembleMode) (simple, emit bool) {
	if e.key.Kind != cell.KindSet || agg.vt.IsAggregate() {
		return false, false
	}
	if e.key.Seq > snap {
		return true, false
	}
	return true, mode == modeMerge || p.Unlimited() || !p.Condemned(e.key.Timestamp, 0)
}

// tomb is a live column tombstone of the column being assembled.
type tomb struct {
	seq        uint64
	start, end int64
}

// tombsCover returns whether one of tombs deletes an entry of the column.
type tombsCover []tomb

func (ts tombsCover) deletes(k *cell.Key) bool {
	for _, t := range ts {
		if t.seq > k.Seq && cell.DeleteRangeCovers(t.start, t.end, k.Timestamp) {
			return true
		}
	}
	return false
}

// assembleAggregates resolves the cells of column q of an aggregate family,
// starting at es[i], and returns the index past them. The entries of one
// timestamp (newest sequence number first) merge: those visible at snap
// and deleted neither by the family tombstone (famSeq) nor a column
// tombstone make one cell, whose value is their aggregate and whose key is
// the newest live entry's. rank counts the column's versions for the GC
// policy.
//
// A stored value that is not 8 bytes is left out of the aggregate: SetCell
// is refused into aggregate families and a family's value type never
// changes while it holds data (SetFamilies drops the data of a family
// whose type changes), so none is ever written.
func assembleAggregates(es []rawEntry, i int, q []byte, snap, famSeq uint64, tombs tombsCover, p families.Policy, agg aggregation, mode assembleMode, rank *int, emit func(e *rawEntry)) int {
	unlimited := p.Unlimited()
	for i < len(es) && es[i].key.Kind == cell.KindSet && bytes.Equal(es[i].key.Qualifier, q) {
		ts := es[i].key.Timestamp
		j := i + 1
		for j < len(es) && es[j].key.Kind == cell.KindSet && es[j].key.Timestamp == ts && bytes.Equal(es[j].key.Qualifier, q) {
			j++
		}
		group := es[i:j]
		i = j
		parts := mode == modeMerge && agg.keepParts
		var first *rawEntry
		var acc int64
		live := 0
		for k := range group {
			e := &group[k]
			if e.key.Seq > snap || e.key.Seq < famSeq || tombs.deletes(&e.key) {
				continue
			}
			n, ok := families.DecodeAggregate(e.value)
			if !ok {
				continue
			}
			if parts {
				// Condemned cells are kept in modeMerge: emit as we go.
				emit(e)
			}
			if first == nil {
				first, acc = e, n
			} else {
				acc = agg.vt.Merge(acc, n)
			}
			live++
		}
		if first == nil {
			continue
		}
		condemned := !unlimited && p.Condemned(ts, *rank)
		*rank++
		if parts || (condemned && mode != modeMerge) {
			continue
		}
		if live == 1 {
			emit(first)
			continue
		}
		merged := rawEntry{enc: first.enc, key: first.key, value: families.EncodeAggregate(acc)}
		emit(&merged)
	}
	return i
}

// rowBuffer collects one row's entries of one family, copying them out of
// iterators whose buffers move on. A row starts with startRow, which
// decodes the row once; each family's entries then follow startFamily, and
// add decodes only what follows the row prefix of each key.
type rowBuffer struct {
	arena   []byte
	entries []rawEntry
	// reuse lets startRow recycle the arena; only when nothing emitted
	// from a row outlives the next row (compaction, whose writer copies;
	// a scan with ReadOptions.ReuseCells).
	reuse bool
	// keepEnc keeps each entry's encoded key (rawEntry.enc), which only a
	// compaction, writing entries out again, needs.
	keepEnc bool
	// copyValues copies values into the arena too (without keepEnc), for
	// a read whose cells outlive the blocks they were read from (a point
	// read: its blocks are recycled once it returns).
	copyValues bool
	chunk      int    // size of the last arena chunk
	rowLen     int    // length of the current row prefix
	row        []byte // the current row, decoded, in the arena
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
		// Decode straight into the entry: a rawEntry is too large to
		// build and then copy once per cell of a scan, or to zero first
		// (DecodeKeyInRowTo sets every field of the key).
		n := len(b.entries)
		if n < cap(b.entries) {
			b.entries = b.entries[:n+1]
		} else {
			b.entries = append(b.entries, rawEntry{})
		}
		e := &b.entries[n]
		e.enc, e.value = nil, value[:len(value):len(value)]
		if err := cell.DecodeKeyInRowTo(&e.key, key, b.rowLen, b.row); err != nil {
			b.entries = b.entries[:len(b.entries)-1]
			return err
		}
		if b.copyValues && len(value) > 0 {
			e.value = b.alloc(len(value))
			copy(e.value, value)
		}
		if q := e.key.Qualifier; len(q) > 0 {
			e.key.Qualifier = b.alloc(len(q))
			copy(e.key.Qualifier, q)
		}
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
