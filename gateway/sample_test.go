package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"cloud.google.com/go/bigtable"
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/client"
	"github.com/tabuladb/tabula/gateway"
)

// TestSampleRowKeysCutsFinerThanTablets: with Options.SampleBytes of 32
// KiB, a table of two tablets holding about 400 KB of flushed data
// answers the Bigtable protocol with samples about 32 KiB apart inside
// each tablet, the tablets' boundary among them, in key order, then the
// empty key at the table's size; the official client reads them all.
func TestSampleRowKeysCutsFinerThanTablets(t *testing.T) {
	ctx := testContext(t)
	cli, err := client.NewClientWithOptions(ctx, client.Options{Masters: []string{cluster.MasterAddr()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	const every = 32 << 10
	p, err := gateway.Start("127.0.0.1:0", cli, gateway.Options{SampleBytes: every})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	c, a := officialClients(t, p.Addr())
	createTable(t, a, &bigtable.TableConf{TableID: "samples", SplitKeys: []string{"m"}, Families: map[string]bigtable.GCPolicy{"cf": bigtable.NoGcPolicy()}})
	tbl := c.Open("samples")
	var rows []string
	var muts []*bigtable.Mutation
	rng := rand.New(rand.NewPCG(1, 2)) // incompressible values
	for _, prefix := range []string{"a", "x"} {
		for i := range 200 {
			val := make([]byte, 1000)
			for j := range val {
				val[j] = byte(rng.Uint32())
			}
			rows = append(rows, fmt.Sprintf("%s%03d", prefix, i))
			muts = append(muts, set("cf", "q", 1000, string(val)))
		}
	}
	errs, err := tbl.ApplyBulk(ctx, rows, muts)
	if err != nil || errs != nil {
		t.Fatalf("ApplyBulk: %v %v", err, errs)
	}
	// Flush the table's tablets: samples come from SSTables.
	flushed := 0
	for _, srv := range cluster.Servers() {
		st, err := srv.ServerStats(ctx, &tabulapb.ServerStatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ts := range st.GetTablets() {
			if ts.GetTablet().GetTable() == "samples" {
				if _, err := srv.FlushTablet(ctx, ts.GetTablet()); err != nil {
					t.Fatal(err)
				}
				flushed++
			}
		}
	}
	if flushed != 2 {
		t.Fatalf("flushed %d tablets of the table, want 2", flushed)
	}

	conn, err := grpc.NewClient(p.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	raw := btpb.NewBigtableClient(conn)
	got := sampleAll(t, raw, &btpb.SampleRowKeysRequest{TableName: tablePath("samples")})
	last := got[len(got)-1]
	if len(last.RowKey) != 0 || last.OffsetBytes < 400_000 || last.OffsetBytes > 480_000 {
		t.Fatalf("last sample %q at %d: want the empty key at the table's size (about 400 KB)", last.RowKey, last.OffsetBytes)
	}
	var keys []string
	var prev *btpb.SampleRowKeysResponse
	for _, r := range got[:len(got)-1] {
		keys = append(keys, string(r.RowKey))
		if prev != nil && (bytes.Compare(r.RowKey, prev.RowKey) <= 0 || r.OffsetBytes < prev.OffsetBytes) {
			t.Fatalf("sample %q at %d after %q at %d", r.RowKey, r.OffsetBytes, prev.RowKey, prev.OffsetBytes)
		}
		// Inside one tablet, samples are every bytes apart, give or take a block.
		if prev != nil && string(prev.RowKey) != "m" && string(r.RowKey) != "m" {
			if gap := r.OffsetBytes - prev.OffsetBytes; gap < every || gap > every+16<<10 {
				t.Fatalf("sample %q at %d, %d after %q", r.RowKey, r.OffsetBytes, gap, prev.RowKey)
			}
		}
		prev = r
	}
	// About 200 KB a tablet in 32 KiB pieces: 5 or 6 samples each, plus m.
	if n := len(keys); n < 9 || n > 13 || !strings.Contains(" "+strings.Join(keys, " ")+" ", " m ") {
		t.Fatalf("samples %q: want about 5 a tablet and the boundary m", keys)
	}
	// A row range: the samples inside it, offsets from the last sample
	// before its start, no end-of-table key before the table's end.
	inRange := func(r *btpb.RowRange) []*btpb.SampleRowKeysResponse {
		return sampleAll(t, raw, &btpb.SampleRowKeysRequest{TableName: tablePath("samples"), RowRange: r})
	}
	lo, hi := got[1], got[len(got)-3] // two samples inside the first tablet and the second
	sub := inRange(&btpb.RowRange{StartKey: &btpb.RowRange_StartKeyClosed{StartKeyClosed: lo.RowKey}, EndKey: &btpb.RowRange_EndKeyOpen{EndKeyOpen: hi.RowKey}})
	var want []string
	for _, r := range got[2 : len(got)-3] {
		want = append(want, fmt.Sprintf("%s@%d", r.RowKey, r.OffsetBytes-lo.OffsetBytes))
	}
	var gotSub []string
	for _, r := range sub {
		gotSub = append(gotSub, fmt.Sprintf("%s@%d", r.RowKey, r.OffsetBytes))
	}
	if strings.Join(gotSub, " ") != strings.Join(want, " ") {
		t.Fatalf("samples of [%q, %q) = %q, want %q", lo.RowKey, hi.RowKey, gotSub, want)
	}
	tail := inRange(&btpb.RowRange{StartKey: &btpb.RowRange_StartKeyOpen{StartKeyOpen: hi.RowKey}})
	if n := len(tail); n != 2 || string(tail[0].RowKey) != string(got[len(got)-2].RowKey) || len(tail[1].RowKey) != 0 ||
		tail[1].OffsetBytes != last.OffsetBytes-hi.OffsetBytes {
		t.Fatalf("samples after %q = %v; want the last sample and the end of the table", hi.RowKey, tail)
	}

	official, err := tbl.SampleRowKeys(ctx)
	if err != nil || strings.Join(official, " ") != strings.Join(keys, " ") {
		t.Fatalf("official client's SampleRowKeys = %q, %v; want %q", official, err, keys)
	}
}

// sampleAll returns every answer of a SampleRowKeys stream.
func sampleAll(t *testing.T, c btpb.BigtableClient, req *btpb.SampleRowKeysRequest) []*btpb.SampleRowKeysResponse {
	t.Helper()
	ss, err := c.SampleRowKeys(testContext(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var out []*btpb.SampleRowKeysResponse
	for {
		r, err := ss.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
}
