package tablet

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/tabuladb/tabula/cell"
)

// batchVersion is the format version of a batch record.
const batchVersion = 1

// A batch is one row's mutations as the engine stores them: the payload of
// one commit log record, and the entries inserted into the memtable, all
// under one sequence number.
//
// Record layout (integers are unsigned varints unless said otherwise):
//
//	+---------+-------------+---------+-----+-------+---------+-----+---------+
//	| version | seq (8, LE) | len row | row | count | entry 1 | ... | entry N |
//	+---------+-------------+---------+-----+-------+---------+-----+---------+
//	  1 byte    fixed so the seq can be patched in under the commit lock
//
//	entry:
//	+------+------------+--------+---------------+-----------+------------+-------+
//	| kind | len family | family | len qualifier | qualifier | ts (8, LE) | value |
//	+------+------------+--------+---------------+-----------+------------+-------+
//	  cell.Kind (1 byte)                                         len value + bytes
//
// A family tombstone has an empty qualifier and timestamp 0. A column
// tombstone's value is cell.AppendDeleteRange(start, end) and its timestamp
// is the range's start (see normalize). Decoding rejects unknown versions and
// kinds, lengths past the end, and trailing bytes.
type batch struct {
	seq     uint64
	row     []byte
	entries []entry
}

// entry is one internal entry of a batch, of one family.
type entry struct {
	family    string
	kind      cell.Kind
	qualifier []byte
	timestamp int64
	value     []byte
}

// batchSeqOffset is where the fixed-size sequence number sits in a record.
const batchSeqOffset = 1

// encode appends the record of b to dst.
func (b *batch) encode(dst []byte) []byte {
	// Size the record up front: growing it entry by entry cost several
	// allocations per write.
	n := 1 + 8 + binary.MaxVarintLen64*2 + len(b.row)
	for i := range b.entries {
		e := &b.entries[i]
		n += 1 + 8 + binary.MaxVarintLen64*3 + len(e.family) + len(e.qualifier) + len(e.value)
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, batchVersion)
	dst = binary.LittleEndian.AppendUint64(dst, b.seq)
	dst = binary.AppendUvarint(dst, uint64(len(b.row)))
	dst = append(dst, b.row...)
	dst = binary.AppendUvarint(dst, uint64(len(b.entries)))
	for i := range b.entries {
		e := &b.entries[i]
		dst = append(dst, byte(e.kind))
		dst = binary.AppendUvarint(dst, uint64(len(e.family)))
		dst = append(dst, e.family...)
		dst = binary.AppendUvarint(dst, uint64(len(e.qualifier)))
		dst = append(dst, e.qualifier...)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(e.timestamp))
		dst = binary.AppendUvarint(dst, uint64(len(e.value)))
		dst = append(dst, e.value...)
	}
	return dst
}

// batchDecoder reads a record; its errors wrap ErrCorrupt.
type batchDecoder struct {
	b   []byte
	err error
}

func (d *batchDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: batch record: %s", ErrCorrupt, what)
	}
}

func (d *batchDecoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || (n > 1 && d.b[n-1] == 0) { // overflow, short, or not minimal
		d.fail("bad " + what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *batchDecoder) fixed(what string) uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("short " + what)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *batchDecoder) bytes(what string) []byte {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what + " past the end")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// decodeBatch decodes a record. The batch aliases p; callers that keep it
// past p's lifetime copy it.
func decodeBatch(p []byte) (batch, error) {
	var b batch
	if len(p) < 1 || p[0] != batchVersion {
		return b, fmt.Errorf("%w: batch record: unknown format version", ErrCorrupt)
	}
	d := batchDecoder{b: p[1:]}
	b.seq = d.fixed("sequence number")
	b.row = d.bytes("row")
	n := d.uvarint("entry count")
	if d.err == nil && len(b.row) == 0 {
		d.fail("empty row")
	}
	if d.err == nil && n > uint64(len(d.b)) { // every entry takes more than a byte
		d.fail("entry count past the end")
	}
	for i := uint64(0); d.err == nil && i < n; i++ {
		var e entry
		if len(d.b) < 1 {
			d.fail("short entry")
			break
		}
		e.kind = cell.Kind(d.b[0])
		d.b = d.b[1:]
		if e.kind != cell.KindSet && e.kind != cell.KindDeleteColumn && e.kind != cell.KindDeleteFamily {
			d.fail(fmt.Sprintf("unknown entry kind %d", e.kind))
			break
		}
		e.family = string(d.bytes("family"))
		e.qualifier = d.bytes("qualifier")
		e.timestamp = int64(d.fixed("timestamp"))
		e.value = d.bytes("value")
		if d.err == nil && e.timestamp < 0 {
			d.fail("negative timestamp")
		}
		if d.err == nil && e.kind == cell.KindDeleteColumn {
			if _, _, err := cell.DecodeDeleteRange(e.value); err != nil {
				d.fail("bad delete range")
			}
		}
		if d.err == nil && e.kind == cell.KindDeleteFamily && (len(e.qualifier) != 0 || e.timestamp != 0 || len(e.value) != 0) {
			d.fail("family tombstone with a column")
		}
		b.entries = append(b.entries, e)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return batch{}, d.err
	}
	return b, nil
}

// key returns e's internal key at seq.
func (e *entry) key(row []byte, seq uint64) cell.Key {
	return cell.Key{Row: row, Qualifier: e.qualifier, Timestamp: e.timestamp, Seq: seq, Kind: e.kind}
}

// normalize turns one row's validated mutations into batch entries. All
// entries of a batch share one sequence number, and a tombstone hides only
// entries with a smaller one, so the order of mutations inside the request
// is resolved here: a delete removes the earlier entries of the batch it
// covers, a later SetCell of the same (column, timestamp) replaces an earlier
// one, and a SetCell after a delete survives it. AddToCell and MergeToCell
// count as SetCell here (see writesCell). DeleteRow becomes a family
// tombstone in every family of fams; server timestamps take now.
//
// A column tombstone's key carries the range start as its timestamp (not 0)
// so that two deletes of one column with different ranges in one batch get
// distinct keys; two with the same start merge into the wider range.
func normalize(muts []cell.Mutation, fams []string, now int64) []entry {
	return appendNormalized(nil, muts, fams, now)
}

// appendNormalized is normalize appending to dst (which it may overwrite
// past its length), so that a write can build its entries on the stack.
//
// It runs in O(n log n) for n mutations (a row may carry up to
// cell.MaxMutationsPerRow): instead of replaying the mutations against the
// entries built so far, it decides for each mutation whether a LATER one
// removes it:
//   - a family tombstone removes everything of its family before it, so
//     only the last one of each family, and what follows it, survive;
//   - a SetCell is removed by a later SetCell of the same (column,
//     timestamp), or by a later column delete covering its timestamp;
//   - a column delete is removed by a later one of the same (column, range
//     start), whose range then takes the union of both ends;
//
// and keeps the survivors in request order, grouped by family.
func appendNormalized(dst []entry, muts []cell.Mutation, fams []string, now int64) []entry {
	if len(muts) <= smallBatch {
		return appendNormalizedSmall(dst, muts, fams, now)
	}
	return appendNormalizedLarge(dst, muts, fams, now)
}

// appendNormalizedLarge is the O(n log n) appendNormalized.
func appendNormalizedLarge(dst []entry, muts []cell.Mutation, fams []string, now int64) []entry {
	// The last family tombstone of each family, by mutation index.
	lastDel := map[string]int{}
	for i := range muts {
		switch muts[i].Kind {
		case cell.DeleteFamily:
			lastDel[muts[i].Family] = i
		case cell.DeleteRow:
			for _, f := range fams {
				lastDel[f] = i
			}
		}
	}
	afterDel := func(i int, fam string) bool {
		d, ok := lastDel[fam]
		return !ok || i > d
	}
	// Column mutations that no family tombstone removes, grouped by
	// column, in request order within a group.
	var cols []int
	for i := range muts {
		if k := muts[i].Kind; (writesCell(k) || k == cell.DeleteColumn) && afterDel(i, muts[i].Family) {
			cols = append(cols, i)
		}
	}
	slices.SortFunc(cols, func(a, b int) int {
		ma, mb := &muts[a], &muts[b]
		if c := strings.Compare(ma.Family, mb.Family); c != 0 {
			return c
		}
		if c := bytes.Compare(ma.Qualifier, mb.Qualifier); c != 0 {
			return c
		}
		return a - b
	})
	survive := make([]bool, len(muts))
	ends := map[int]int64{} // merged range end of each surviving column delete
	for lo := 0; lo < len(cols); {
		hi := lo + 1
		for hi < len(cols) && muts[cols[hi]].Family == muts[cols[lo]].Family && bytes.Equal(muts[cols[hi]].Qualifier, muts[cols[lo]].Qualifier) {
			hi++
		}
		normalizeColumn(muts, cols[lo:hi], now, survive, ends)
		lo = hi
	}
	es := dst
	for i := range muts {
		m := &muts[i]
		switch m.Kind {
		case cell.SetCell, cell.AddToCell, cell.MergeToCell:
			if survive[i] {
				es = append(es, entry{family: m.Family, kind: cell.KindSet, qualifier: m.Qualifier, timestamp: stamp(m.Timestamp, now), value: m.Value})
			}
		case cell.DeleteColumn:
			if survive[i] {
				es = append(es, entry{family: m.Family, kind: cell.KindDeleteColumn, qualifier: m.Qualifier,
					timestamp: m.TimeStart, value: cell.AppendDeleteRange(nil, m.TimeStart, ends[i])})
			}
		case cell.DeleteFamily:
			if lastDel[m.Family] == i {
				es = append(es, entry{family: m.Family, kind: cell.KindDeleteFamily})
			}
		case cell.DeleteRow:
			for _, f := range fams {
				if lastDel[f] == i {
					es = append(es, entry{family: f, kind: cell.KindDeleteFamily})
				}
			}
		}
	}
	return sortByFamily(es)
}

// normalizeColumn decides which of one column's mutations (idx, in request
// order, none removed by a family tombstone) survive, and the merged range
// end of each surviving delete.
func normalizeColumn(muts []cell.Mutation, idx []int, now int64, survive []bool, ends map[int]int64) {
	type del struct {
		start, end int64 // end 0: unbounded
		at         int   // mutation index
	}
	if len(idx) == 1 { // the common case: nothing else touches the column
		i := idx[0]
		survive[i] = true
		if muts[i].Kind == cell.DeleteColumn {
			ends[i] = muts[i].TimeEnd
		}
		return
	}
	var dels []del
	lastSet := map[int64]int{}  // timestamp → index of the last SetCell
	merged := map[int64]int64{} // range start → union end so far
	lastDel := map[int64]int{}  // range start → index of the last delete
	for _, i := range idx {
		m := &muts[i]
		if writesCell(m.Kind) {
			lastSet[stamp(m.Timestamp, now)] = i
			continue
		}
		end := m.TimeEnd
		if old, ok := merged[m.TimeStart]; ok && (old == 0 || (end != 0 && old > end)) {
			end = old
		}
		merged[m.TimeStart] = end
		lastDel[m.TimeStart] = i
		// The sweep below uses the delete's own range: the merged one is
		// what the stored tombstone hides of earlier batches, but a set of
		// this batch between two deletes is removed only by what the
		// later delete itself covers.
		dels = append(dels, del{start: m.TimeStart, end: m.TimeEnd, at: i})
	}
	for start, i := range lastDel {
		survive[i] = true
		ends[i] = merged[start]
	}
	// A set survives if it is the last of its timestamp and no later
	// delete covers it: sweep the sets by timestamp, keeping the deletes
	// whose range has begun in a heap by index; expired ones are dropped
	// lazily (timestamps only grow, so they stay expired).
	type set struct {
		ts int64
		at int
	}
	sets := make([]set, 0, len(lastSet))
	for ts, i := range lastSet {
		sets = append(sets, set{ts, i})
	}
	slices.SortFunc(sets, func(a, b set) int { return cmpInt64(a.ts, b.ts) })
	slices.SortFunc(dels, func(a, b del) int { return cmpInt64(a.start, b.start) })
	h := &delHeap{}
	next := 0
	for _, s := range sets {
		for next < len(dels) && dels[next].start <= s.ts {
			heap.Push(h, delRef{at: dels[next].at, end: dels[next].end})
			next++
		}
		for h.Len() > 0 && (*h)[0].end != 0 && (*h)[0].end <= s.ts {
			heap.Pop(h)
		}
		survive[s.at] = h.Len() == 0 || (*h)[0].at < s.at
	}
}

// delRef is a column delete in the sweep of normalizeColumn.
type delRef struct {
	at  int
	end int64
}

// delHeap is a max-heap of deletes by mutation index.
type delHeap []delRef

func (h delHeap) Len() int           { return len(h) }
func (h delHeap) Less(i, j int) bool { return h[i].at > h[j].at }
func (h delHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *delHeap) Push(x any)        { *h = append(*h, x.(delRef)) }
func (h *delHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// writesCell reports whether a mutation kind writes a cell entry: SetCell,
// and AddToCell and MergeToCell, whose input is stored as a cell entry of
// their aggregate family (see aggregate.go; combineAggregates has already
// made the inputs of one request to one cell a single mutation, so the
// rules for SetCell hold for them too).
func writesCell(k cell.MutationKind) bool {
	return k == cell.SetCell || k == cell.AddToCell || k == cell.MergeToCell
}

func stamp(ts, now int64) int64 {
	if ts == cell.ServerTimestamp {
		return now
	}
	return ts
}

// smallBatch is the size up to which appendNormalized replays mutations
// directly: quadratic, but allocation-free and faster for the few
// mutations of a typical write.
const smallBatch = 16

// appendNormalizedSmall is appendNormalized by replaying each mutation
// against the entries built so far.
func appendNormalizedSmall(dst []entry, muts []cell.Mutation, fams []string, now int64) []entry {
	es := dst
	keep := func(pred func(e *entry) bool) {
		out := es[:0]
		for i := range es {
			if !pred(&es[i]) {
				out = append(out, es[i])
			}
		}
		es = out
	}
	addFamilyTombstone := func(f string) {
		keep(func(e *entry) bool { return e.family == f })
		es = append(es, entry{family: f, kind: cell.KindDeleteFamily})
	}
	for i := range muts {
		m := &muts[i]
		switch m.Kind {
		case cell.SetCell, cell.AddToCell, cell.MergeToCell:
			ts := stamp(m.Timestamp, now)
			keep(func(e *entry) bool {
				return e.kind == cell.KindSet && e.family == m.Family && e.timestamp == ts && bytes.Equal(e.qualifier, m.Qualifier)
			})
			es = append(es, entry{family: m.Family, kind: cell.KindSet, qualifier: m.Qualifier, timestamp: ts, value: m.Value})
		case cell.DeleteColumn:
			start, end := m.TimeStart, m.TimeEnd
			for j := range es {
				e := &es[j]
				if e.kind == cell.KindDeleteColumn && e.family == m.Family && e.timestamp == start && bytes.Equal(e.qualifier, m.Qualifier) {
					_, oldEnd, _ := cell.DecodeDeleteRange(e.value)
					if oldEnd == 0 || (end != 0 && oldEnd > end) {
						end = oldEnd
					}
				}
			}
			keep(func(e *entry) bool {
				if e.family != m.Family || !bytes.Equal(e.qualifier, m.Qualifier) {
					return false
				}
				switch e.kind {
				case cell.KindSet:
					// The delete's own range, not the merged one (see
					// normalizeColumn).
					return cell.DeleteRangeCovers(m.TimeStart, m.TimeEnd, e.timestamp)
				case cell.KindDeleteColumn:
					return e.timestamp == start
				}
				return false
			})
			es = append(es, entry{family: m.Family, kind: cell.KindDeleteColumn, qualifier: m.Qualifier,
				timestamp: start, value: cell.AppendDeleteRange(nil, start, end)})
		case cell.DeleteFamily:
			addFamilyTombstone(m.Family)
		case cell.DeleteRow:
			for _, f := range fams {
				addFamilyTombstone(f)
			}
		}
	}
	return sortByFamily(es)
}

// sortByFamily groups entries by family, keeping their order otherwise.
func sortByFamily(es []entry) []entry {
	// slices, not sort.SliceStable: the latter allocates a reflective
	// swapper on every write.
	slices.SortStableFunc(es, func(a, b entry) int { return strings.Compare(a.family, b.family) })
	return es
}
