package tablet

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
)

// openHold opens, in a new folder under scratch, a tablet whose manifest is
// the hold id of the tablet folder dir rebased there (what a clone does),
// and returns it: it reads what the snapshot holds, through the engine.
func openHold(t *testing.T, dir, id, scratch string) *Tablet {
	t.Helper()
	to := filepath.Join(scratch, fmt.Sprintf("clone-%s-%d", id, len(mustList(t, scratch))))
	if _, err := manifest.SaveClone(nil, dir, id, to); err != nil {
		t.Fatalf("clone of hold %s: %v", id, err)
	}
	opts := testOptions(to)
	opts.Create = false
	return openTablet(t, opts)
}

func mustList(t *testing.T, dir string) []os.DirEntry {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return es
}

// ownSSTables lists the .sst files inside the tablet folder dir (not in
// hold folders), sorted.
func ownSSTables(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == manifest.HoldsDir {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".sst") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// manifestSSTables lists the tablet folder's own files its newest manifest
// names, sorted.
func manifestSSTables(t *testing.T, dir string) []string {
	t.Helper()
	s, found, err := manifest.Load(nil, dir)
	if err != nil || !found {
		t.Fatalf("load manifest of %s: %v (found %v)", dir, err, found)
	}
	var out []string
	for _, f := range s.Files {
		if manifest.IsOwnPath(f.Path) {
			out = append(out, filepath.Join(dir, filepath.FromSlash(f.Path)))
		}
	}
	slices.Sort(out)
	return out
}

// TestSnapshotHoldOutlivesEveryEngineDeleter takes a snapshot, then runs
// every engine path that makes files obsolete (compaction, a range drop, a
// family dropped, a reopen followed by more compactions) and reads the
// snapshot whole after each; releasing it then removes exactly the files
// only it kept.
func TestSnapshotHoldOutlivesEveryEngineDeleter(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tb")
	opts := testOptions(dir)
	tb := openTablet(t, opts)
	for i := range 50 {
		apply(t, tb, fmt.Sprintf("row%03d", i), set("a", "q", 1, fmt.Sprint(i)), set("b", "z", 2, "b"))
		if i%10 == 9 {
			if err := tb.Flush(bg); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(t, tb, "row007", delRow())                     // in the memtable at the cut
	apply(t, tb, "row008", set("a", "q", 5, "memtable")) // likewise
	if _, err := tb.Snapshot(bg, "s1"); err != nil {
		t.Fatal(err)
	}
	want := scan(t, tb, ReadOptions{})
	check := func(when string) {
		t.Helper()
		c := openHold(t, dir, "s1", filepath.Join(root, "scratch"))
		if got := scan(t, c, ReadOptions{}); got != want {
			t.Fatalf("%s: the snapshot reads\n%s\nwant\n%s", when, got, want)
		}
		_ = c.Close()
	}
	check("at once")

	for i := range 50 {
		apply(t, tb, fmt.Sprintf("row%03d", i), set("a", "q", 1, "later"))
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	check("after a major compaction")
	if err := tb.DropRange(bg, nil, nil); err != nil {
		t.Fatal(err)
	}
	check("after dropping every row")
	apply(t, tb, "row900", set("a", "q", 1, "x"), set("b", "z", 1, "y"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.SetFamilies([]families.Family{{Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	check("after a family was dropped")

	// Reopened: the holds are read before anything can be removed.
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Families = []families.Family{{Name: "a"}}
	tb = openTablet(t, opts)
	if got := tb.Snapshots(); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("holds after reopen: %v", got)
	}
	apply(t, tb, "row901", set("a", "q", 1, "x"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	check("after a reopen and another major compaction")

	// A second snapshot sharing nothing with the first, then the first
	// released: its files go, the second's stay.
	if _, err := tb.Snapshot(bg, "s2"); err != nil {
		t.Fatal(err)
	}
	want2 := scan(t, tb, ReadOptions{})
	if len(ownSSTables(t, dir)) <= len(manifestSSTables(t, dir)) {
		t.Fatalf("the snapshot kept no file: %v", ownSSTables(t, dir))
	}
	if err := tb.ReleaseSnapshot("s1"); err != nil {
		t.Fatal(err)
	}
	if got, want := ownSSTables(t, dir), manifestSSTables(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after the release the folder holds\n%v\nthe manifest names\n%v", got, want)
	}
	if ids, _ := manifest.ListHolds(nil, dir); !slices.Equal(ids, []string{"s2"}) {
		t.Fatalf("holds left: %v", ids)
	}
	apply(t, tb, "row902", set("a", "q", 1, "x"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	c := openHold(t, dir, "s2", filepath.Join(root, "scratch"))
	if got := scan(t, c, ReadOptions{}); got != want2 {
		t.Fatalf("s2 reads\n%s\nwant\n%s", got, want2)
	}
	_ = c.Close()
	if err := tb.ReleaseSnapshot("s2"); err != nil {
		t.Fatal(err)
	}
	if got, want := ownSSTables(t, dir), manifestSSTables(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after both releases the folder holds\n%v\nthe manifest names\n%v", got, want)
	}
}

// TestSnapshotHoldsEveryAcknowledgedWrite: under a concurrent writer, the
// snapshot holds every write acknowledged before Snapshot was called and
// none that started after it returned.
func TestSnapshotHoldsEveryAcknowledgedWrite(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tb")
	tb := openTablet(t, testOptions(dir))
	var acked atomic.Int64 // rows 0..acked-1 are acknowledged
	var after atomic.Int64 // the first row whose write started after Snapshot returned
	after.Store(-1)
	var done atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := int64(0); ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if done.Load() && after.Load() < 0 {
				after.Store(i)
			}
			if err := tb.Apply(bg, fmt.Appendf(nil, "row%06d", i), []cell.Mutation{set("a", "q", 1, "v")}); err != nil {
				t.Error(err)
				return
			}
			acked.Store(i + 1)
		}
	}()
	// Let some writes land first, without a sleep: wait for acknowledgements.
	for acked.Load() < 200 {
		runtime.Gosched()
	}
	before := acked.Load()
	if _, err := tb.Snapshot(bg, "s"); err != nil {
		t.Fatal(err)
	}
	done.Store(true)
	for after.Load() < 0 || acked.Load() < after.Load()+50 {
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	c := openHold(t, dir, "s", filepath.Join(root, "scratch"))
	rows := map[string]bool{}
	it, err := c.NewRowIterator(bg, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		rows[string(it.Row())] = true
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range before {
		if !rows[fmt.Sprintf("row%06d", i)] {
			t.Fatalf("row %d, acknowledged before the snapshot began, is not in it (%d rows held)", i, len(rows))
		}
	}
	for i := after.Load(); i < acked.Load(); i++ {
		if rows[fmt.Sprintf("row%06d", i)] {
			t.Fatalf("row %d, written after the snapshot returned, is in it", i)
		}
	}
	t.Logf("acknowledged before: %d, held: %d, first after: %d", before, len(rows), after.Load())
}
