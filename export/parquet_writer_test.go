package export

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
)

// snappyEncode writes what snappy.Encode writes, into the capacity of the
// buffer the library grew (of length 0), without allocating.
func TestSnappyEncodeIntoCapacity(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	src := append(randBytes(rng, 300<<10), bytes.Repeat([]byte("abcdefghij"), 30<<10)...)
	want := snappy.Encode(nil, src)
	dst := make([]byte, 0, snappy.MaxEncodedLen(len(src)))
	if got := snappyEncode(dst, src); !bytes.Equal(got, want) {
		t.Fatal("snappyEncode into a grown buffer differs from snappy.Encode")
	}
	if n := testing.AllocsPerRun(10, func() { snappyEncode(dst, src) }); n != 0 {
		t.Errorf("snappyEncode into a buffer of CompressBound's capacity: %v allocations, want 0", n)
	}
	// A buffer too small: a new one, the same bytes.
	if got := snappyEncode(make([]byte, 0, 10), src); !bytes.Equal(got, want) {
		t.Fatal("snappyEncode into a small buffer differs from snappy.Encode")
	}
}

// countingWriter counts the writes it is given.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(b)
}

// The Parquet writer hands its caller's writer (a file, in an export) a
// few large writes, not a page header and a page at a time, and all of
// the file: it reads back whole.
func TestParquetWritesLarge(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	var rows []Row
	for i := range 20_000 {
		r := Row{Key: fmt.Appendf(nil, "row%06d", i)}
		for j := range 4 {
			r.Cells = append(r.Cells, Cell{Family: "f", Qualifier: []byte{byte(j)}, Timestamp: int64(i), Value: randBytes(rng, 100)})
		}
		rows = append(rows, r)
	}
	var w countingWriter
	writeFileTo(t, formats[0], &w, nil, rows) // parquet
	if max := w.Len()/parquetOutBuffer + 1; w.writes > max {
		t.Errorf("%d writes for a file of %d bytes, want at most %d", w.writes, w.Len(), max)
	}
	r, _, err := formats[0].read(w.Bytes()) // parquet
	if err != nil {
		t.Fatal(err)
	}
	equalRows(t, readAll(t, r), rows)
}
