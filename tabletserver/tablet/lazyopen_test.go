package tablet

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/corruption"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/rowfilter"
	"github.com/tabuladb/tabula/vfs"
)

// sstOpens counts the opens of SSTables through a vfs.Faulty, by path,
// and can hold the opens of the files a test picks until it lets them go.
type sstOpens struct {
	mu      sync.Mutex
	n       map[string]int
	hold    func(path string) bool
	held    chan struct{} // closed at the first open held
	release chan struct{}
}

func newSSTOpens() *sstOpens {
	return &sstOpens{n: map[string]int{}, held: make(chan struct{}), release: make(chan struct{})}
}

func (o *sstOpens) inject(op vfs.Op, name string) error {
	if op != vfs.OpOpen || !strings.HasSuffix(name, ".sst") {
		return nil
	}
	o.mu.Lock()
	o.n[name]++
	hold := o.hold != nil && o.hold(name)
	if hold && o.held != nil {
		close(o.held)
		o.held = nil
	}
	o.mu.Unlock()
	if hold {
		<-o.release
	}
	return nil
}

// counts returns the files opened and the opens in all.
func (o *sstOpens) counts() (files, opens int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.n {
		files, opens = files+1, opens+n
	}
	return files, opens
}

// writeRuns writes n flushes of 10 rows each, the rows of one flush after
// those of the one before, in families a and b: n SSTables per family, all
// in one sorted run.
func writeRuns(t *testing.T, tb *Tablet, n int) {
	t.Helper()
	for f := range n {
		for r := range 10 {
			row := fmt.Sprintf("r%03d", f*10+r)
			apply(t, tb, row, set("a", "q", 1, "va-"+row), set("b", "q", 1, "vb-"+row))
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSSTablesOpenOnFirstUseOnce: a load opens none of a tablet's 16
// SSTables (8 per family); a point read opens the one file that may hold
// its row, in the family it reads; many scans at once open each file
// once, sharing the open; and while one family's file is being opened (its
// open held), a read of the other family does not wait for it.
func TestSSTablesOpenOnFirstUseOnce(t *testing.T) {
	dir := t.TempDir()
	tb := openTablet(t, testOptions(dir))
	writeRuns(t, tb, 8)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}

	opens := newSSTOpens()
	faulty := vfs.NewFaulty(vfs.Default)
	faulty.Set(opens.inject)
	opts := testOptions(dir)
	opts.FS, opts.Create = faulty, false
	tb = openTablet(t, opts)
	st := tb.Stats()
	if files, n := opens.counts(); n != 0 || st.Memory.OpenFiles != 0 {
		t.Fatalf("the load opened %d SSTables (%d opens; Stats says %d open), want none", files, n, st.Memory.OpenFiles)
	}
	for _, fam := range []string{"a", "b"} {
		if fs := st.Families[fam]; fs.SSTables != 8 || fs.SortedRuns != 1 {
			t.Fatalf("family %s loaded with %d SSTables in %d sorted runs, want 8 in 1 (placed by the manifest's keys)", fam, fs.SSTables, fs.SortedRuns)
		}
	}

	if got, want := readRow(t, tb, "r035", rowfilter.Family("a")), "a:q@1=va-r035"; !strings.Contains(got, want) {
		t.Fatalf("ReadRow(r035) = %q, want %q", got, want)
	}
	if files, n := opens.counts(); files != 1 || n != 1 {
		t.Fatalf("a point read of one family opened %d files (%d opens), want 1", files, n)
	}

	// Hold the opens of family b's files; scans of everything wait for
	// them, a read of family a does not.
	opens.mu.Lock()
	opens.hold = func(p string) bool { return filepath.Base(filepath.Dir(p)) == "b" }
	held := opens.held
	opens.mu.Unlock()
	const scans = 8
	errs := make(chan error, scans)
	for range scans {
		go func() {
			it, err := tb.NewRowIterator(bg, ReadOptions{})
			if err != nil {
				errs <- err
				return
			}
			rows := 0
			for it.Next() {
				rows++
			}
			if err := it.Close(); err != nil {
				errs <- err
				return
			}
			if rows != 80 {
				errs <- fmt.Errorf("a scan read %d rows, want 80", rows)
				return
			}
			errs <- nil
		}()
	}
	ctx, cancel := context.WithTimeout(bg, time.Minute)
	defer cancel()
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("no scan opened a file of family b")
	}
	done := make(chan string, 1)
	go func() {
		it, err := tb.NewRowIterator(bg, ReadOptions{Filter: rowfilter.Family("a")})
		if err != nil {
			done <- err.Error()
			return
		}
		rows := 0
		for it.Next() {
			rows++
		}
		if err := it.Close(); err != nil {
			done <- err.Error()
			return
		}
		done <- fmt.Sprint(rows)
	}()
	select {
	case got := <-done:
		if got != "80" {
			t.Fatalf("a scan of family a while b's files open = %s, want 80 rows", got)
		}
	case <-ctx.Done():
		t.Fatal("a read of family a waited for the open of a file of family b")
	}
	close(opens.release)
	for range scans {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("the scans did not finish once the opens were let go")
		}
	}
	opens.mu.Lock()
	for p, n := range opens.n {
		if n != 1 {
			t.Errorf("%s opened %d times, want once", p, n)
		}
	}
	opens.mu.Unlock()
	if files, _ := opens.counts(); files != 16 || tb.Stats().Memory.OpenFiles != 16 {
		t.Fatalf("after the scans %d files were opened (Stats: %d open), want 16", files, tb.Stats().Memory.OpenFiles)
	}
}

// TestLazyOpenOfABadSSTableFailsAsTheLoadDid: a missing or damaged SSTable
// whose open is left to its first read fails that read, the scans and the
// compaction that need it with the error the load returned when it opened
// every file (what a manifest without the files' keys, format version 1,
// still makes it do): the same message, naming the file, and the same
// marks (corruption.ErrCorrupt, or fs.ErrNotExist), so the same status
// code at the RPC boundary. The other family's file still reads.
func TestLazyOpenOfABadSSTableFailsAsTheLoadDid(t *testing.T) {
	for _, damage := range []string{"missing", "corrupt"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			tb := openTablet(t, testOptions(dir))
			writeRuns(t, tb, 2) // two files a family: a major compaction reads them
			if err := tb.Close(); err != nil {
				t.Fatal(err)
			}
			st, id, found, err := manifest.LoadLatest(nil, dir)
			if err != nil || !found {
				t.Fatalf("LoadLatest: %v %v", found, err)
			}
			var path string
			for _, f := range st.Files {
				if !f.HasKeys() {
					t.Fatalf("the manifest records no keys for %s", f.Path)
				}
				if f.Family == "a" && string(f.SmallestKey) < "r010" && path == "" {
					path = filepath.Join(dir, f.Path) // the file of r000-r009
				}
			}
			switch damage {
			case "missing":
				err = os.Remove(path)
			case "corrupt":
				var b []byte
				if b, err = os.ReadFile(path); err == nil {
					b[len(b)-1] ^= 0xff // the footer's magic
					err = os.WriteFile(path, b, 0o644)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			save := func(s manifest.State) {
				t.Helper()
				id.Version++
				if err := manifest.SaveVersion(nil, dir, id, s); err != nil {
					t.Fatal(err)
				}
			}
			opts := testOptions(dir)
			opts.Create = false

			// Before: the files' keys unknown, the load opens them.
			old := st
			old.Files = append([]manifest.FileRef(nil), st.Files...)
			for i := range old.Files {
				old.Files[i].NumEntries, old.Files[i].SmallestKey, old.Files[i].LargestKey = 0, nil, nil
			}
			save(old)
			if tb, err := Open(opts); err == nil {
				tb.Close()
				t.Fatal("the load that opens every file opened a tablet with a bad SSTable")
			} else {
				loadErr := err
				wantMarks := func(what string, err error) {
					t.Helper()
					if err == nil {
						t.Fatalf("%s of the bad SSTable succeeded", what)
					}
					if !strings.Contains(err.Error(), loadErr.Error()) {
						t.Errorf("%s = %q, want the load's error %q", what, err, loadErr)
					}
					for _, mark := range []error{corruption.ErrCorrupt, fs.ErrNotExist} {
						if errors.Is(err, mark) != errors.Is(loadErr, mark) {
							t.Errorf("%s = %v: errors.Is(%v) is %v, the load's %v", what, err, mark, errors.Is(err, mark), !errors.Is(err, mark))
						}
					}
				}

				// Now: the keys recorded, the load opens nothing.
				save(st)
				tb := openTablet(t, opts)
				_, err = tb.ReadRow(bg, []byte("r005"), nil)
				wantMarks("ReadRow", err)
				it, err := tb.NewRowIterator(bg, ReadOptions{})
				if err == nil {
					for it.Next() {
					}
					err = it.Close()
				}
				wantMarks("a scan", err)
				it, err = tb.NewRowIterator(bg, ReadOptions{Reverse: true})
				if err == nil {
					for it.Next() {
					}
					err = it.Close()
				}
				wantMarks("a reversed scan", err)
				wantMarks("Compact", tb.Compact(bg, true))
				// Asked again, the open fails again (a failed open is
				// not kept, and not turned into another error).
				_, err = tb.ReadRow(bg, []byte("r005"), nil)
				wantMarks("ReadRow again", err)
				if got := readRow(t, tb, "r005", rowfilter.Family("b")); !strings.Contains(got, "vb-r005") {
					t.Fatalf("family b's row reads %q beside the bad file of family a", got)
				}
			}
		})
	}
}

// With ManifestFormat 1 (a rolling upgrade from a release before format
// 2) the tablet saves manifests of format version 1, which that release
// reads, and its next load opens every file, as that release did; a
// tablet of the newest format then records the keys again at its next
// save, and its next load opens none.
func TestManifestFormat1IsWhatOlderReleasesRead(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.ManifestFormat = 1
	tb := openTablet(t, opts)
	writeRuns(t, tb, 2)
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if got := newestManifestHeader(t, dir); got != "tabula-manifest 1" {
		t.Fatalf("ManifestFormat 1 saved %q, want tabula-manifest 1", got)
	}

	opts = testOptions(dir)
	opts.Create = false
	tb = openTablet(t, opts)
	if n := tb.Stats().Memory.OpenFiles; n != 4 {
		t.Fatalf("a load of a format 1 manifest opened %d files, want all 4", n)
	}
	writeRuns(t, tb, 1) // a flush saves the manifest
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if got := newestManifestHeader(t, dir); got != "tabula-manifest 2" {
		t.Fatalf("the newest format saved %q, want tabula-manifest 2", got)
	}
	tb = openTablet(t, opts)
	if n := tb.Stats().Memory.OpenFiles; n != 0 {
		t.Fatalf("a load of a format 2 manifest opened %d files, want none", n)
	}
}

// newestManifestHeader returns the first line of the newest manifest
// version in dir.
func newestManifestHeader(t *testing.T, dir string) string {
	t.Helper()
	ids, err := manifest.List(vfs.Default, dir)
	if err != nil || len(ids) == 0 {
		t.Fatalf("listing the manifests of %s: %v (%d)", dir, err, len(ids))
	}
	b, err := os.ReadFile(filepath.Join(dir, ids[len(ids)-1].Name()))
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line
}
