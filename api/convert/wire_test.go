package convert

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/cell"
)

// wireRand returns a generator seeded from $CONVERT_SEED or the clock,
// and logs the seed so that a failure replays.
func wireRand(t *testing.T) *rand.Rand {
	seed, err := strconv.ParseUint(os.Getenv("CONVERT_SEED"), 10, 64)
	if err != nil {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (CONVERT_SEED replays it)", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// randomRows returns rows of cells with the edge cases of the encoding:
// empty and absent keys, qualifiers and values, zero and negative
// timestamps, an empty family, labels.
func randomRows(r *rand.Rand) (keys [][]byte, rows [][]cell.Cell) {
	bs := func() []byte {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []byte{}
		}
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return b
	}
	fams := []string{"", "cf", "meta", "é"}
	for range r.IntN(8) {
		keys = append(keys, bs())
		var cells []cell.Cell
		for range r.IntN(5) {
			c := cell.Cell{Family: fams[r.IntN(len(fams))], Qualifier: bs(), Value: bs()}
			switch r.IntN(3) {
			case 1:
				c.Timestamp = r.Int64()
			case 2:
				c.Timestamp = -r.Int64N(1 << 40)
			}
			if r.IntN(4) == 0 {
				c.Labels = []string{"lbl", fmt.Sprint(r.IntN(9))}[:1+r.IntN(2)]
			}
			cells = append(cells, c)
		}
		rows = append(rows, cells)
	}
	return keys, rows
}

// TestAppendRowIsTheProtoEncoding: a batch built with AppendRow
// unmarshals (proto.Unmarshal) into the messages CellsToProtoRow makes.
func TestAppendRowIsTheProtoEncoding(t *testing.T) {
	r := wireRand(t)
	for range 500 {
		keys, rows := randomRows(r)
		var b []byte
		want := &tabulapb.ReadRowsResponse{}
		for i := range keys {
			b = AppendRow(b, keys[i], rows[i])
			want.Rows = append(want.Rows, CellsToProtoRow(keys[i], rows[i]))
		}
		got := &tabulapb.ReadRowsResponse{}
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("AppendRow's batch unmarshals to\n%v\nwant\n%v", got, want)
		}
	}
}

// TestDecodeRowsReadsTheProtoEncoding: DecodeRows of what proto.Marshal
// writes gives the cells proto.Unmarshal and CellsFromProtoRow give, nil
// and empty slices alike; parts of rows are left to the RowJoiner.
func TestDecodeRowsReadsTheProtoEncoding(t *testing.T) {
	r := wireRand(t)
	for range 500 {
		keys, rows := randomRows(r)
		resp := &tabulapb.ReadRowsResponse{}
		for i := range keys {
			resp.Rows = append(resp.Rows, CellsToProtoRow(keys[i], rows[i]))
		}
		part := len(resp.Rows) > 0 && r.IntN(4) == 0
		if part {
			p := resp.Rows[r.IntN(len(resp.Rows))]
			if len(p.Cells) > 0 && r.IntN(2) == 0 {
				p.Cells[len(p.Cells)-1].ValueContinues = true
			} else {
				p.Continued = true
			}
		}
		b, err := proto.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		if r.IntN(3) == 0 { // an unknown field, which proto skips
			b = protowire.AppendTag(b, 9, protowire.VarintType)
			b = protowire.AppendVarint(b, 7)
		}
		checkDecodeRows(t, b, part)
	}
}

// checkDecodeRows checks DecodeRows(b) against proto.Unmarshal: an error
// only where proto fails, rows only where proto gives whole rows, and
// then the same cells. wantPart, if set, says b holds a part.
func checkDecodeRows(t *testing.T, b []byte, wantPart bool) {
	t.Helper()
	rows, whole, err := DecodeRows(b)
	want := &tabulapb.ReadRowsResponse{}
	perr := proto.Unmarshal(b, want)
	switch {
	case err != nil:
		if perr == nil {
			t.Fatalf("DecodeRows(%x): %v; proto.Unmarshal accepts it", b, err)
		}
		return
	case !whole:
		if rows != nil {
			t.Fatalf("DecodeRows(%x) gave rows with a part", b)
		}
		return
	case perr != nil:
		t.Fatalf("DecodeRows(%x) gave rows; proto.Unmarshal: %v", b, perr)
	case wantPart:
		t.Fatalf("DecodeRows(%x) took a part of a row as whole", b)
	}
	if len(rows) != len(want.Rows) {
		t.Fatalf("DecodeRows(%x): %d rows, proto %d", b, len(rows), len(want.Rows))
	}
	for i, p := range want.Rows {
		if p.GetContinued() || hasContinuingCell(p) {
			t.Fatalf("DecodeRows(%x) took the part %v as whole", b, p)
		}
		wantCells := CellsFromProtoRow(p)
		if len(wantCells) == 0 {
			wantCells = []cell.Cell{}
		}
		if !reflect.DeepEqual(rows[i].Key, p.GetKey()) || !reflect.DeepEqual(rows[i].Cells, wantCells) {
			t.Fatalf("DecodeRows(%x) row %d = %q %#v, proto gives %q %#v", b, i, rows[i].Key, rows[i].Cells, p.GetKey(), wantCells)
		}
	}
	// Nothing of the rows points into b.
	for i := range b {
		b[i] ^= 0xff
	}
	for i, p := range want.Rows {
		if !bytes.Equal(rows[i].Key, p.GetKey()) {
			t.Fatalf("row %d's key changed with the message's bytes", i)
		}
		for j, c := range CellsFromProtoRow(p) {
			if !bytes.Equal(rows[i].Cells[j].Value, c.Value) || !bytes.Equal(rows[i].Cells[j].Qualifier, c.Qualifier) {
				t.Fatalf("row %d cell %d changed with the message's bytes", i, j)
			}
		}
	}
}

// randomBatch returns a message of randomRows encoded by AppendRow.
func randomBatch(r *rand.Rand) []byte {
	keys, rows := randomRows(r)
	var b []byte
	for i := range keys {
		b = AppendRow(b, keys[i], rows[i])
	}
	return b
}

func FuzzDecodeRows(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		b := randomBatch(r)
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x02, 0x18, 0x01})             // a continued row
	f.Add([]byte{0x0a, 0x04, 0x12, 0x02, 0x0a, 0xff}) // a family of invalid UTF-8
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecodeRows(t, bytes.Clone(b), false)
	})
}

// TestCellsSizeIsRowSize: the server sizes rows without building them.
func TestCellsSizeIsRowSize(t *testing.T) {
	r := wireRand(t)
	for range 200 {
		keys, rows := randomRows(r)
		for i := range keys {
			if got, want := CellsSize(keys[i], rows[i]), RowSize(CellsToProtoRow(keys[i], rows[i])); got != want {
				t.Fatalf("CellsSize %d, RowSize %d", got, want)
			}
		}
	}
}

// BenchmarkScanResponseDecode decodes a scan's message of 1,000 rows of
// one 1000-byte cell, as a client receives them (the rows dropped after
// each message, as a scan that counts them): the client's share of a scan
// over the wire past gRPC (docs/BENCHMARKS.md "Scans over the wire").
func BenchmarkScanResponseDecode(b *testing.B) {
	value := bytes.Repeat([]byte{'v'}, 1000)
	var msg []byte
	for i := range 1000 {
		row := fmt.Appendf(nil, "k%09d", i)
		msg = AppendRow(msg, row, []cell.Cell{{Family: "cf", Qualifier: []byte("q"), Timestamp: 1, Value: value}})
	}
	r := &ScanResponse{Whole: true}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Decode(msg); err != nil || len(r.Rows) != 1000 {
			b.Fatal(err, len(r.Rows))
		}
	}
}

// TestScanResponseRowsOutliveTheNextMessage: the rows a ScanResponse
// decoded stay as they were while it receives the next messages into the
// same memory (its joining buffer, its Rows slice, the chunks its rows
// are cut from): a client's rows stay valid after Next.
func TestScanResponseRowsOutliveTheNextMessage(t *testing.T) {
	r := wireRand(t)
	big := bytes.Repeat([]byte{'b'}, arenaBytes/3) // a row with its own allocation
	resp := &ScanResponse{Whole: true}
	var got []WireRow
	var want []*tabulapb.Row
	for range 300 {
		keys, rows := randomRows(r)
		if r.IntN(10) == 0 {
			keys = append(keys, []byte("big"))
			rows = append(rows, []cell.Cell{{Family: "cf", Value: big}})
		}
		var b []byte
		for i := range keys {
			b = AppendRow(b, keys[i], rows[i])
		}
		w := &tabulapb.ReadRowsResponse{}
		if err := proto.Unmarshal(b, w); err != nil {
			t.Fatal(err)
		}
		want = append(want, w.Rows...)
		if err := resp.Decode(b); err != nil || len(resp.Rows) != len(keys) {
			t.Fatalf("decoded %d rows (%v), want %d", len(resp.Rows), err, len(keys))
		}
		got = append(got, resp.Rows...)
		for i := range b {
			b[i] ^= 0xff // the message's bytes are the caller's again
		}
	}
	for i, p := range want {
		wantCells := CellsFromProtoRow(p)
		if len(wantCells) == 0 {
			wantCells = []cell.Cell{}
		}
		if !reflect.DeepEqual(got[i].Key, p.GetKey()) || !reflect.DeepEqual(got[i].Cells, wantCells) {
			t.Fatalf("row %d = %q %#v after later messages, want %q %#v", i, got[i].Key, got[i].Cells, p.GetKey(), wantCells)
		}
	}
}

// TestScanResponseBorrowLendsTheMessage: with Borrow, the rows decoded
// are those proto.Unmarshal gives, but they point into the message
// itself (changing its bytes changes them), each slice capped so that an
// append to one cannot overwrite the next, and a receive of a message
// like the last allocates nothing.
func TestScanResponseBorrowLendsTheMessage(t *testing.T) {
	r := wireRand(t)
	var b []byte
	for i := range 50 {
		cells := []cell.Cell{{Family: "cf", Qualifier: []byte("q"), Timestamp: 1, Value: []byte(fmt.Sprint("value", i))}}
		if i%7 == 0 {
			cells = append(cells, cell.Cell{Family: "meta", Value: []byte("m")})
		}
		b = AppendRow(b, fmt.Appendf(nil, "k%03d", i), cells)
	}
	resp := &ScanResponse{Whole: true, Borrow: true}
	if allocs := testing.AllocsPerRun(20, func() {
		if err := resp.Decode(b); err != nil || len(resp.Rows) != 50 {
			t.Fatal(err, len(resp.Rows))
		}
	}); allocs > 0 {
		t.Fatalf("a borrowed receive allocates %.0f times", allocs)
	}
	keys, rows := randomRows(r)
	for i := range keys {
		b = AppendRow(b, keys[i], rows[i])
	}
	want := &tabulapb.ReadRowsResponse{}
	if err := proto.Unmarshal(b, want); err != nil {
		t.Fatal(err)
	}
	if err := resp.Decode(b); err != nil || len(resp.Rows) != len(want.Rows) {
		t.Fatalf("decoded %d rows (%v), want %d", len(resp.Rows), err, len(want.Rows))
	}
	for i, p := range want.Rows {
		wantCells := CellsFromProtoRow(p)
		if len(wantCells) == 0 {
			wantCells = []cell.Cell{}
		}
		if !reflect.DeepEqual(resp.Rows[i].Key, p.GetKey()) || !reflect.DeepEqual(resp.Rows[i].Cells, wantCells) {
			t.Fatalf("row %d = %q %#v, proto gives %q %#v", i, resp.Rows[i].Key, resp.Rows[i].Cells, p.GetKey(), wantCells)
		}
	}
	row0, row1 := resp.Rows[0], resp.Rows[1]
	_ = append(row0.Key, 'x')
	_ = append(row0.Cells[0].Value, 'x')
	_ = append(row0.Cells, cell.Cell{Value: []byte("x")})
	if string(row1.Key) != "k001" || string(row1.Cells[0].Value) != "value1" || string(row0.Cells[0].Value) != "value0" {
		t.Fatalf("an append to row 0 changed the rows: %q %q %q", row1.Key, row1.Cells[0].Value, row0.Cells[0].Value)
	}
	for i := range b {
		b[i] ^= 0xff
	}
	if string(row0.Key) == "k000" {
		t.Fatal("the rows do not point into the message")
	}
}
