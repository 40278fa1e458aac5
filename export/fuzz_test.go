package export

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// fuzzSeeds are small valid files of a format (with and without header,
// with an empty row and binary bytes) and damaged copies of them: cut
// short, and bytes flipped where lengths and counts are.
func fuzzSeeds(t testing.TB, f format) [][]byte {
	rows := []Row{
		{Key: []byte("a\x00"), Cells: []Cell{{Family: "f", Qualifier: []byte("q"), Timestamp: 5, Value: []byte("v\xff")}, {Family: "f", Timestamp: -3}}},
		{Key: []byte("b")},
		{Key: []byte("c"), Cells: []Cell{{Family: "g", Qualifier: []byte{1, 2}, Timestamp: 1 << 40, Value: bytes.Repeat([]byte("x"), 100)}}},
	}
	var seeds [][]byte
	for _, h := range [][]byte{nil, []byte(`{"h":1}`)} {
		file := writeFile(t, f, h, rows)
		seeds = append(seeds, file, file[:len(file)/2], file[:len(file)-1])
		rng := rand.New(rand.NewPCG(1, uint64(len(seeds))))
		for range 8 {
			bad := bytes.Clone(file)
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			seeds = append(seeds, bad)
		}
	}
	return seeds
}

// drain reads every row of a file; it must end in io.EOF or an error.
func drain(r RowReader) {
	for range 1 << 20 {
		if _, err := r.ReadRow(); err != nil {
			return
		}
	}
	panic("a reader of a small file returned over a million rows")
}

func FuzzParquetReader(f *testing.F) {
	for _, s := range fuzzSeeds(f, formats[0]) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := NewParquetReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		drain(r)
	})
}

func FuzzAvroReader(f *testing.F) {
	for _, s := range fuzzSeeds(f, formats[1]) {
		f.Add(s)
	}
	// A block claiming a huge size and row count, and a snappy block
	// claiming a huge decoded length, in an otherwise valid file.
	valid := writeFile(f, formats[1], nil, nil)
	sync := valid[len(valid)-16:]
	huge := append(appendLong(appendLong(bytes.Clone(valid), 1<<40), 1<<40), 0)
	f.Add(huge)
	bomb := append(appendLong(appendLong(bytes.Clone(valid), 1), 9), 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0)
	f.Add(append(bomb, sync...))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, _, err := NewAvroReader(io.LimitReader(bytes.NewReader(b), int64(len(b))))
		if err != nil {
			return
		}
		drain(r)
	})
}
