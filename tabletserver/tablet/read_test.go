package tablet

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/rowfilter"
)

func TestVersionsAndTTLHideCondemnedCellsBeforeCompaction(t *testing.T) {
	const sec = int64(time.Second / time.Microsecond)
	cases := []struct {
		name string
		fam  families.Family
		want string
	}{
		{"no rule", families.Family{Name: "a"}, "a:q@100000000=t100 a:q@95000000=t95 a:q@50000000=t50 a:q@10000000=t10"},
		{"versions 2", families.Family{Name: "a", MaxVersions: 2}, "a:q@100000000=t100 a:q@95000000=t95"},
		{"ttl 30s", families.Family{Name: "a", TTL: 30 * time.Second}, "a:q@100000000=t100 a:q@95000000=t95"},
		{"union", families.Family{Name: "a", MaxVersions: 1, TTL: 60 * time.Second}, "a:q@100000000=t100"},
		{"intersection", families.Family{Name: "a", MaxVersions: 1, TTL: 60 * time.Second, GC: families.GCIntersection}, "a:q@100000000=t100 a:q@95000000=t95 a:q@50000000=t50"},
	}
	for _, c := range cases {
		for _, flush := range []bool{false, true} {
			clk := &fakeClock{}
			clk.now.Store(100 * sec)
			opts := testOptions(t.TempDir())
			opts.Families = []families.Family{c.fam}
			opts.Clock = clk.Now
			tb := openTablet(t, opts)
			for _, ts := range []int64{10, 50, 95, 100} {
				apply(t, tb, "r", set("a", "q", ts*sec, fmt.Sprintf("t%d", ts)))
			}
			if flush {
				if err := tb.Flush(bg); err != nil {
					t.Fatal(err)
				}
			}
			if got := readRow(t, tb, "r", nil); got != c.want {
				t.Errorf("%s flush=%v: got %q, want %q", c.name, flush, got, c.want)
			}
			if err := tb.Compact(bg, true); err != nil {
				t.Fatal(err)
			}
			if got := readRow(t, tb, "r", nil); got != c.want {
				t.Errorf("%s after major compaction: got %q, want %q", c.name, got, c.want)
			}
		}
	}
}

func TestPolicyChangeAppliesToReadsAtOnce(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	apply(t, tb, "r", set("a", "q", 1, "1"), set("a", "q", 2, "2"))
	if err := tb.SetFamilies([]families.Family{{Name: "a", MaxVersions: 1}, {Name: "b"}}); err != nil {
		t.Fatal(err)
	}
	if got := readRow(t, tb, "r", nil); got != "a:q@2=2" {
		t.Fatalf("got %q", got)
	}
}

func TestSetFamiliesDeleteDropsData(t *testing.T) {
	dir := t.TempDir()
	tb := openTablet(t, testOptions(dir))
	apply(t, tb, "r", set("a", "q", 1, "1"), set("b", "q", 1, "b"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, tb, "r", set("a", "q", 2, "2"))
	if err := tb.SetFamilies([]families.Family{{Name: "b"}}); err != nil {
		t.Fatal(err)
	}
	if got := readRow(t, tb, "r", nil); got != "b:q@1=b" {
		t.Fatalf("got %q", got)
	}
	if err := tb.SetFamilies([]families.Family{{Name: "a"}, {Name: "b"}}); err != nil {
		t.Fatal(err)
	}
	if got := readRow(t, tb, "r", nil); got != "b:q@1=b" {
		t.Fatalf("re-added family shows old data: %q", got)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTablet(t, testOptions(dir))
	if got := readRow(t, tb, "r", nil); got != "b:q@1=b" {
		t.Fatalf("after reopen: %q", got)
	}
}

func TestScanRowSets(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	for _, r := range []string{"a", "b", "c", "d", "e", "f"} {
		apply(t, tb, r, set("a", "q", 1, r))
		if r == "c" {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(t, tb, "d", delRow())
	cases := []struct {
		name string
		opts ReadOptions
		want string
	}{
		{"all", ReadOptions{}, "a{a:q@1=a} b{a:q@1=b} c{a:q@1=c} e{a:q@1=e} f{a:q@1=f}"},
		{"limit", ReadOptions{Limit: 2}, "a{a:q@1=a} b{a:q@1=b}"},
		{"keys unsorted with dup and deleted", ReadOptions{Keys: [][]byte{[]byte("e"), []byte("b"), []byte("e"), []byte("d"), []byte("zz")}}, "b{a:q@1=b} e{a:q@1=e}"},
		{"ranges overlapping", ReadOptions{Ranges: []RowRange{{Start: []byte("e")}, {Start: []byte("b"), End: []byte("c")}, {Start: []byte("b"), End: []byte("bb")}}}, "b{a:q@1=b} e{a:q@1=e} f{a:q@1=f}"},
		{"keys and ranges", ReadOptions{Keys: [][]byte{[]byte("a"), []byte("c")}, Ranges: []RowRange{{End: []byte("b")}, {Start: []byte("f")}}}, "a{a:q@1=a} c{a:q@1=c} f{a:q@1=f}"},
		{"filter skips rows left empty", ReadOptions{Filter: rowfilter.ValueRegex("[bf]")}, "b{a:q@1=b} f{a:q@1=f}"},
		{"row key prefix filter", ReadOptions{Filter: rowfilter.RowKeyPrefix([]byte("c"))}, "c{a:q@1=c}"},
	}
	for _, c := range cases {
		if got := scan(t, tb, c.opts); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRowAtomicityUnderConcurrentReaders(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	const writes = 300
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		for i := 1; i <= writes; i++ {
			v := fmt.Sprint(i)
			if err := tb.Apply(bg, []byte("r"), []cell.Mutation{set("a", "x", 1, v), set("b", "y", 1, v), set("a", "z", 1, v)}); err != nil {
				errc <- err
				return
			}
			if i%100 == 0 {
				if err := tb.Flush(bg); err != nil {
					errc <- err
					return
				}
			}
		}
	}()
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				cells, err := tb.ReadRow(bg, []byte("r"), nil)
				if err != nil {
					errc <- err
					return
				}
				if len(cells) != 0 && (len(cells) != 3 || string(cells[0].Value) != string(cells[1].Value) || string(cells[1].Value) != string(cells[2].Value)) {
					errc <- fmt.Errorf("torn row: %s", render(cells))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

func TestPointReadSkipsFilesByBloom(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	for i := 0; i < 5; i++ {
		apply(t, tb, fmt.Sprintf("row%d", i), set("b", "q", 1, "v"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	st, err := tb.acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer st.release()
	lo := cell.EncodeRow([]byte("row3"))
	sc := st.newScanner(span{lo: lo, hi: rowUpper(lo), point: true}, nil, false)
	defer sc.close()
	if len(sc.cs) != 1 || len(sc.cs[0].it.srcs) > 2 { // memtable list absent; ideally 1 file
		t.Fatalf("point read opened %d sources over 5 files", len(sc.cs[0].it.srcs))
	}
}
