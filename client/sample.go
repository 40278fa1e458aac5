package client

import (
	"context"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/locator"
)

// KeySample is a row key splitting a table into pieces of about
// OffsetBytes bytes before it (counted from the table's start).
type KeySample struct {
	Key         []byte
	OffsetBytes int64
}

// SampleRowKeys returns sample row keys of the whole table in key order,
// tablet by tablet, with offsets made cumulative across tablets: useful to
// split a scan into pieces of similar size.
func (t *Table) SampleRowKeys(ctx context.Context) ([]KeySample, error) {
	var out []KeySample
	pos := []byte{}
	var base int64
	for {
		var samples []*tabulapb.SampleRowKeysResponse_Sample
		var tablet locator.Tablet
		err := t.c.do(ctx, t.name, pos, true, func(ctx context.Context, tab locator.Tablet, ts tabulapb.TabletServerClient) error {
			resp, err := ts.SampleRowKeys(ctx, &tabulapb.SampleRowKeysRequest{Tablet: tab.Ref()})
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
		if len(tablet.End) == 0 {
			return out, nil
		}
		pos = tablet.End
	}
}
