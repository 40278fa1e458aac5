package tablet

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
	"github.com/tabuladb/tabula/sstable"
)

// TestInMemoryFamilyStaysCached reads every row of a big family through a
// block cache smaller than it (point reads: each fills the cache, where a
// scan of a file bigger than the cache fills only a share of it): the
// blocks of a small InMemory family stay cached (its reads stay hits),
// while without the hint they are evicted.
func TestInMemoryFamilyStaysCached(t *testing.T) {
	for _, inMemory := range []bool{true, false} {
		t.Run(fmt.Sprintf("inMemory=%v", inMemory), func(t *testing.T) {
			cache := sstable.NewCache(128 << 10) // one shard; in-memory share 32 KiB
			opts := testOptions(t.TempDir())
			opts.Cache = cache
			opts.Families = []families.Family{
				{Name: "hot", BlockSize: 2 << 10, InMemory: inMemory},
				{Name: "cold", BlockSize: 4 << 10},
			}
			tb := openTablet(t, opts)
			rng := rand.New(rand.NewSource(1)) // values only; the test does not depend on them
			value := func(n int) string {
				b := make([]byte, n)
				rng.Read(b)
				return string(b)
			}
			for i := 0; i < 40; i++ { // ~16 KiB
				apply(t, tb, fmt.Sprintf("row%04d", i), set("hot", "q", 1, value(400)))
			}
			for i := 0; i < 1000; i++ { // ~500 KiB
				apply(t, tb, fmt.Sprintf("row%04d", i), set("cold", "q", 1, value(500)))
			}
			if err := tb.Flush(bg); err != nil {
				t.Fatalf("Flush: %v", err)
			}
			scan := func(fam string, wantRows int) {
				t.Helper()
				it, err := tb.NewRowIterator(bg, ReadOptions{Filter: rowfilter.Family(fam)})
				if err != nil {
					t.Fatalf("NewRowIterator: %v", err)
				}
				n := 0
				for it.Next() {
					n++
				}
				if err := it.Err(); err != nil {
					t.Fatalf("scan %s: %v", fam, err)
				}
				_ = it.Close()
				if n != wantRows {
					t.Fatalf("scan %s: %d rows, want %d", fam, n, wantRows)
				}
			}
			scan("hot", 40) // loads the hot blocks
			loaded := cache.Stats()
			if inMemory != (loaded.InMemoryBytes > 0) {
				t.Fatalf("cache stats after the hot scan %+v", loaded)
			}
			for range 2 {
				for i := 0; i < 1000; i++ {
					row := fmt.Sprintf("row%04d", i)
					cells, err := tb.ReadRow(bg, []byte(row), rowfilter.Family("cold"))
					if err != nil || len(cells) != 1 {
						t.Fatalf("ReadRow %s: %d cells, %v", row, len(cells), err)
					}
				}
			}
			afterCold := cache.Stats()
			if afterCold.Misses-loaded.Misses < 100 {
				t.Fatalf("cold reads missed only %d times: the cache is not smaller than the data", afterCold.Misses-loaded.Misses)
			}
			scan("hot", 40)
			st := cache.Stats()
			hotMisses, hotHits := st.Misses-afterCold.Misses, st.Hits-afterCold.Hits
			t.Logf("hot rescan: %d hits, %d misses; stats %+v", hotHits, hotMisses, st)
			if inMemory && (hotMisses != 0 || hotHits == 0) {
				t.Errorf("InMemory family rescan: %d misses, %d hits; want only hits", hotMisses, hotHits)
			}
			if !inMemory && hotMisses == 0 {
				t.Errorf("normal family rescan had no misses: the cold reads should have evicted it")
			}
			if inMemory && st.InMemoryBytes != loaded.InMemoryBytes {
				t.Errorf("in-memory bytes went from %d to %d", loaded.InMemoryBytes, st.InMemoryBytes)
			}
		})
	}
}
