package tabletserver

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

// TestSampleRowKeysEveryTargetBytes: a tablet [k0100, k0900) of 1 KB rows
// answers samples about every target_bytes, sorted, strictly inside its
// range, then its end with its size (the memtable's bytes included); the
// default interval (256 MiB) leaves only the end; a negative one is
// refused.
func TestSampleRowKeysEveryTargetBytes(t *testing.T) {
	e := newEnv(t)
	srv := e.start(nil)
	c := e.dial(srv)
	ref := e.load(c, e.assign("t1", []byte("k0100"), []byte("k0900"), srv, 1))
	val := strings.Repeat("v", 1000)
	var entries []*tabulapb.MutateRowsRequest_Entry
	for i := 100; i < 900; i++ {
		entries = append(entries, &tabulapb.MutateRowsRequest_Entry{Tablet: ref, RowKey: fmt.Appendf(nil, "k%04d", i),
			Mutations: []*tabulapb.Mutation{set("cf", "q", 1, val)}})
	}
	resp, err := c.MutateRows(e.ctx, &tabulapb.MutateRowsRequest{Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range resp.Entries {
		if en.Code != 0 {
			t.Fatalf("entry %d: %s", en.Index, en.Message)
		}
	}
	if _, err := c.FlushTablet(e.ctx, ref); err != nil {
		t.Fatal(err)
	}
	const target = 64 << 10
	sample := func(target int64) []*tabulapb.SampleRowKeysResponse_Sample {
		t.Helper()
		r, err := c.SampleRowKeys(e.ctx, &tabulapb.SampleRowKeysRequest{Tablet: ref, TargetBytes: target})
		if err != nil {
			t.Fatal(err)
		}
		return r.Samples
	}
	ss := sample(target)
	end := ss[len(ss)-1]
	if string(end.RowKey) != "k0900" || end.OffsetBytes < 800_000 || end.OffsetBytes > 900_000 {
		t.Fatalf("last sample %q at %d: want the tablet end k0900 at about 800 KB", end.RowKey, end.OffsetBytes)
	}
	inner := ss[:len(ss)-1]
	if n := int64(len(inner)); n < end.OffsetBytes/(target+16<<10)-1 || n > end.OffsetBytes/target {
		t.Fatalf("%d samples every %d of %d bytes", n, target, end.OffsetBytes)
	}
	prev := &tabulapb.SampleRowKeysResponse_Sample{RowKey: []byte("k0100")}
	for _, s := range inner {
		if bytes.Compare(s.RowKey, prev.RowKey) <= 0 || bytes.Compare(s.RowKey, end.RowKey) >= 0 {
			t.Fatalf("sample %q after %q, tablet end %q", s.RowKey, prev.RowKey, end.RowKey)
		}
		// One row is 1 KB: a sample is target bytes on, give or take a block.
		if gap := s.OffsetBytes - prev.OffsetBytes; gap < target || gap > target+16<<10 {
			t.Fatalf("sample %q at %d, previous %q at %d", s.RowKey, s.OffsetBytes, prev.RowKey, prev.OffsetBytes)
		}
		prev = s
	}
	if d := sample(0); len(d) != 1 || string(d[0].RowKey) != "k0900" || d[0].OffsetBytes != end.OffsetBytes {
		t.Fatalf("default interval: %v; want only the end at %d", d, end.OffsetBytes)
	}
	// The memtable counts in the size, not among the samples.
	if err := put(e.ctx, c, ref, "k0500x", set("cf", "q", 2, val)); err != nil {
		t.Fatal(err)
	}
	if again := sample(target); len(again) != len(ss) || again[len(again)-1].OffsetBytes <= end.OffsetBytes {
		t.Fatalf("after a write to the memtable: %d samples, end at %d; want %d, past %d", len(again), again[len(again)-1].OffsetBytes, len(ss), end.OffsetBytes)
	}
	_, err = c.SampleRowKeys(e.ctx, &tabulapb.SampleRowKeysRequest{Tablet: ref, TargetBytes: -1})
	testkit.WantCode(t, "a negative target", err, codes.InvalidArgument, "target_bytes")
}
