package export

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"
	s2snappy "github.com/klauspost/compress/snappy"
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

// cpuTime is the process's user and system CPU time: on a shared machine
// the MB/s of CPU time say more than those of wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports MB of rows per CPU second over the b.N iterations
// since start.
func reportCPU(b *testing.B, start time.Duration, raw int64) {
	if d := cpuTime() - start; d > 0 {
		b.ReportMetric(float64(raw)*float64(b.N)/1e6/d.Seconds(), "MB/cpu-s")
	}
}

// benchRows is about 1M cells of 100 B values (docs/BENCHMARKS.md, "Export
// formats"): 100,000 rows of 10 columns in 2 families, keys and qualifiers
// as a table's are (sortable text), values random bytes half-compressible
// (half random, half a repeated pattern, as real values often are).
func benchRows() []Row {
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]Row, 100_000)
	for i := range rows {
		r := Row{Key: fmt.Appendf(nil, "user%08d", i*7919%10_000_000)}
		for j := range 10 {
			v := make([]byte, 100)
			for k := range 50 {
				v[k] = byte(rng.Uint32())
			}
			copy(v[50:], "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij")
			r.Cells = append(r.Cells, Cell{Family: []string{"profile", "events"}[j%2], Qualifier: fmt.Appendf(nil, "col%02d", j),
				Timestamp: 1_700_000_000_000_000 + int64(i*10+j), Value: v})
		}
		rows[i] = r
	}
	return rows
}

// rawBytes is what the rows hold: keys, families, qualifiers, values and
// 8 bytes per timestamp; MB/s are of these.
func rawBytes(rows []Row) int64 {
	var n int64
	for _, r := range rows {
		n += int64(len(r.Key))
		for _, c := range r.Cells {
			n += int64(len(c.Family) + len(c.Qualifier) + 8 + len(c.Value))
		}
	}
	return n
}

// s2BetterCodec encodes as the Parquet library's registered Snappy codec
// does (klauspost's "better" Snappy encoder).
type s2BetterCodec struct{ snappyCodec }

func (s2BetterCodec) Encode(dst, src []byte) []byte { return s2snappy.Encode(dst, src) }

func (s2BetterCodec) EncodeLevel(dst, src []byte, _ int) []byte { return s2snappy.Encode(dst, src) }

// BenchmarkExportFormats writes and reads the same ~1M cells in each
// format; it reports the file's size and write and read MB/s of the rows'
// bytes (rawBytes).
//
//	go test -run '^$' -bench ExportFormats -benchtime 3x -count 5 ./export/
func BenchmarkExportFormats(b *testing.B) {
	rows := benchRows()
	raw := rawBytes(rows)
	// jsonl is this package's JSON-lines writer and reader, which
	// `tabula export` and `import` use by default: the formats' yardstick.
	all := append(formats, jsonLines, format{"parquet-s2better", func(w io.Writer, o FileOptions) (RowWriter, error) {
		// The Parquet library's own Snappy encoder (parquet_snappy.go),
		// for the comparison.
		compress.RegisterCodec(compress.Codecs.Snappy, s2BetterCodec{})
		return NewParquetWriter(w, o)
	}, formats[0].read})
	for _, f := range all {
		b.Run(f.name+"/write", func(b *testing.B) {
			defer compress.RegisterCodec(compress.Codecs.Snappy, snappyCodec{})
			var size int
			start := cpuTime()
			for b.Loop() {
				size = len(writeFile(b, f, nil, rows))
			}
			reportCPU(b, start, raw)
			b.SetBytes(raw)
			b.ReportMetric(float64(size)/(1<<20), "file-MiB")
			b.ReportMetric(float64(size)/float64(raw), "size/raw")
		})
		if f.name == "parquet-s2better" {
			continue // reads as parquet does
		}
		b.Run(f.name+"/read", func(b *testing.B) {
			file := writeFile(b, f, nil, rows)
			b.SetBytes(raw)
			start := cpuTime()
			for b.Loop() {
				r, _, err := f.read(file)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					_, err := r.ReadRow()
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != len(rows) {
					b.Fatalf("read %d rows of %d", n, len(rows))
				}
			}
			reportCPU(b, start, raw)
		})
	}
}
