package cell

import (
	"bytes"
	"math/rand"
	"testing"
)

// TestKeyLenMatchesAppendKey checks KeyLen against the encoding, and that
// encoding into a buffer of exactly KeyLen bytes fills it in place.
func TestKeyLenMatchesAppendKey(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		k := Key{
			Row: randBytes(r, 20), Qualifier: randBytes(r, 20),
			Timestamp: r.Int63(), Seq: r.Uint64(),
			Kind: []Kind{KindDeleteFamily, KindDeleteColumn, KindSet}[r.Intn(3)],
		}
		if k.Kind == KindDeleteFamily {
			k.Qualifier = nil
		}
		want := AppendKey(nil, k)
		n := KeyLen(k)
		if n != len(want) {
			t.Fatalf("KeyLen(%+v) = %d, the encoding has %d bytes", k, n, len(want))
		}
		buf := make([]byte, n)
		got := AppendKey(buf[:0:n], k)
		if !bytes.Equal(got, want) || &got[0] != &buf[0] {
			t.Fatalf("AppendKey into %d bytes: got %x (in place: %v), want %x", n, got, &got[0] == &buf[0], want)
		}
	}
}
