package cell

import (
	"testing"
)

// DecodeKeyKind agrees with DecodeKey on every input: the same kind,
// timestamp and sequence number, or an error from both.
func FuzzDecodeKeyKind(f *testing.F) {
	f.Add(AppendKey(nil, Key{Row: []byte("r\x00w"), Qualifier: []byte("q\x00"), Timestamp: 5, Seq: 9, Kind: KindSet}))
	f.Add(AppendKey(nil, Key{Row: []byte("r"), Qualifier: []byte("q"), Timestamp: -1, Seq: 2, Kind: KindDeleteColumn}))
	f.Add(AppendKey(nil, Key{Row: []byte("r"), Seq: 1, Kind: KindDeleteFamily}))
	f.Add([]byte{0, 1, 9})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeKey(b)
		kind, ts, seq, kerr := DecodeKeyKind(b)
		if (err == nil) != (kerr == nil) {
			t.Fatalf("DecodeKey error %v, DecodeKeyKind error %v", err, kerr)
		}
		if err == nil && (kind != k.Kind || ts != k.Timestamp || seq != k.Seq) {
			t.Fatalf("DecodeKeyKind = %v %d %d, DecodeKey = %+v", kind, ts, seq, k)
		}
	})
}

func TestDecodeKeyKindDoesNotAllocate(t *testing.T) {
	b := AppendKey(nil, Key{Row: []byte("r\x00w"), Qualifier: []byte("q\x00"), Timestamp: 5, Seq: 9, Kind: KindSet})
	if n := testing.AllocsPerRun(100, func() { _, _, _, _ = DecodeKeyKind(b) }); n != 0 {
		t.Fatalf("DecodeKeyKind allocates %v times per key", n)
	}
}
