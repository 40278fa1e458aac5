package client

import (
	"bytes"
	"context"

	"github.com/tabuladb/tabula/cell"
)

// KeyRange is the rows [Start, End) with the approximate size of their
// data; a nil Start is the table's start, a nil End its end.
type KeyRange struct {
	Start, End []byte
	SizeBytes  int64
}

// KeyRanges cuts the rows [start, end) (nil: unbounded) into consecutive
// ranges of about targetBytes each, at keys of SampleRowKeys asked for
// samples every targetBytes of the tablets holding the range: finer than
// tablets, and the same cut for every caller that asks the same table at
// the same time. A job runs one worker per range (docs/OPERATIONS.md
// "Cutting a table for parallel jobs"). Sizes are estimates from the
// SSTables' indexes (the memtables' bytes count at their tablet's end);
// a last range shorter than half the target is joined to the one before.
func (t *Table) KeyRanges(ctx context.Context, start, end []byte, targetBytes int64) ([]KeyRange, error) {
	if targetBytes <= 0 {
		return nil, cell.Invalidf("target size %d is not positive", targetBytes)
	}
	if len(start) > 0 && len(end) > 0 && bytes.Compare(start, end) >= 0 {
		return nil, cell.Invalidf("start %q is not before end %q", start, end)
	}
	samples, err := t.SampleRowKeys(ctx, SampleTargetBytes(targetBytes), SampleRange(start, end))
	if err != nil {
		return nil, err
	}
	return cutRanges(samples, start, end, targetBytes), nil
}

// cutRanges cuts [start, end) at keys of samples (cumulative offsets, in
// key order, ending with the end of the last tablet sampled) into ranges
// of about target bytes: each cut at the sample nearest the target.
func cutRanges(samples []KeySample, start, end []byte, target int64) []KeyRange {
	if len(start) == 0 {
		start = nil
	}
	if len(end) == 0 {
		end = nil
	}
	// The offset of start: the last sample at or before it (the first
	// tablet sampled holds start).
	var base int64
	var inside []KeySample
	endOff := int64(-1)
	for _, s := range samples {
		switch {
		case len(s.Key) > 0 && start != nil && bytes.Compare(s.Key, start) <= 0:
			base = s.OffsetBytes
		case len(s.Key) > 0 && (end == nil || bytes.Compare(s.Key, end) < 0):
			inside = append(inside, s)
		case endOff < 0:
			endOff = s.OffsetBytes // the first sample at or past end
		}
	}
	if endOff < 0 { // no sample past the range: its last is the end
		endOff = base
		if len(inside) > 0 {
			endOff = inside[len(inside)-1].OffsetBytes
		}
	}
	var out []KeyRange
	lo, loOff := start, base
	for i := 0; i < len(inside); i++ {
		s := inside[i]
		if s.OffsetBytes-loOff < target {
			continue
		}
		// Cut here, or at the sample before when it is nearer the target.
		if i > 0 && bytes.Compare(inside[i-1].Key, lo) > 0 {
			if prev := inside[i-1]; target-(prev.OffsetBytes-loOff) < s.OffsetBytes-loOff-target {
				s, i = prev, i-1
			}
		}
		out = append(out, KeyRange{Start: lo, End: s.Key, SizeBytes: s.OffsetBytes - loOff})
		lo, loOff = s.Key, s.OffsetBytes
	}
	last := KeyRange{Start: lo, End: end, SizeBytes: max(endOff-loOff, 0)}
	if n := len(out); n > 0 && last.SizeBytes < target/2 {
		out[n-1].End, out[n-1].SizeBytes = end, out[n-1].SizeBytes+last.SizeBytes
		return out
	}
	return append(out, last)
}

// PrefixEnd is the smallest key after every key starting with p, nil if
// none (p empty or all 0xFF): the end of PrefixRange(p).
func PrefixEnd(p []byte) []byte { return prefixEnd(p) }
