package tablet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/wal"
)

func TestReopenAfterCloseReplaysTheLog(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.SyncMode = wal.SyncAlways
	tb := openTablet(t, opts)
	apply(t, tb, "r1", set("a", "q", 1, "v1"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, tb, "r2", set("b", "q", 2, "v2"))
	apply(t, tb, "r1", delCol("a", "q", 0, 0), set("a", "q", 0, "older-after-delete"))
	before := scan(t, tb, ReadOptions{})
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := tb.Apply(bg, []byte("r"), []cell.Mutation{set("a", "q", 1, "v")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close: %v", err)
	}
	tb2 := openTablet(t, opts)
	if got := scan(t, tb2, ReadOptions{}); got != before {
		t.Fatalf("after reopen %q, before %q", got, before)
	}
	// New writes continue after the replayed sequence numbers.
	apply(t, tb2, "r1", delRow())
	apply(t, tb2, "r1", set("a", "q", 1, "new"))
	if got := readRow(t, tb2, "r1", nil); got != "a:q@1=new" {
		t.Fatalf("got %q", got)
	}
	if err := tb2.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb2.Close(); err != nil {
		t.Fatal(err)
	}
	tb3 := openTablet(t, opts)
	if got := readRow(t, tb3, "r1", nil); got != "a:q@1=new" {
		t.Fatalf("flush + reopen: got %q", got)
	}
	if s := tb3.Stats(); s.MemtableBytes != 0 {
		t.Fatalf("flushed data replayed again: %d memtable bytes", s.MemtableBytes)
	}
}

func TestCompactionKeepsResultsAndShrinksTombstones(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.Families = []families.Family{{Name: "a", MaxVersions: 2}}
	tb := openTablet(t, opts)
	// A big oldest file, then small ones with deletes: merging leaves the
	// oldest alone and keeps tombstones.
	for i := 0; i < 200; i++ {
		apply(t, tb, fmt.Sprintf("row%03d", i), set("a", "q", 1, "base"), set("a", "q", 2, "base2"))
	}
	flush := func() {
		t.Helper()
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	flush()
	for i := 0; i < 3; i++ {
		apply(t, tb, fmt.Sprintf("row%03d", i), delRow())
		apply(t, tb, fmt.Sprintf("row%03d", 10+i), delCol("a", "q", 2, 3))
		apply(t, tb, fmt.Sprintf("row%03d", 20+i), set("a", "q", 3, "three"))
		flush()
	}
	want := scan(t, tb, ReadOptions{})
	st := tb.Stats()
	if st.Families["a"].SSTables != 4 || st.Families["a"].Tombstones != 6 {
		t.Fatalf("before: %+v", st.Families["a"])
	}
	if err := tb.Compact(bg, false); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, tb, ReadOptions{}); got != want {
		t.Fatalf("merging compaction changed results:\n%s\n%s", got, want)
	}
	st = tb.Stats()
	if st.Families["a"].SSTables != 2 || st.Families["a"].Tombstones != 6 {
		t.Fatalf("after merging: %+v", st.Families["a"])
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, tb, ReadOptions{}); got != want {
		t.Fatalf("major compaction changed results")
	}
	st = tb.Stats()
	// 197 rows left; rows 20-22 keep two versions of three; GC drops the third.
	if fs := st.Families["a"]; fs.SSTables != 1 || fs.Tombstones != 0 || fs.Cells != 197*2-3 {
		t.Fatalf("after major: %+v", fs)
	}
	entries, _ := os.ReadDir(filepath.Join(tb.dir, "a"))
	if len(entries) != 1 {
		t.Fatalf("obsolete files left: %d", len(entries))
	}
}

func TestTTLDropsWholeFilesWithoutReading(t *testing.T) {
	const sec = int64(time.Second / time.Microsecond)
	clk := &fakeClock{}
	clk.now.Store(1000 * sec)
	opts := testOptions(t.TempDir())
	opts.Families = []families.Family{{Name: "a", TTL: 100 * time.Second}}
	opts.Clock = clk.Now
	tb := openTablet(t, opts)
	for i := int64(0); i < 3; i++ {
		apply(t, tb, fmt.Sprint("r", i), set("a", "q", (1000+i*100)*sec, "v"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	files := func() []string {
		es, _ := os.ReadDir(filepath.Join(tb.dir, "a"))
		var n []string
		for _, e := range es {
			n = append(n, e.Name())
		}
		return n
	}
	before := files()
	if len(before) != 3 {
		t.Fatalf("files %v", before)
	}
	// Make the oldest file unreadable: dropping must not read it.
	oldest := filepath.Join(tb.dir, "a", before[0])
	clk.now.Store(1150 * sec) // cutoff 1050s: only the first file is past it
	if err := os.Truncate(oldest, 0); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(oldest); !os.IsNotExist(err) {
		t.Fatalf("expired file still there: %v", err)
	}
	if got := scan(t, tb, ReadOptions{}); got != "r1{a:q@1100000000=v} r2{a:q@1200000000=v}" {
		t.Fatalf("got %q", got)
	}
	if n := tb.Stats().Families["a"].SSTables; n != 1 {
		t.Fatalf("%d sstables left, want 1 (two merged)", n)
	}
}

func TestSplitThenOpenBothChildren(t *testing.T) {
	root := t.TempDir()
	opts := testOptions(filepath.Join(root, "parent"))
	tb := openTablet(t, opts)
	const n = 200
	for i := 0; i < n; i++ {
		apply(t, tb, fmt.Sprintf("row%03d", i), set("a", "q", 1, fmt.Sprint(i)), set("b", "z", 2, "b"))
		if i == n/2 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(t, tb, "row007", delRow()) // in the memtable at split time
	all := scan(t, tb, ReadOptions{})
	key, err := tb.SplitKey()
	if err != nil {
		t.Fatal(err)
	}
	if string(key) <= "row000" || string(key) > "row199" {
		t.Fatalf("split key %q", key)
	}
	left, right := filepath.Join(root, "left"), filepath.Join(root, "right")
	if err := tb.Split(bg, []byte("row100"), left, right); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.ReadRow(bg, []byte("row001"), nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("parent after split: %v", err)
	}
	refs, err := manifest.Referenced(nil, left)
	if err != nil || len(refs) == 0 {
		t.Fatalf("Referenced(left) = %v, %v", refs, err)
	}
	for _, r := range refs {
		if filepath.Dir(filepath.Dir(r)) != filepath.Join(root, "parent") {
			t.Fatalf("reference %s is not in the parent folder", r)
		}
	}
	lopts, ropts := testOptions(left), testOptions(right)
	lt, rt := openTablet(t, lopts), openTablet(t, ropts)
	if s, e := lt.Range(); s != nil || string(e) != "row100" {
		t.Fatalf("left range [%q, %q)", s, e)
	}
	if s, e := rt.Range(); string(s) != "row100" || e != nil {
		t.Fatalf("right range [%q, %q)", s, e)
	}
	ls, rs := scan(t, lt, ReadOptions{}), scan(t, rt, ReadOptions{})
	if ls+" "+rs != all {
		t.Fatalf("children's rows differ from the parent's")
	}
	if _, err := lt.ReadRow(bg, []byte("row150"), nil); !errors.Is(err, ErrOutOfRange) {
		t.Fatalf("left child serves the right's row: %v", err)
	}
	apply(t, lt, "row001", set("a", "q", 9, "left-write"))
	apply(t, rt, "row150", set("a", "q", 9, "right-write"))
	// Compaction rewrites the references into the children's own files.
	for _, c := range []*Tablet{lt, rt} {
		if err := c.Flush(bg); err != nil {
			t.Fatal(err)
		}
		if err := c.Compact(bg, false); err != nil {
			t.Fatal(err)
		}
	}
	if refs, _ := manifest.Referenced(nil, left); len(refs) != 0 {
		t.Fatalf("left still references %v", refs)
	}
	if got := readRow(t, lt, "row001", nil); got != "a:q@9=left-write a:q@1=1 b:z@2=b" {
		t.Fatalf("left row001: %q", got)
	}
	if got := readRow(t, rt, "row150", nil); got != "a:q@9=right-write a:q@1=150 b:z@2=b" {
		t.Fatalf("right row150: %q", got)
	}
	if got := scan(t, rt, ReadOptions{Keys: [][]byte{[]byte("row099")}}); got != "" {
		t.Fatalf("right child returned a left row: %q", got)
	}
	// The parent's files survive the children's compactions.
	if _, err := os.Stat(refs[0]); err != nil {
		t.Fatalf("parent file removed: %v", err)
	}
}

func TestSplitKeyNeedsTwoRows(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	if _, err := tb.SplitKey(); !errors.Is(err, ErrNoSplitKey) {
		t.Fatalf("empty: %v", err)
	}
	for i := 0; i < 50; i++ {
		apply(t, tb, "only", set("a", fmt.Sprint(i), 1, "v"))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.SplitKey(); !errors.Is(err, ErrNoSplitKey) {
		t.Fatalf("one row: %v", err)
	}
	if err := tb.Split(bg, []byte("only"), t.TempDir(), t.TempDir()); err != nil {
		t.Fatalf("split at the only row (right child gets it): %v", err)
	}
}

func TestResourceExhaustedPastHardLimit(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.Memory = NewMemoryBudget(1<<10, 4<<10)
	opts.Memory.SetMaxStall(time.Millisecond)
	tb := openTablet(t, opts)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = tb.Apply(bg, []byte(fmt.Sprint("r", i)), []cell.Mutation{set("a", "q", 1, string(make([]byte, 200)))})
	}
	if !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("got %v", err)
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if used := opts.Memory.Used(); used != 0 {
		t.Fatalf("budget still charged %d after flush", used)
	}
	apply(t, tb, "after", set("a", "q", 1, "v"))
}

func TestBackgroundFlushUnderSoftLimit(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.DisableBackgroundWork = false
	opts.MemtableSize = 8 << 10
	opts.L0Trigger = 2
	tb := openTablet(t, opts)
	for i := 0; i < 400; i++ {
		apply(t, tb, fmt.Sprintf("r%04d", i), set("a", "q", 1, string(make([]byte, 100))))
	}
	deadline := time.Now().Add(10 * time.Second)
	for tb.Stats().Families["a"].SSTables == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if tb.Stats().Families["a"].SSTables == 0 {
		t.Fatal("no background flush")
	}
	if got := len(scan(t, tb, ReadOptions{Filter: nil})); got == 0 {
		t.Fatal("rows lost")
	}
	it, _ := tb.NewRowIterator(bg, ReadOptions{})
	n := 0
	for it.Next() {
		n++
	}
	if err := it.Close(); err != nil || n != 400 {
		t.Fatalf("%d rows, %v", n, err)
	}
}

func TestStats(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.L0Trigger = 1
	tb := openTablet(t, opts)
	apply(t, tb, "r", set("a", "q", 1, "v"), set("a", "p", 1, "v"), delCol("b", "x", 0, 0))
	s := tb.Stats()
	if s.MemtableBytes == 0 || s.LastSeq != 1 || s.LogBytes == 0 || len(s.Families) != 2 {
		t.Fatalf("before flush: %+v", s)
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	apply(t, tb, "r", delFam("a"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	s = tb.Stats()
	a, b := s.Families["a"], s.Families["b"]
	if a.SSTables != 2 || a.Cells != 2 || a.Tombstones != 1 || b.SSTables != 1 || b.Tombstones != 1 || b.Cells != 0 {
		t.Fatalf("families: %+v", s.Families)
	}
	if s.MemtableBytes != 0 || s.LastSeq != 2 || s.CompactionBacklog != 1 || s.SizeBytes != a.Bytes+b.Bytes || a.Bytes == 0 {
		t.Fatalf("stats: %+v", s)
	}
}

func TestFamilyNamesThatClashWithTabletFilesGetTheirOwnFolders(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.Families = []families.Family{{Name: ".."}, {Name: "."}, {Name: "log"}, {Name: "MANIFEST"}}
	tb := openTablet(t, opts)
	for _, f := range opts.Families {
		apply(t, tb, "r", set(f.Name, "q", 1, f.Name))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTablet(t, opts)
	if got := readRow(t, tb, "r", nil); got != ".:q@1=. ..:q@1=.. MANIFEST:q@1=MANIFEST log:q@1=log" {
		t.Fatalf("got %q", got)
	}
	for _, name := range []string{"~..", "~.", "~log", "~MANIFEST"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("folder %s: %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("files written outside the tablet folder: %d entries", len(entries))
	}
}

// TestWritersWaitPastSoftLimit: over the soft limit a writer is throttled,
// not failed: it waits (here until its context ends, since background work
// is off and nothing drains the memtable) instead of going ahead at once.
func TestWritersWaitPastSoftLimit(t *testing.T) {
	opts := testOptions(t.TempDir())
	opts.Memory = NewMemoryBudget(1<<10, 1<<30)
	opts.Memory.SetMaxStall(time.Minute)
	tb := openTablet(t, opts)
	apply(t, tb, "big", set("a", "q", 1, string(make([]byte, 4<<10))))
	ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := tb.Apply(ctx, []byte("next"), []cell.Mutation{set("a", "q", 1, "v")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write over the soft limit = %v after %s, want it to wait until its deadline", err, time.Since(start))
	}
	if errors.Is(err, ErrResourceExhausted) {
		t.Fatal("a write under the hard limit failed with RESOURCE_EXHAUSTED")
	}
}

// TestSoftLimitFlushesTheLargestTablet: a writer over the soft limit makes
// the largest memtable flush, and goes ahead once memory is back under it.
func TestSoftLimitFlushesTheLargestTablet(t *testing.T) {
	budget := NewMemoryBudget(8<<10, 1<<30)
	budget.SetMaxStall(time.Minute)
	open := func(memtable int64) *Tablet {
		opts := testOptions(t.TempDir())
		opts.DisableBackgroundWork = false
		opts.MemtableSize = memtable
		opts.Memory = budget
		return openTablet(t, opts)
	}
	large, small := open(1<<30), open(1<<30) // their own thresholds never trigger
	apply(t, small, "s", set("a", "q", 1, "v"))
	apply(t, large, "big", set("a", "q", 1, string(make([]byte, 16<<10))))
	ctx, cancel := context.WithTimeout(bg, 30*time.Second)
	defer cancel()
	if err := small.Apply(ctx, []byte("t"), []cell.Mutation{set("a", "q", 1, "v")}); err != nil {
		t.Fatalf("write after the largest tablet flushed: %v", err)
	}
	if got := large.Stats().Families["a"].SSTables; got != 1 {
		t.Fatalf("largest tablet has %d SSTables, want 1 (flushed by the budget)", got)
	}
	if got := small.Stats().Families["a"].SSTables; got != 0 {
		t.Fatalf("small tablet has %d SSTables, want 0", got)
	}
}
