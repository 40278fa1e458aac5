package cell

import (
	"bytes"
	"testing"
)

// checkRowDecoders checks RowPrefix, AppendKeyRow and DecodeKeyInRow
// against DecodeKey on b: they must agree whenever DecodeKey succeeds.
func checkRowDecoders(t *testing.T, b []byte) {
	want, err := DecodeKey(b)
	p, perr := RowPrefix(b)
	if err != nil {
		if perr != nil {
			return
		}
		row, n, rerr := AppendKeyRow(nil, b)
		if rerr != nil || n != len(p) {
			t.Fatalf("AppendKeyRow(%x) = %d, %v; RowPrefix found %d bytes", b, n, rerr, len(p))
		}
		if _, kerr := DecodeKeyInRow(b, n, row); kerr == nil {
			t.Fatalf("DecodeKeyInRow(%x) succeeded where DecodeKey fails: %v", b, err)
		}
		return
	}
	if perr != nil {
		t.Fatalf("RowPrefix(%x): %v", b, perr)
	}
	if !bytes.Equal(p, EncodeRow(want.Row)) {
		t.Fatalf("RowPrefix(%x) = %x, want %x", b, p, EncodeRow(want.Row))
	}
	row, n, err := AppendKeyRow([]byte("x"), b)
	if err != nil || n != len(p) || !bytes.Equal(row, append([]byte("x"), want.Row...)) {
		t.Fatalf("AppendKeyRow(%x) = %q, %d, %v; want x%q, %d", b, row, n, err, want.Row, len(p))
	}
	if row2, n2, err := AppendKeyRow(nil, p); err != nil || n2 != len(p) || !bytes.Equal(row2, want.Row) {
		t.Fatalf("AppendKeyRow of the prefix %x = %q, %d, %v", p, row2, n2, err)
	}
	got, err := DecodeKeyInRow(b, len(p), row[1:])
	if err != nil {
		t.Fatalf("DecodeKeyInRow(%x): %v", b, err)
	}
	if compareKeys(got, want) != 0 || got.Kind != want.Kind || !bytes.Equal(got.Qualifier, want.Qualifier) {
		t.Fatalf("DecodeKeyInRow(%x) = %+v, want %+v", b, got, want)
	}
	// DecodeKeyInRowTo into a key left over from another decode (a
	// scan's reused entry) sets every field.
	dirty := Key{Row: []byte("old"), Qualifier: []byte("old"), Timestamp: 42, Seq: 42, Kind: KindSet}
	if err := DecodeKeyInRowTo(&dirty, b, len(p), row[1:]); err != nil ||
		compareKeys(dirty, want) != 0 || dirty.Kind != want.Kind || !bytes.Equal(dirty.Qualifier, want.Qualifier) ||
		(dirty.Qualifier == nil) != (want.Qualifier == nil) {
		t.Fatalf("DecodeKeyInRowTo(%x) over a used key = %+v, %v; want %+v", b, dirty, err, want)
	}
}

func TestRowDecodersMatchDecodeKey(t *testing.T) {
	keys := []Key{
		{Row: []byte("r"), Qualifier: []byte("q"), Timestamp: 5, Seq: 9, Kind: KindSet},
		{Row: []byte("r\x00w\x00"), Qualifier: []byte("q\x00"), Timestamp: 1, Seq: 2, Kind: KindDeleteColumn},
		{Row: []byte("\x00"), Seq: 1, Kind: KindDeleteFamily},
		{Row: []byte("tabulake\x00\x00\x00\x00\x00\x01\x86\xa0"), Timestamp: 1, Seq: 7, Kind: KindSet},
		// Longer rows and qualifiers, and a family tombstone, whose
		// decode over a used key must clear its qualifier.
		{Row: []byte("abcdefgh"), Qualifier: []byte("qualifier-long"), Timestamp: 3, Seq: 4, Kind: KindSet},
		{Row: []byte("abcdefghijklmnopq\x00rstuvwxyz0123456"), Seq: 5, Kind: KindDeleteFamily},
		{Row: []byte("abcdefg"), Seq: 6, Kind: KindDeleteColumn, Qualifier: []byte("12345678\x00")},
	}
	for _, k := range keys {
		checkRowDecoders(t, AppendKey(nil, k))
	}
	for _, bad := range [][]byte{nil, {0}, {0, 2}, {'r', 0, 1}, {'r', 0, 0xFF}, {'r', 0, 1, 9}} {
		checkRowDecoders(t, bad)
	}
	if _, err := DecodeKeyInRow([]byte("r"), 5, nil); err == nil {
		t.Fatal("DecodeKeyInRow accepted a prefix longer than the key")
	}
}

func FuzzRowDecoders(f *testing.F) {
	f.Add(AppendKey(nil, Key{Row: []byte("r\x00w"), Qualifier: []byte("q"), Timestamp: 5, Seq: 9, Kind: KindSet}))
	f.Add(AppendKey(nil, Key{Row: []byte("r"), Seq: 1, Kind: KindDeleteFamily}))
	f.Add([]byte("r\x00\xff\x00\x01\x02"))
	f.Fuzz(func(t *testing.T, b []byte) { checkRowDecoders(t, b) })
}
