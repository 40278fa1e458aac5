package client

import (
	"bytes"
	"context"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/locator"
)

// KeySample is a row key splitting a table into pieces of about
// OffsetBytes bytes before it (counted from the table's start, or from the
// start of the first tablet sampled with SampleRange).
type KeySample struct {
	Key         []byte
	OffsetBytes int64
}

// SampleOption changes SampleRowKeys.
type SampleOption interface{ applySample(*sampleSettings) }

type sampleSettings struct {
	target     int64
	start, end []byte
}

type sampleOptionFunc func(*sampleSettings)

func (f sampleOptionFunc) applySample(s *sampleSettings) { f(s) }

// SampleTargetBytes asks for a sample about every n bytes of each
// tablet's data (the servers' default, 256 MiB, when n is 0). Smaller
// values cut the table finer than its tablets: a job can split its work
// into pieces of about n bytes.
func SampleTargetBytes(n int64) SampleOption {
	return sampleOptionFunc(func(s *sampleSettings) { s.target = n })
}

// SampleRange samples only the tablets holding rows of [start, end) (nil
// or empty end: to the table's end). The samples and tablet ends of those
// tablets are returned whole, some possibly outside [start, end); offsets
// count from the start of the first tablet sampled.
func SampleRange(start, end []byte) SampleOption {
	return sampleOptionFunc(func(s *sampleSettings) { s.start, s.end = start, end })
}

// SampleRowKeys returns sample row keys of the whole table in key order,
// tablet by tablet, with offsets made cumulative across tablets: useful to
// split a scan into pieces of similar size. Each tablet answers keys about
// every SampleTargetBytes of its data, then its end key (empty for the
// table's end) at its size.
func (t *Table) SampleRowKeys(ctx context.Context, opts ...SampleOption) ([]KeySample, error) {
	var set sampleSettings
	for _, o := range opts {
		o.applySample(&set)
	}
	var out []KeySample
	pos := append([]byte{}, set.start...)
	var base int64
	for {
		var samples []*tabulapb.SampleRowKeysResponse_Sample
		var tablet locator.Tablet
		err := t.c.do(ctx, t.name, pos, true, func(ctx context.Context, tab locator.Tablet, ts tabulapb.TabletServerClient) error {
			resp, err := ts.SampleRowKeys(ctx, &tabulapb.SampleRowKeysRequest{Tablet: tab.Ref(), TargetBytes: set.target})
			if err != nil {
				return err
			}
			samples, tablet = resp.GetSamples(), tab
			return nil
		})
		if err != nil {
			return nil, err
		}
		last := base
		for _, s := range samples {
			off := base + s.GetOffsetBytes()
			out = append(out, KeySample{Key: s.GetRowKey(), OffsetBytes: off})
			if off > last {
				last = off
			}
		}
		base = last
		if len(tablet.End) == 0 || (len(set.end) > 0 && bytes.Compare(tablet.End, set.end) >= 0) {
			return out, nil
		}
		pos = tablet.End
	}
}
