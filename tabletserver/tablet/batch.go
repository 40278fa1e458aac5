package tablet

import (
	"bytes"
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
// one, and a SetCell after a delete survives it. DeleteRow becomes a family
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
func appendNormalized(dst []entry, muts []cell.Mutation, fams []string, now int64) []entry {
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
		case cell.SetCell:
			ts := m.Timestamp
			if ts == cell.ServerTimestamp {
				ts = now
			}
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
					return cell.DeleteRangeCovers(start, end, e.timestamp)
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
	// slices, not sort.SliceStable: the latter allocates a reflective
	// swapper on every write.
	slices.SortStableFunc(es, func(a, b entry) int { return strings.Compare(a.family, b.family) })
	return es
}
