package tablet

import (
	"fmt"
	"math"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
)

// compactionLog records a tablet's compaction events.
type compactionLog struct {
	mu     sync.Mutex
	events []CompactionEvent
}

func (l *compactionLog) add(e CompactionEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
}

func (l *compactionLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// oneVersionTablet opens a tablet of one family "v" keeping one version
// (as bench/enginebench does), its compactions logged.
func oneVersionTablet(t *testing.T, fam families.Family, clock func() int64) (*Tablet, *compactionLog) {
	t.Helper()
	log := &compactionLog{}
	opts := testOptions(t.TempDir())
	opts.Families = []families.Family{fam}
	opts.Events = &Events{Compacted: log.add}
	opts.Clock = clock
	return openTablet(t, opts), log
}

// flushRows writes rows [from, to) of family fam at timestamp ts and flushes.
func flushRows(t *testing.T, tb *Tablet, fam string, from, to int, ts int64) {
	t.Helper()
	for i := from; i < to; i++ {
		apply(t, tb, fmt.Sprintf("r%05d", i), set(fam, "q", ts, fmt.Sprintf("v%d", ts)))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
}

// An operator's major compaction followed by the background compaction
// (which a flush requests, and which may have counted the files before the
// major one ran) writes each byte once: neither the background pass, nor
// a second major or merging compaction, rewrites the lone file the major
// compaction wrote.
func TestMajorCompactionIsNotRepeated(t *testing.T) {
	tb, log := oneVersionTablet(t, families.Family{Name: "v", MaxVersions: 1}, nil)
	for f := 0; f < 6; f++ { // over the L0 trigger (4)
		flushRows(t, tb, "v", f*50, f*50+80, int64(f+1))
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	if n := log.count(); n != 1 {
		t.Fatalf("%d compactions for one major compaction", n)
	}
	// The stale count: backgroundCompact looked before the major ran.
	if did, err := tb.compactFamily(bg, "v", tb.pickBackground); err != nil || did {
		t.Fatalf("background compaction after a major one: did %v, %v", did, err)
	}
	if err := tb.backgroundCompact(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, false); err != nil {
		t.Fatal(err)
	}
	if n := log.count(); n != 1 {
		t.Fatalf("the major compaction's output rewritten: %d compactions: %+v", n, log.events)
	}
	if got, want := readRow(t, tb, "r00100", nil), "v:q@3=v3"; got != want {
		t.Fatalf("r00100 = %q, want %q", got, want)
	}
	if s := tb.Stats().Families["v"]; s.SSTables != 1 || s.Cells != 330 {
		t.Fatalf("after compactions: %+v", s)
	}
}

// A lone file is still rewritten when there is something to drop: older
// versions a flush kept, tombstones, cells an age rule has reached since
// the last major compaction, a GC rule changed since it.
func TestLoneFileRewrittenWhenSomethingToDrop(t *testing.T) {
	const hour = int64(time.Hour / time.Microsecond)
	t.Run("versions a flush kept", func(t *testing.T) {
		tb, log := oneVersionTablet(t, families.Family{Name: "v", MaxVersions: 1}, nil)
		apply(t, tb, "r", set("v", "q", 1, "old"))
		apply(t, tb, "r", set("v", "q", 2, "new"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if err := tb.Compact(bg, true); err != nil {
			t.Fatal(err)
		}
		if n, s := log.count(), tb.Stats().Families["v"]; n != 1 || s.Cells != 1 {
			t.Fatalf("%d compactions, %+v", n, s)
		}
	})
	t.Run("tombstones", func(t *testing.T) {
		tb, log := oneVersionTablet(t, families.Family{Name: "v"}, nil)
		apply(t, tb, "r", set("v", "q", 1, "x"))
		apply(t, tb, "r", delCol("v", "q", 0, 0))
		apply(t, tb, "s", set("v", "q", 1, "y"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if err := tb.Compact(bg, true); err != nil {
			t.Fatal(err)
		}
		if n, s := log.count(), tb.Stats().Families["v"]; n != 1 || s.Tombstones != 0 || s.Cells != 1 {
			t.Fatalf("%d compactions, %+v", n, s)
		}
	})
	t.Run("an age rule reaches cells", func(t *testing.T) {
		var clock fakeClock
		clock.now.Store(10 * hour)
		fam := families.Family{Name: "v", GCRule: &families.GCRule{Kind: families.RuleUnion, Rules: []*families.GCRule{
			families.MaxVersionsRule(1), {Kind: families.RuleMaxAge, MaxAge: 3 * time.Hour},
		}}}
		tb, log := oneVersionTablet(t, fam, clock.Now)
		apply(t, tb, "old", set("v", "q", 8*hour, "x"))
		apply(t, tb, "new", set("v", "q", 9*hour, "y"))
		flushRows(t, tb, "v", 0, 1, 9*hour)
		apply(t, tb, "new", set("v", "q", 9*hour+1, "z"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if err := tb.Compact(bg, true); err != nil {
			t.Fatal(err)
		}
		if err := tb.Compact(bg, true); err != nil { // nothing reached yet
			t.Fatal(err)
		}
		if n, s := log.count(), tb.Stats().Families["v"]; n != 1 || s.Cells != 3 {
			t.Fatalf("%d compactions, %+v", n, s)
		}
		clock.now.Store(11*hour + 1) // "old" is now past the 3 h age
		if err := tb.Compact(bg, true); err != nil {
			t.Fatal(err)
		}
		if n, s := log.count(), tb.Stats().Families["v"]; n != 2 || s.Cells != 2 {
			t.Fatalf("%d compactions, %+v", n, s)
		}
		if got := scan(t, tb, ReadOptions{}); got != "new{v:q@32400000001=z} r00000{v:q@32400000000=v32400000000}" {
			t.Fatalf("scan = %s", got)
		}
	})
	t.Run("the GC rule changed", func(t *testing.T) {
		tb, log := oneVersionTablet(t, families.Family{Name: "v", MaxVersions: 3}, nil)
		for ts := int64(1); ts <= 3; ts++ {
			apply(t, tb, "r", set("v", "q", ts, "x"))
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if err := tb.Compact(bg, true); err != nil {
			t.Fatal(err)
		}
		if err := tb.SetFamilies([]families.Family{{Name: "v", MaxVersions: 1}}); err != nil {
			t.Fatal(err)
		}
		if err := tb.Compact(bg, true); err != nil {
			t.Fatal(err)
		}
		if n, s := log.count(), tb.Stats().Families["v"]; n != 2 || s.Cells != 1 {
			t.Fatalf("%d compactions, %+v", n, s)
		}
	})
}

// testFiles makes files of the given sizes (newest first) with disjoint
// sequence ranges, for the pickers.
func testFiles(sizes ...uint64) []*tableFile {
	fs := make([]*tableFile, len(sizes))
	for i, s := range sizes {
		seq := uint64(len(sizes)-i) * 10
		fs[i] = &tableFile{own: true, ref: manifest.FileRef{Size: s, MinSeq: seq - 9, MaxSeq: seq}}
	}
	return fs
}

func TestPickTiered(t *testing.T) {
	for _, c := range []struct {
		sizes      []uint64
		start, end int // the run picked; start == end: none
	}{
		{[]uint64{1, 1, 1, 1}, 0, 0},                // not over the trigger
		{[]uint64{1, 1, 1, 1, 1}, 0, 5},             // similar sizes: all
		{[]uint64{1, 1, 1, 1, 100}, 0, 4},           // the big base stays
		{[]uint64{300, 4, 16, 64, 256}, 0, 5},       // no older file bigger than the run
		{[]uint64{1, 1, 1, 4, 5}, 0, 3},             // 4 > 3: stop there
		{[]uint64{1, 1, 2, 4, 8, 16}, 0, 6},         // each file no bigger than the run so far
		{[]uint64{1, 4, 4, 64, 256}, 1, 3},          // a run further back
		{[]uint64{1, 4, 16, 64, 256}, 0, 2},         // no run: the smallest window
		{[]uint64{1, 3, 9, 27, 81, 243, 729}, 0, 4}, // as wide as the count needs
		// No run, and the smallest window would rewrite 99 to take in 1
		// (on every flush, as the newest file comes in): the window of
		// the most similar sizes instead.
		{[]uint64{1, 99, 200, 224, 250}, 2, 4},
	} {
		got := pickTiered(testFiles(c.sizes...), 4)
		want := testFiles(c.sizes...)[c.start:c.end]
		if len(got) != len(want) || (len(got) > 0 && got[0].ref.MaxSeq != want[0].ref.MaxSeq) {
			var g []uint64
			for _, f := range got {
				g = append(g, f.ref.Size)
			}
			t.Errorf("pickTiered(%v) = %v, want sizes[%d:%d]", c.sizes, g, c.start, c.end)
		}
	}
}

// With the default trigger, the background policy's write amplification
// grows with the log of the data, and a family keeps at most trigger
// files: simulated flushes of random sizes, each followed by the
// compactions the picker asks for (the picker's runs merged into one file
// of their total size).
func TestPickTieredWriteAmplification(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	trigger := defaultL0Trigger
	for _, n := range []int{40, 160, 640, 2560} {
		var files []*tableFile
		var ingested, written uint64
		seq := uint64(0)
		for range n {
			size := uint64(900 + rng.Intn(200))
			seq++
			files = append([]*tableFile{{own: true, ref: manifest.FileRef{Size: size, MinSeq: seq, MaxSeq: seq}}}, files...)
			ingested += size
			written += size
			for {
				in := pickTiered(files, trigger)
				if len(in) == 0 {
					break
				}
				if len(in) < 2 {
					t.Fatalf("seed %d: a run of %d file", seed, len(in))
				}
				s := indexOf(files, in[0])
				out := &tableFile{own: true, ref: manifest.FileRef{Size: filesSize(in), MinSeq: in[len(in)-1].ref.MinSeq, MaxSeq: in[0].ref.MaxSeq}}
				written += out.ref.Size
				files = append(append(append([]*tableFile{}, files[:s]...), out), files[s+len(in):]...)
			}
			if len(files) > trigger {
				t.Fatalf("seed %d: %d files after a flush", seed, len(files))
			}
		}
		wa := float64(written) / float64(ingested)
		bound := 1 + math.Log2(float64(n))
		t.Logf("%d flushes: write amplification %.2f (bound %.2f), %d files", n, wa, bound, len(files))
		if wa > bound {
			t.Errorf("seed %d: %d flushes: write amplification %.2f over %.2f", seed, n, wa, bound)
		}
	}
}

func indexOf(fs []*tableFile, f *tableFile) int {
	for i := range fs {
		if fs[i] == f {
			return i
		}
	}
	return -1
}

// Background compactions (pickTiered: runs of similar size, often in the
// middle of a family's files) never change what a read returns: the same
// random writes (sets, column, family and row deletes, aggregate adds),
// flushed at random intervals, read the same from a tablet compacted
// after every flush as from one never compacted.
func TestTieredCompactionsReadTheSame(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	// No family limits its versions: a compaction removes a cell its
	// version rule condemns, and a later delete of the newer versions
	// would show it again only on the never-compacted twin (the rule
	// ranks visible cells; docs/CONTRACTS.md §1), with any picker.
	fams := []families.Family{{Name: "a"}, {Name: "b"}, {Name: "sum", ValueType: families.Sum}}
	open := func(trigger int) *Tablet {
		opts := testOptions(t.TempDir())
		opts.Families = fams
		opts.L0Trigger = trigger
		return openTablet(t, opts)
	}
	ref, tb := open(1000), open(2)
	randMut := func() cell.Mutation {
		q := fmt.Sprint("q", r.Intn(3))
		f := []string{"a", "b"}[r.Intn(2)]
		switch n := r.Intn(20); {
		case n < 10:
			return set(f, q, int64(r.Intn(6)), fmt.Sprint(r.Intn(100)))
		case n < 14:
			return add("sum", q, int64(r.Intn(3)), int64(r.Intn(10)))
		case n < 17:
			start := int64(r.Intn(6))
			end := int64(0)
			if r.Intn(2) == 0 {
				end = start + 1 + int64(r.Intn(3))
			}
			return delCol([]string{"a", "b", "sum"}[r.Intn(3)], q, start, end)
		case n < 19:
			return delFam([]string{"a", "b", "sum"}[r.Intn(3)])
		}
		return delRow()
	}
	middle, next := 0, 1+r.Intn(40)
	for step := 0; step < 600; step++ {
		row := fmt.Sprint("r", r.Intn(16))
		muts := []cell.Mutation{randMut()}
		for r.Intn(3) == 0 {
			muts = append(muts, randMut())
		}
		apply(t, ref, row, muts...)
		apply(t, tb, row, muts...)
		if step != next {
			continue
		}
		next = step + 1 + r.Intn(40) // files of varied sizes
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if v, err := tb.currentVersion(); err == nil {
			for _, fs := range v.files {
				if in := pickTiered(fs, 2); len(in) > 0 && in[0] != fs[0] {
					middle++
				}
			}
			v.unref()
		}
		if err := tb.backgroundCompact(bg); err != nil {
			t.Fatal(err)
		}
		if got, want := scan(t, tb, ReadOptions{}), scan(t, ref, ReadOptions{}); got != want {
			t.Fatalf("seed %d, step %d: compacted tablet reads\n%s\nthe other\n%s", seed, step, got, want)
		}
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	if got, want := scan(t, tb, ReadOptions{}), scan(t, ref, ReadOptions{}); got != want {
		t.Fatalf("seed %d, after a major compaction: compacted tablet reads\n%s\nthe other\n%s", seed, got, want)
	}
	t.Logf("%d background passes began with a run not at the newest file", middle)
}
