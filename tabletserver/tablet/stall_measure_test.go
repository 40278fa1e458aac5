package tablet

import (
	"math"
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/sstable"
	"github.com/tabuladb/tabula/wal"
)

// TestMeasureWriteStalls measures what the write stall (stall.go) does to
// one writer's random inserts into a tablet configured as bench/enginebench
// configures it (4 MiB memtable, 8 MiB block cache, one snappy family):
// the peak of the active memtable and of all memtables (sampled every 16
// writes), the insert rate and the stalls, with stalls off and with
// writers stalling at 1× and 2× MemtableSize, interleaved over rounds. It
// only runs with TABULA_MEASURE_STALLS set to the sync mode (none or
// buffered):
//
//	TABULA_MEASURE_STALLS=buffered go test ./tabletserver/tablet -run TestMeasureWriteStalls -v
func TestMeasureWriteStalls(t *testing.T) {
	env := os.Getenv("TABULA_MEASURE_STALLS")
	if env == "" {
		t.Skip("set TABULA_MEASURE_STALLS=<sync mode> to measure")
	}
	mode, err := wal.ParseSyncMode(env)
	if err != nil {
		t.Fatal(err)
	}
	const memtable = 4 << 20
	modes := []struct {
		name    string
		stallAt int64
	}{{"off", math.MaxInt64}, {"1x", memtable}, {"2x", 2 * memtable}}
	for round := range 3 {
		for _, sz := range []struct{ size, count int }{{1000, 200000}, {100, 1000000}} {
			for _, m := range modes {
				tb := openTablet(t, Options{
					Dir: t.TempDir(), Create: true,
					Families: []families.Family{{Name: "f", MaxVersions: 1,
						Compression: families.CompressionSnappy, Bloom: families.BloomRow}},
					SyncMode:     mode,
					Cache:        sstable.NewCache(8 << 20),
					MemtableSize: memtable,
				})
				tb.stallAt = m.stallAt
				r := rand.New(rand.NewSource(int64(round)))
				var peakActive, peakAll int64
				began := time.Now()
				for n, i := range r.Perm(sz.count) {
					v := make([]byte, sz.size)
					r.Read(v[:sz.size/2])
					if err := tb.Apply(bg, engineKey(i), []cell.Mutation{{Kind: cell.SetCell, Family: "f", Timestamp: 1, Value: v}}); err != nil {
						t.Fatal(err)
					}
					if n%16 == 0 {
						all, flushing, _ := tb.memtableBytes()
						peakActive, peakAll = max(peakActive, all-flushing), max(peakAll, all)
					}
				}
				d := time.Since(began)
				st := tb.Stats()
				t.Logf("round %d, %d × %d B, stalls %s: %.0f inserts/s, peak memtables: active %.1f MiB, all %.1f MiB; %d stalls, %v stalled",
					round, sz.count, sz.size, m.name, float64(sz.count)/d.Seconds(), float64(peakActive)/(1<<20), float64(peakAll)/(1<<20),
					st.WriteStalls, st.WriteStallTime.Round(time.Millisecond))
				if err := tb.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
