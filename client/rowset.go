package client

import (
	"bytes"
	"sort"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// RowSet is a set of rows to read: keys, ranges, or a union of them. Build
// one with SingleRow, RowList, NewRange, PrefixRange, InfiniteRange or
// Union; a nil RowSet means the whole table.
type RowSet interface {
	spans() rowSpans
}

// rowRange is [start, end); a nil end is unbounded.
type rowRange struct{ start, end []byte }

// rowSpans is a normalized row set: sorted unique keys that no range
// covers, and sorted, non-empty, non-touching ranges.
type rowSpans struct {
	keys   [][]byte
	ranges []rowRange
}

func (s rowSpans) spans() rowSpans { return s }

// SingleRow is the set of one row.
func SingleRow(key []byte) RowSet { return normalize(rowSpans{keys: [][]byte{key}}) }

// RowList is the set of the given rows (in any order; duplicates count
// once).
func RowList(keys ...[]byte) RowSet { return normalize(rowSpans{keys: keys}) }

// NewRange is the set of rows in [start, end). A nil or empty start is the
// start of the table; a nil or empty end is the end of the table.
func NewRange(start, end []byte) RowSet {
	return normalize(rowSpans{ranges: []rowRange{{start: start, end: end}}})
}

// PrefixRange is the set of rows starting with prefix.
func PrefixRange(prefix []byte) RowSet { return NewRange(prefix, prefixEnd(prefix)) }

// InfiniteRange is the set of rows at or after start.
func InfiniteRange(start []byte) RowSet { return NewRange(start, nil) }

// Union is the set of rows in any of sets; a nil set among them is the
// whole table.
func Union(sets ...RowSet) RowSet {
	var all rowSpans
	for _, s := range sets {
		if s == nil {
			s = InfiniteRange(nil)
		}
		sp := s.spans()
		all.keys = append(all.keys, sp.keys...)
		all.ranges = append(all.ranges, sp.ranges...)
	}
	return normalize(all)
}

// prefixEnd is the smallest key greater than every key with prefix p, or
// nil when there is none (p empty or all 0xFF).
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// successor is the smallest key after k.
func successor(k []byte) []byte { return append(bytes.Clone(k), 0) }

// beforeEnd reports whether a < end, where a nil end is +infinity.
func beforeEnd(a, end []byte) bool { return end == nil || bytes.Compare(a, end) < 0 }

func normalize(s rowSpans) rowSpans {
	var rs []rowRange
	for _, r := range s.ranges {
		if len(r.end) == 0 {
			r.end = nil
		}
		if r.start == nil {
			r.start = []byte{}
		}
		if r.end != nil && bytes.Compare(r.start, r.end) >= 0 {
			continue
		}
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return bytes.Compare(rs[i].start, rs[j].start) < 0 })
	var merged []rowRange
	for _, r := range rs {
		if n := len(merged); n > 0 && (merged[n-1].end == nil || bytes.Compare(r.start, merged[n-1].end) <= 0) {
			// r starts at or before the previous range's end: extend it.
			last := &merged[n-1]
			if last.end != nil && (r.end == nil || bytes.Compare(r.end, last.end) > 0) {
				last.end = r.end
			}
			continue
		}
		merged = append(merged, r)
	}
	out := rowSpans{ranges: merged}
	keys := make([][]byte, 0, len(s.keys))
	for _, k := range s.keys {
		if k != nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return bytes.Compare(keys[i], keys[j]) < 0 })
	for i, k := range keys {
		if i > 0 && bytes.Equal(k, keys[i-1]) {
			continue
		}
		if out.coveredByRange(k) {
			continue
		}
		out.keys = append(out.keys, k)
	}
	return out
}

func (s rowSpans) coveredByRange(k []byte) bool {
	i := sort.Search(len(s.ranges), func(i int) bool { return bytes.Compare(s.ranges[i].start, k) > 0 }) - 1
	return i >= 0 && beforeEnd(k, s.ranges[i].end)
}

// contains reports whether row is in the set.
func (s rowSpans) contains(row []byte) bool {
	i := sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], row) >= 0 })
	if i < len(s.keys) && bytes.Equal(s.keys[i], row) {
		return true
	}
	return s.coveredByRange(row)
}

// first returns the smallest row of the set at or after pos.
func (s rowSpans) first(pos []byte) ([]byte, bool) {
	var best []byte
	found := false
	i := sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], pos) >= 0 })
	if i < len(s.keys) {
		best, found = s.keys[i], true
	}
	for _, r := range s.ranges {
		if !beforeEnd(pos, r.end) {
			continue // the range ends at or before pos
		}
		lo := r.start
		if bytes.Compare(pos, lo) > 0 {
			lo = pos
		}
		if !found || bytes.Compare(lo, best) < 0 {
			best, found = lo, true
		}
		break // ranges are sorted: later ones start later
	}
	return best, found
}

// last returns the highest part of the set below hi (nil: unbounded): a
// key (point, lo the key) or the range [lo, end) clipped to hi (end nil:
// unbounded); ok is false when the set has no row below hi.
func (s rowSpans) last(hi []byte) (lo, end []byte, point, ok bool) {
	var key []byte
	i := len(s.keys)
	if hi != nil {
		i = sort.Search(len(s.keys), func(i int) bool { return bytes.Compare(s.keys[i], hi) >= 0 })
	}
	if i > 0 {
		key = s.keys[i-1]
	}
	var rlo, rend []byte
	found := false
	for j := len(s.ranges) - 1; j >= 0; j-- {
		r := s.ranges[j]
		if hi != nil && bytes.Compare(r.start, hi) >= 0 {
			continue // the range starts at or after hi
		}
		rlo, rend, found = r.start, r.end, true
		if hi != nil && (rend == nil || bytes.Compare(hi, rend) < 0) {
			rend = hi
		}
		break // ranges are sorted: earlier ones end earlier
	}
	switch {
	case key != nil && (!found || (rend != nil && bytes.Compare(key, rend) >= 0)):
		return key, nil, true, true
	case found:
		return rlo, rend, false, true
	}
	return nil, nil, false, false
}

// clip returns the part of the set in [lo, hi) (hi empty: unbounded) as a
// proto RowSet.
func (s rowSpans) clip(lo, hi []byte) *tabulapb.RowSet {
	if len(hi) == 0 {
		hi = nil
	}
	out := &tabulapb.RowSet{}
	for _, k := range s.keys {
		if bytes.Compare(k, lo) >= 0 && beforeEnd(k, hi) {
			out.RowKeys = append(out.RowKeys, k)
		}
	}
	for _, r := range s.ranges {
		start, end := r.start, r.end
		if bytes.Compare(lo, start) > 0 {
			start = lo
		}
		if hi != nil && (end == nil || bytes.Compare(hi, end) < 0) {
			end = hi
		}
		if end != nil && bytes.Compare(start, end) >= 0 {
			continue
		}
		out.RowRanges = append(out.RowRanges, &tabulapb.RowRange{StartKey: start, EndKey: end})
	}
	return out
}
