package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// benchFile is n rows as docs/BENCHMARKS.md "Export and import" loads
// them: 2 families x 2 qualifiers, one version, 64-byte values.
func benchFile(b *testing.B, n int) []byte {
	rows := make([]Row, n)
	for i := range rows {
		r := Row{Key: fmt.Appendf(nil, "user%08d", i)}
		for _, f := range []string{"a", "b"} {
			for _, q := range []string{"q1", "q2"} {
				r.Cells = append(r.Cells, Cell{Family: f, Qualifier: []byte(q), Timestamp: 1000, Value: bytes.Repeat([]byte{'v'}, 64)})
			}
		}
		rows[i] = r
	}
	return writeRows(b, nil, rows)
}

// BenchmarkJSONLinesRead reads rows of 4 cells: the decoding side of an
// import's client CPU.
func BenchmarkJSONLinesRead(b *testing.B) {
	file := benchFile(b, 10000)
	b.SetBytes(int64(len(file)))
	b.ResetTimer()
	for b.Loop() {
		jr, err := NewJSONLinesReader(bytes.NewReader(file), "bench")
		if err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := jr.ReadRow(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/40000, "ns/cell")
}
