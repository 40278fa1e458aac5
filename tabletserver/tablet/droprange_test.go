package tablet

import (
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/wal"
)

// dropTwin writes the same cells to the tablet under test and to a
// reference tablet (the model); a drop on the tablet is a row deletion of
// every row in the range on the reference, which hides exactly the cells
// written before it.
type dropTwin struct {
	t       *testing.T
	tb, ref *Tablet
	ts      int64
}

func newDropTwin(t *testing.T, opts Options) *dropTwin {
	ro := testOptions(t.TempDir())
	return &dropTwin{t: t, tb: openTablet(t, opts), ref: openTablet(t, ro)}
}

// write writes a new cell (one per family) to row in both tablets.
func (d *dropTwin) write(row string) {
	d.t.Helper()
	d.ts++
	muts := []cell.Mutation{set("a", fmt.Sprintf("q%d", d.ts%3), d.ts, fmt.Sprintf("a%d", d.ts)), set("b", "q", d.ts, fmt.Sprintf("b%d", d.ts))}
	apply(d.t, d.tb, row, muts...)
	apply(d.t, d.ref, row, muts...)
}

// check compares full scans of the two tablets.
func (d *dropTwin) check(what string) {
	d.t.Helper()
	got, want := scan(d.t, d.tb, ReadOptions{}), scan(d.t, d.ref, ReadOptions{})
	if got != want {
		d.t.Fatalf("%s: tablet reads\n  %s\nwant\n  %s", what, got, want)
	}
}

// drop drops [start, end) from the tablet; the reference drops it by
// deleting the rows (a row tombstone hides all before it).
func (d *dropTwin) drop(start, end string) {
	d.t.Helper()
	var s, e []byte
	if start != "" {
		s = []byte(start)
	}
	if end != "" {
		e = []byte(end)
	}
	if err := d.tb.DropRange(bg, s, e); err != nil {
		d.t.Fatalf("DropRange(%q, %q): %v", start, end, err)
	}
	it, err := d.ref.NewRowIterator(bg, ReadOptions{Ranges: []RowRange{{Start: s, End: e}}})
	if err != nil {
		d.t.Fatal(err)
	}
	var rows []string
	for it.Next() {
		rows = append(rows, string(it.Row()))
	}
	_ = it.Close()
	for _, r := range rows {
		apply(d.t, d.ref, r, delRow())
	}
}

func rowName(prefix string, i int) string { return fmt.Sprintf("%s%03d", prefix, i) }

// TestDropRangeMatchesModel drops prefixes, ranges and everything over data
// spread across the memtable and several SSTables that lie wholly inside,
// partly inside and outside the range, and compares every row with a
// reference tablet that simply deleted the dropped rows.
func TestDropRangeMatchesModel(t *testing.T) {
	d := newDropTwin(t, testOptions(t.TempDir()))
	prefixes := []string{"a", "k", "m", "z"}
	// SSTable 1: every prefix (partly in every range); SSTable 2: "k"
	// only (wholly inside prefix k); SSTable 3: "a" and "m"; memtable:
	// every prefix.
	for i := 0; i < 40; i++ {
		for _, p := range prefixes {
			d.write(rowName(p, i))
		}
	}
	if err := d.tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i += 2 {
		d.write(rowName("k", i))
	}
	if err := d.tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i += 3 {
		d.write(rowName("a", i))
		d.write(rowName("m", i))
	}
	if err := d.tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i += 5 {
		for _, p := range prefixes {
			d.write(rowName(p, i))
		}
	}
	d.check("before the drops")
	d.drop("k", "l") // prefix k
	d.check("after dropping prefix k")
	d.drop("a010", "m020")
	d.check("after dropping [a010, m020)")
	for i := 0; i < 40; i += 4 {
		d.write(rowName("k", i)) // after the drop: must stay
	}
	d.drop("z", "")
	d.check("after dropping [z, end)")
	if err := d.tb.Compact(bg, false); err != nil {
		t.Fatal(err)
	}
	d.check("after a compaction")
	d.drop("", "")
	d.check("after dropping everything")
	if st := d.tb.Stats(); st.Families["a"].SSTables+st.Families["b"].SSTables != 0 {
		t.Fatalf("after dropping everything %+v remain", st.Families)
	}
	d.write(rowName("k", 1))
	d.check("a write after dropping everything")
}

// TestDropRangeReopenDoesNotResurrect closes the tablet without a flush
// after drops (the commit log still holds every dropped write, and writes
// made after the drop only in the log) and reopens it: replay must bring
// back the later writes and none of the dropped ones.
func TestDropRangeReopenDoesNotResurrect(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.SyncMode = wal.SyncAlways
	d := newDropTwin(t, opts)
	for i := 0; i < 30; i++ {
		d.write(rowName("a", i))
		d.write(rowName("b", i))
	}
	if err := d.tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		d.write(rowName("b", i)) // memtable only, in the log
	}
	d.drop("b", "c")
	for i := 0; i < 30; i += 7 {
		d.write(rowName("b", i)) // after the drop: survive
	}
	d.check("after the drop")
	if err := d.tb.Close(); err != nil {
		t.Fatal(err)
	}
	d.tb = openTablet(t, opts)
	d.check("after reopening (replay)")
	// Again, with a shared-nothing second drop and everything later in
	// the memtable.
	d.drop("", "")
	d.write(rowName("a", 3))
	if err := d.tb.Close(); err != nil {
		t.Fatal(err)
	}
	d.tb = openTablet(t, opts)
	d.check("after dropping everything and reopening")
}

// TestDropRangeAfterFailedFlush drops while a memtable frozen by a failed
// flush waits beside the active one: both must be cut, or the frozen one's
// rows come back at its next flush (or replay).
func TestDropRangeAfterFailedFlush(t *testing.T) {
	fsys := vfs.NewFaulty(vfs.Default)
	opts := testOptions(t.TempDir())
	opts.FS = fsys
	d := newDropTwin(t, opts)
	for i := 0; i < 10; i++ {
		d.write(rowName("a", i))
	}
	fsys.Set(failOn(vfs.OpCreate, sst(), vfs.Failf("disk says no")))
	if err := d.tb.Flush(bg); err == nil {
		t.Fatal("Flush succeeded on a failing disk")
	}
	fsys.Set(nil)
	for i := 10; i < 20; i++ {
		d.write(rowName("a", i)) // into the new active memtable
	}
	d.drop("a", "b")
	d.check("after the drop")
	if err := d.tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	d.check("after a flush")
}

// readCounter counts the reads (ReadAt) of each file through a vfs.Faulty.
type readCounter struct {
	mu    sync.Mutex
	reads map[string]int
}

func (c *readCounter) injector() vfs.Injector {
	return func(op vfs.Op, name string) error {
		if op == vfs.OpRead || op == vfs.OpOpen {
			c.mu.Lock()
			c.reads[filepath.Clean(name)]++
			c.mu.Unlock()
		}
		return nil
	}
}

func (c *readCounter) reset() {
	c.mu.Lock()
	c.reads = map[string]int{}
	c.mu.Unlock()
}

func (c *readCounter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads[filepath.Clean(path)]
}

// TestDropRangeDoesNotReadFilesInside checks the "fast" promise: SSTables
// wholly inside the range leave without a single read (of a fresh block
// cache, so a read would reach the disk), and a file partly inside is
// rewritten.
func TestDropRangeDoesNotReadFilesInside(t *testing.T) {
	fsys := vfs.NewFaulty(vfs.Default)
	rc := &readCounter{reads: map[string]int{}}
	fsys.Set(rc.injector())
	opts := testOptions(t.TempDir())
	opts.FS = fsys
	opts.Families = []families.Family{{Name: "a", BlockSize: families.MinBlockSize}, {Name: "b", BlockSize: families.MinBlockSize}}
	tb := openTablet(t, opts)
	for i := 0; i < 200; i++ {
		apply(t, tb, rowName("x", i), set("a", "q", 1, fmt.Sprintf("value-%d", i)))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		apply(t, tb, rowName("w", i), set("a", "q", 1, "v"))
		apply(t, tb, rowName("x", i), set("a", "q", 2, "v2"))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	// A fresh cache: reopen.
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	tb = openTablet(t, opts)
	v := tb.head()
	files := v.files["a"]
	if len(files) != 2 {
		t.Fatalf("family a has %d SSTables, want 2", len(files))
	}
	inside, partial := files[1], files[0] // oldest: only x rows
	rc.reset()
	if err := tb.DropRange(bg, []byte("x"), []byte("y")); err != nil {
		t.Fatal(err)
	}
	if n := rc.count(inside.path); n != 0 {
		t.Errorf("the SSTable wholly inside the range was read %d times", n)
	}
	if n := rc.count(partial.path); n == 0 {
		t.Errorf("the SSTable partly inside the range was not read (not rewritten?)")
	}
	if got := scan(t, tb, ReadOptions{Ranges: []RowRange{{Start: []byte("x")}}}); got != "" {
		t.Errorf("after the drop rows x... read %s", got)
	}
	if got := len(tb.head().files["a"]); got != 1 {
		t.Errorf("family a has %d SSTables after the drop, want 1 (the rewritten one)", got)
	}
	if got := readRow(t, tb, rowName("w", 3), nil); got != "a:q@1=v" {
		t.Errorf("row outside the range reads %q", got)
	}
	// A file that spans the range but holds no row in it (w009 < w00x <
	// w010) is kept as it is, not rewritten.
	kept := tb.head().files["a"][0].path
	if err := tb.DropRange(bg, []byte("w00x"), []byte("w00y")); err != nil {
		t.Fatal(err)
	}
	if now := tb.head().files["a"]; len(now) != 1 || now[0].path != kept {
		t.Errorf("a drop of an empty stretch rewrote the file spanning it")
	}
}

// TestDropRangeConcurrentWriters runs writers while ranges are dropped:
// every cell acknowledged before a drop started must be gone after it (or
// rewritten after it), every cell whose write started after a drop returned
// must be there, and each row's writes are whole (both families or none).
func TestDropRangeConcurrentWriters(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	const writers, rows, nDrops, perPhase = 4, 8, 5, 100
	type write struct {
		row        string
		q          string
		start, end int64 // drops returned when it started; drops begun when it was acknowledged
	}
	var drops atomic.Int64    // drops returned
	var dropping atomic.Int64 // drops begun
	var started, done atomic.Int64
	var failed atomic.Bool
	var mu sync.Mutex
	var log []write
	// The writers' budget grows by perPhase when a drop begins, so that
	// writes race with every drop, and the run's size does not depend on
	// the machine's speed: (nDrops+1)*perPhase writes in all.
	budget := func() int64 { return (dropping.Load() + 1) * perPhase }
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(w)))
			for n := 0; ; n++ {
				if started.Load() >= (nDrops+1)*perPhase || failed.Load() {
					return
				}
				if started.Add(1) > budget() {
					started.Add(-1)
					time.Sleep(100 * time.Microsecond) // wait for the next drop
					continue
				}
				row := rowName("r", rng.Intn(rows))
				q := fmt.Sprintf("w%d-%d", w, n)
				startDone := drops.Load()
				if err := tb.Apply(bg, []byte(row), []cell.Mutation{set("a", q, 1, "x"), set("b", q, 1, "x")}); err != nil {
					t.Error(err)
					failed.Store(true)
					return
				}
				mu.Lock()
				log = append(log, write{row: row, q: q, start: startDone, end: dropping.Load()})
				mu.Unlock()
				done.Add(1)
			}
		}(w)
	}
	for i := int64(0); i < nDrops; i++ {
		// Let this phase's writes land, then drop (half the time every
		// row, else half the rows) while the next phase's run.
		for done.Load() < (i+1)*perPhase {
			if failed.Load() {
				wg.Wait()
				t.FailNow()
			}
			time.Sleep(100 * time.Microsecond)
		}
		if i%2 == 1 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
		dropping.Add(1)
		end := []byte("s")
		if i%2 == 0 {
			end = []byte(rowName("r", rows/2))
		}
		if err := tb.DropRange(bg, []byte("r"), end); err != nil {
			t.Fatal(err)
		}
		drops.Add(1)
	}
	wg.Wait() // the last phase's writes: after every drop
	if failed.Load() {
		t.FailNow()
	}
	// Which drops covered which rows: drop i (0-based) covers all rows
	// when i is odd, else rows below rows/2.
	covers := func(i int64, row string) bool { return i%2 == 1 || row < rowName("r", rows/2) }
	for _, w := range log {
		cells, err := tb.ReadRow(bg, []byte(w.row), nil)
		if err != nil {
			t.Fatal(err)
		}
		var fams []string
		for _, c := range cells {
			if string(c.Qualifier) == w.q {
				fams = append(fams, c.Family)
			}
		}
		// Gone for sure if a covering drop started after the write was
		// acknowledged; there for sure if no covering drop was running
		// or began after the write started.
		mustGone, mayGone := false, false
		for i := int64(0); i < nDrops; i++ {
			if !covers(i, w.row) {
				continue
			}
			if i >= w.end {
				mustGone = true // drop i began after the ack
			}
			if i >= w.start {
				mayGone = true // drop i returned after the write began
			}
		}
		switch {
		case len(fams) == 1:
			t.Errorf("write %s %s: only family %v survives: a row's write is not atomic", w.row, w.q, fams)
		case mustGone && len(fams) != 0:
			t.Errorf("write %s %s acknowledged before a covering drop started survives", w.row, w.q)
		case !mayGone && len(fams) == 0:
			t.Errorf("write %s %s made after every covering drop returned is lost", w.row, w.q)
		}
	}
}

// TestDropRangeRacesCompaction runs a compaction and a drop at once, both
// ways round (the drop starts while the compaction writes its output, and
// a compaction starts while the drop rewrites a file): the compaction's
// output must never bring the dropped rows back.
func TestDropRangeRacesCompaction(t *testing.T) {
	for _, dropFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("dropFirst=%v", dropFirst), func(t *testing.T) {
			tb := openTablet(t, testOptions(t.TempDir()))
			for round := 0; round < 3; round++ {
				for i := 0; i < 20; i++ {
					apply(t, tb, rowName("a", i), set("a", "q", int64(round), "v"))
					apply(t, tb, rowName("d", i), set("a", "q", int64(round), "v"))
				}
				if err := tb.Flush(bg); err != nil {
					t.Fatal(err)
				}
			}
			var once sync.Once
			var other sync.WaitGroup
			var otherErr error
			tb.testHookTableWritten = func() {
				once.Do(func() {
					other.Add(1)
					go func() {
						defer other.Done()
						if dropFirst {
							otherErr = tb.Compact(bg, false)
						} else {
							otherErr = tb.DropRange(bg, []byte("d"), []byte("e"))
						}
					}()
				})
			}
			var err error
			if dropFirst {
				err = tb.DropRange(bg, []byte("d"), []byte("e"))
			} else {
				err = tb.Compact(bg, false)
			}
			other.Wait()
			tb.testHookTableWritten = nil
			if err != nil || otherErr != nil {
				t.Fatalf("errors: %v, %v", err, otherErr)
			}
			if got := scan(t, tb, ReadOptions{Ranges: []RowRange{{Start: []byte("d")}}}); got != "" {
				t.Fatalf("dropped rows read back: %s", got)
			}
			if err := tb.Compact(bg, true); err != nil {
				t.Fatal(err)
			}
			if got := scan(t, tb, ReadOptions{Ranges: []RowRange{{Start: []byte("d")}}}); got != "" {
				t.Fatalf("dropped rows read back after a major compaction: %s", got)
			}
			if got := readRow(t, tb, rowName("a", 5), nil); got != "a:q@2=v a:q@1=v a:q@0=v" {
				t.Fatalf("row a005 reads %q", got)
			}
		})
	}
}

// TestDropRangeOnSplitChild drops a range from split children, whose files
// are references to the parent's (bounded): a reference wholly inside goes
// unread, one partly inside is rewritten within its bounds.
func TestDropRangeOnSplitChild(t *testing.T) {
	root := t.TempDir()
	opts := testOptions(filepath.Join(root, "p"))
	tb, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		apply(t, tb, rowName("a", i), set("a", "q", 1, "v"))
		apply(t, tb, rowName("b", i), set("a", "q", 1, "v"))
	}
	if err := tb.Split(bg, []byte("b"), filepath.Join(root, "l"), filepath.Join(root, "r")); err != nil {
		t.Fatal(err)
	}
	lo := testOptions(filepath.Join(root, "l"))
	lo.Create = false
	left := openTablet(t, lo)
	ro := lo
	ro.Dir = filepath.Join(root, "r")
	right := openTablet(t, ro)
	// Left: [a010, a020) is partly inside its reference; right: the
	// whole "b" prefix covers its reference.
	if err := left.DropRange(bg, []byte(rowName("a", 10)), []byte(rowName("a", 20))); err != nil {
		t.Fatal(err)
	}
	if err := right.DropRange(bg, []byte("b"), []byte("c")); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, right, ReadOptions{}); got != "" {
		t.Fatalf("right child after the drop: %s", got)
	}
	var want []string
	for i := 0; i < 30; i++ {
		if i < 10 || i >= 20 {
			want = append(want, rowName("a", i)+"{a:q@1=v}")
		}
	}
	if got := scan(t, left, ReadOptions{}); got != fmt.Sprint(joinSpace(want)) {
		t.Fatalf("left child after the drop:\n  %s\nwant\n  %s", got, joinSpace(want))
	}
	// The parent's file is still there for the other references, and the
	// children reopen to the same contents.
	for _, c := range []*Tablet{left, right} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	left, right = openTablet(t, lo), openTablet(t, ro)
	if got := scan(t, left, ReadOptions{}) + scan(t, right, ReadOptions{}); got != joinSpace(want) {
		t.Fatalf("after reopening the children read %s", got)
	}
}

func joinSpace(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// TestDropRangeClosed fails on a closed tablet.
func TestDropRangeClosed(t *testing.T) {
	tb := openTablet(t, testOptions(t.TempDir()))
	_ = tb.Close()
	if err := tb.DropRange(bg, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("DropRange on a closed tablet = %v, want ErrClosed", err)
	}
	tb2 := openTablet(t, testOptions(t.TempDir()))
	if err := tb2.DropRange(bg, []byte("b"), []byte("a")); !errors.Is(err, cell.ErrInvalid) {
		t.Fatalf("DropRange(b, a) = %v, want cell.ErrInvalid", err)
	}
}

// TestDropRangeRacesSplit starts a split while the drop rewrites a file:
// the children must not see the dropped rows (the split waits for the
// drop's manifest, or the drop fails with ErrClosed on a closed parent).
func TestDropRangeRacesSplit(t *testing.T) {
	root := t.TempDir()
	tb, err := Open(testOptions(filepath.Join(root, "p")))
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	for i := 0; i < 30; i++ {
		apply(t, tb, rowName("a", i), set("a", "q", 1, "v"))
		apply(t, tb, rowName("d", i), set("a", "q", 1, "v"))
	}
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var splitErr error
	var split sync.WaitGroup
	tb.testHookTableWritten = func() {
		once.Do(func() {
			split.Add(1)
			go func() {
				defer split.Done()
				splitErr = tb.Split(bg, []byte(rowName("d", 10)), filepath.Join(root, "l"), filepath.Join(root, "r"))
			}()
		})
	}
	dropErr := tb.DropRange(bg, []byte(rowName("d", 5)), []byte(rowName("d", 15)))
	t.Logf("DropRange: %v", dropErr)
	split.Wait()
	if splitErr != nil {
		t.Fatalf("Split: %v", splitErr)
	}
	if dropErr != nil && !errors.Is(dropErr, ErrClosed) {
		t.Fatalf("DropRange: %v", dropErr)
	}
	lo := testOptions(filepath.Join(root, "l"))
	lo.Create = false
	ro := lo
	ro.Dir = filepath.Join(root, "r")
	left, right := openTablet(t, lo), openTablet(t, ro)
	got := scan(t, left, ReadOptions{}) + " " + scan(t, right, ReadOptions{})
	for i := 5; i < 15; i++ {
		if dropErr == nil && strings.Contains(got, rowName("d", i)+"{") {
			t.Fatalf("row %s, dropped before the split finished, is in a child: %s", rowName("d", i), got)
		}
	}
	if !strings.Contains(got, rowName("d", 4)+"{") || !strings.Contains(got, rowName("d", 15)+"{") {
		t.Fatalf("rows outside the range are missing from the children: %s", got)
	}
}
