package tablet

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabuladb/tabula/cell"
	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/vfs"
)

// errTestFenced stands for the tablet server's "fenced" error.
var errTestFenced = errors.New("test: fenced")

// testGuard is an Options.Guard that allows a number of calls and refuses
// every call after them. At its first refusal it records the MANIFEST of
// the tablet folder, so a test can check nothing saved one afterwards.
type testGuard struct {
	dir string

	mu        sync.Mutex
	allow     int // calls still allowed; -1 = every call
	calls     int
	refused   int
	atRefusal []byte          // MANIFEST bytes at the first refusal
	filesAt   map[string]bool // .sst files at the first refusal
}

func newTestGuard(dir string) *testGuard { return &testGuard{dir: dir, allow: -1} }

func (g *testGuard) check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if g.allow < 0 {
		return nil
	}
	if g.allow > 0 {
		g.allow--
		return nil
	}
	if g.refused == 0 {
		g.atRefusal = newestManifest(g.dir)
		g.filesAt, _ = listSST(g.dir)
	}
	g.refused++
	return errTestFenced
}

// refuseAfter allows n more calls and refuses the rest.
func (g *testGuard) refuseAfter(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allow, g.refused, g.atRefusal, g.filesAt = n, 0, nil, nil
}

func (g *testGuard) allowAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.allow = -1
}

func (g *testGuard) refusals() (int, []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused, g.atRefusal
}

func (g *testGuard) filesAtRefusal() map[string]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.filesAt
}

// sstFiles lists the .sst files under dir, relative to it.
func sstFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out, err := listSST(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func listSST(dir string) (map[string]bool, error) {
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".sst") {
			rel, _ := filepath.Rel(dir, path)
			out[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	return out, err
}

func readManifest(t *testing.T, dir string) []byte {
	t.Helper()
	b := newestManifest(dir)
	if b == nil {
		t.Fatalf("no manifest in %s", dir)
	}
	return b
}

// newestManifest returns the name and bytes of the newest manifest version
// in dir (nil if none): a save writes a new version, so they change with
// every save.
func newestManifest(dir string) []byte {
	id, ok, err := manifest.Newest(nil, dir)
	if err != nil || !ok {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, id.Name()))
	if err != nil {
		return nil
	}
	return append([]byte(id.Name()+"\n"), b...)
}

// checkReferencedExist fails unless every own file the manifest in dir
// lists exists.
func checkReferencedExist(t *testing.T, dir string) manifest.State {
	t.Helper()
	st, _, err := manifest.Load(vfs.Default, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range st.Files {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path))); err != nil {
			t.Fatalf("the manifest lists %s, which is gone: %v", f.Path, err)
		}
	}
	return st
}

// fillGuarded writes three flushed generations of both families (with
// overwrites and deletes) and leaves more in the memtable. The data is the
// same on every call.
func fillGuarded(t *testing.T, tb *Tablet) {
	t.Helper()
	for gen := 0; gen < 3; gen++ {
		for i := 0; i < 40; i++ {
			row := fmt.Sprintf("row%03d", (i*7+gen*3)%50)
			apply(t, tb, row, set("a", "q", int64(gen+1), fmt.Sprintf("a%d-%d", gen, i)),
				set("b", fmt.Sprintf("q%d", i%3), int64(gen+1), fmt.Sprintf("b%d-%d", gen, i)))
		}
		apply(t, tb, fmt.Sprintf("row%03d", gen*11), delCol("a", "q", 0, 0))
		apply(t, tb, fmt.Sprintf("row%03d", gen*13+1), delFam("b"))
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		apply(t, tb, fmt.Sprintf("row%03d", i*5), set("a", "mem", 9, fmt.Sprintf("m%d", i)))
	}
	apply(t, tb, "row002", delRow())
}

// guardedOp is an operation whose shared-file side effects the guard
// must stop.
type guardedOp struct {
	name string
	run  func(tb *Tablet) error
	// fams are the families to reopen the tablet with afterwards.
	fams []families.Family
}

func guardedOps() []guardedOp {
	all := testOptions("").Families
	return []guardedOp{
		{"Flush", func(tb *Tablet) error { return tb.Flush(bg) }, all},
		{"major Compact", func(tb *Tablet) error { return tb.Compact(bg, true) }, all},
		{"merging Compact", func(tb *Tablet) error { return tb.Compact(bg, false) }, all},
		{"SetFamilies dropping a family", func(tb *Tablet) error { return tb.SetFamilies(all[:1]) }, all[:1]},
	}
}

// TestGuardRefusalLeavesTheManifestIntact refuses, in turn, every guard
// call an operation makes (the first, then the second, ...) and checks that
// after a refusal nothing saves the manifest, no file the manifest lists is
// deleted and no file of the abandoned work is left behind; once the guard
// allows again, the operation succeeds and the reopened tablet holds the
// same data as one that never met a refusal.
func TestGuardRefusalLeavesTheManifestIntact(t *testing.T) {
	for _, op := range guardedOps() {
		t.Run(op.name, func(t *testing.T) {
			want := referenceScan(t, op)

			sawFailure := false
			for k := 0; ; k++ {
				if k == 30 {
					t.Fatal("the operation still calls the guard after 30 calls")
				}
				dir := t.TempDir()
				g := newTestGuard(dir)
				opts := testOptions(dir)
				opts.Guard = g.check
				tb := openTablet(t, opts)
				fillGuarded(t, tb)
				beforeFiles := sstFiles(t, dir)
				beforeScan := scan(t, tb, ReadOptions{})

				g.refuseAfter(k)
				err := op.run(tb)
				refused, atRefusal := g.refusals()
				if refused == 0 {
					if err != nil {
						t.Fatalf("guard allowed every call, yet: %v", err)
					}
					break // every guard call of the operation has been refused once
				}
				if err != nil {
					sawFailure = true
					if !errors.Is(err, errTestFenced) || !errors.Is(err, ErrGuardRefused) {
						t.Fatalf("refusing call %d: error %v does not wrap the guard's error and ErrGuardRefused", k, err)
					}
					if got := readManifest(t, dir); !bytes.Equal(got, atRefusal) {
						t.Fatalf("refusing call %d: the manifest changed after the refusal:\nat refusal %s\nafter      %s", k, atRefusal, got)
					}
					if k == 0 {
						if scan(t, tb, ReadOptions{}) != beforeScan {
							t.Fatalf("refusing call 0: the tablet reads differently")
						}
					}
				}
				// Nothing the manifest lists is deleted, nothing abandoned
				// is left behind, and after the refusal no file is deleted
				// but the abandoned work's own.
				st := checkReferencedExist(t, dir)
				listed := map[string]bool{}
				for _, f := range st.Files {
					listed[f.Path] = true
				}
				after := sstFiles(t, dir)
				for f := range after {
					if err != nil && !listed[f] && !beforeFiles[f] {
						t.Fatalf("refusing call %d: the abandoned %s is left behind", k, f)
					}
				}
				for f := range g.filesAtRefusal() {
					if (beforeFiles[f] || listed[f]) && !after[f] {
						t.Fatalf("refusing call %d: %s was deleted after the refusal", k, f)
					}
				}

				g.allowAll()
				if err := op.run(tb); err != nil {
					t.Fatalf("refusing call %d: once allowed again: %v", k, err)
				}
				if err := tb.Close(); err != nil {
					t.Fatal(err)
				}
				reOpts := testOptions(dir)
				reOpts.Families = op.fams
				if got := scan(t, openTablet(t, reOpts), ReadOptions{}); got != want {
					t.Fatalf("refusing call %d: after reopen\n got %s\nwant %s", k, got, want)
				}
			}
			if !sawFailure {
				t.Fatal("no refusal failed the operation")
			}
		})
	}
}

// referenceScan runs op on the test data with no guard and returns what
// the reopened tablet reads.
func referenceScan(t *testing.T, op guardedOp) string {
	t.Helper()
	dir := t.TempDir()
	ref := openTablet(t, testOptions(dir))
	fillGuarded(t, ref)
	if err := op.run(ref); err != nil {
		t.Fatal(err)
	}
	if err := ref.Close(); err != nil {
		t.Fatal(err)
	}
	opts := testOptions(dir)
	opts.Families = op.fams
	return scan(t, openTablet(t, opts), ReadOptions{})
}

// TestGuardFlipsWhileWriting turns the guard to refusing while an
// operation writes its new SSTable (as when a server is paused there past
// its lease): the operation fails with the guard's error, the MANIFEST is
// byte-identical, the new file is removed and none the manifest lists;
// allowed again, the operation succeeds and no data is lost.
func TestGuardFlipsWhileWriting(t *testing.T) {
	for _, op := range guardedOps() {
		t.Run(op.name, func(t *testing.T) {
			want := referenceScan(t, op)
			dir := t.TempDir()
			g := newTestGuard(dir)
			opts := testOptions(dir)
			opts.Guard = g.check
			tb := openTablet(t, opts)
			fillGuarded(t, tb)
			before := readManifest(t, dir)
			beforeFiles := sstFiles(t, dir)
			tb.testHookTableWritten = func() { g.refuseAfter(0) }

			err := op.run(tb)
			if !errors.Is(err, errTestFenced) || !errors.Is(err, ErrGuardRefused) {
				t.Fatalf("error %v does not wrap the guard's error and ErrGuardRefused", err)
			}
			if got := readManifest(t, dir); !bytes.Equal(got, before) {
				t.Fatalf("the manifest changed:\nbefore %s\nafter  %s", before, got)
			}
			checkReferencedExist(t, dir)
			if got := sstFiles(t, dir); fmt.Sprint(got) != fmt.Sprint(beforeFiles) {
				t.Fatalf("sstables %v, before %v", got, beforeFiles)
			}

			tb.testHookTableWritten = nil
			g.allowAll()
			if err := op.run(tb); err != nil {
				t.Fatalf("once allowed again: %v", err)
			}
			if err := tb.Close(); err != nil {
				t.Fatal(err)
			}
			reOpts := testOptions(dir)
			reOpts.Families = op.fams
			if got := scan(t, openTablet(t, reOpts), ReadOptions{}); got != want {
				t.Fatalf("after reopen\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestGuardKeepsObsoleteFilesWhileRefusing compacts while a reader holds
// the old files, then refuses: when the reader lets go, the obsolete files
// stay (another owner's manifest may list them).
func TestGuardKeepsObsoleteFilesWhileRefusing(t *testing.T) {
	dir := t.TempDir()
	g := newTestGuard(dir)
	opts := testOptions(dir)
	opts.Guard = g.check
	tb := openTablet(t, opts)
	fillGuarded(t, tb)
	old := sstFiles(t, dir)
	want := scan(t, tb, ReadOptions{})
	it, err := tb.NewRowIterator(bg, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	g.refuseAfter(0)
	for it.Next() {
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := g.refusals(); n == 0 {
		t.Fatal("releasing the old files did not ask the guard")
	}
	for f := range old {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f))); err != nil {
			t.Fatalf("obsolete %s deleted while the guard refused: %v", f, err)
		}
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	if got := scan(t, openTablet(t, testOptions(dir)), ReadOptions{}); got != want {
		t.Fatalf("after reopen\n got %s\nwant %s", got, want)
	}
}

// TestGuardStopsBackgroundFlush fills the memtable past its size with the
// guard refusing: the background flush must not save the manifest; once
// the guard allows, the flush goes through.
func TestGuardStopsBackgroundFlush(t *testing.T) {
	dir := t.TempDir()
	g := newTestGuard(dir)
	opts := testOptions(dir)
	opts.Guard = g.check
	opts.DisableBackgroundWork = false
	opts.MemtableSize = 16 << 10
	tb := openTablet(t, opts)
	apply(t, tb, "first", set("a", "q", 1, "v"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	before := readManifest(t, dir)
	beforeFiles := sstFiles(t, dir)

	g.refuseAfter(0)
	val := strings.Repeat("x", 512)
	for i := 0; i < 100; i++ {
		err := tb.Apply(bg, []byte(fmt.Sprintf("r%04d", i)), []cell.Mutation{set("a", "q", 1, val), set("b", "q", 2, val)})
		if errors.Is(err, ErrResourceExhausted) && errors.Is(err, ErrGuardRefused) {
			// The memtable is full and its flush refused: writers stall
			// and then get back-pressure (stall.go).
			break
		}
		if err != nil {
			t.Fatalf("Apply(r%04d): %v", i, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, _ := g.refusals(); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background flush never asked the guard")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // let a wrongly unguarded flush finish
	if got := readManifest(t, dir); !bytes.Equal(got, before) {
		t.Fatalf("a background flush saved the manifest while the guard refused")
	}
	if got := sstFiles(t, dir); len(got) != len(beforeFiles) {
		t.Fatalf("sstables while refusing: %v, before %v", got, beforeFiles)
	}
	want := scan(t, tb, ReadOptions{})

	g.allowAll()
	deadline = time.Now().Add(10 * time.Second)
	for bytes.Equal(readManifest(t, dir), before) {
		if time.Now().After(deadline) {
			t.Fatal("the background flush did not resume once the guard allowed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := tb.Close(); err != nil {
		t.Fatal(err)
	}
	re := testOptions(dir)
	tb2 := openTablet(t, re)
	if got := scan(t, tb2, ReadOptions{}); got != want {
		t.Fatalf("after reopen the tablet reads differently")
	}
	checkReferencedExist(t, dir)
}

// TestGuardStopsSplit refuses each guard call of a split in turn: the
// split fails, writes no child manifest, and the parent keeps serving;
// allowed again, it splits without losing a cell.
func TestGuardStopsSplit(t *testing.T) {
	for k := 0; ; k++ {
		if k == 30 {
			t.Fatal("Split still calls the guard after 30 calls")
		}
		root := t.TempDir()
		dir := filepath.Join(root, "parent")
		left, right := filepath.Join(root, "left"), filepath.Join(root, "right")
		g := newTestGuard(dir)
		opts := testOptions(dir)
		opts.Guard = g.check
		tb := openTablet(t, opts)
		fillGuarded(t, tb)
		want := scan(t, tb, ReadOptions{})

		g.refuseAfter(k)
		err := tb.Split(bg, []byte("row025"), left, right)
		refused, atRefusal := g.refusals()
		if refused == 0 {
			if err != nil {
				t.Fatal(err)
			}
			if k < 3 {
				t.Fatalf("Split called the guard only %d times", k)
			}
			break
		}
		if err == nil {
			t.Fatalf("refusing call %d: Split succeeded after a refusal", k)
		}
		if !errors.Is(err, errTestFenced) {
			t.Fatalf("refusing call %d: %v", k, err)
		}
		if got := readManifest(t, dir); !bytes.Equal(got, atRefusal) {
			t.Fatalf("refusing call %d: the parent's manifest changed after the refusal", k)
		}
		checkReferencedExist(t, dir)
		for _, c := range []string{left, right} {
			if _, found, _ := manifest.Load(vfs.Default, c); found {
				t.Fatalf("refusing call %d: child %s has a manifest", k, c)
			}
		}
		if got := scan(t, tb, ReadOptions{}); got != want {
			t.Fatalf("refusing call %d: the parent reads differently", k)
		}
		g.allowAll()
		if err := tb.Split(bg, []byte("row025"), left, right); err != nil {
			t.Fatalf("refusing call %d: once allowed: %v", k, err)
		}
		l := openTablet(t, testOptions(left))
		r := openTablet(t, testOptions(right))
		got := strings.TrimSpace(scan(t, l, ReadOptions{}) + " " + scan(t, r, ReadOptions{}))
		if got != want {
			t.Fatalf("refusing call %d: children read\n%s\nwant\n%s", k, got, want)
		}
	}
}

// TestGuardRefusesCreatingATablet: a refused guard creates no manifest.
func TestGuardRefusesCreatingATablet(t *testing.T) {
	dir := t.TempDir()
	opts := testOptions(dir)
	opts.Guard = func() error { return errTestFenced }
	if _, err := Open(opts); !errors.Is(err, errTestFenced) || !errors.Is(err, ErrGuardRefused) {
		t.Fatalf("Open with a refusing guard: %v", err)
	}
	if _, found, _ := manifest.Load(vfs.Default, dir); found {
		t.Fatal("a refused Open wrote a manifest")
	}
}

// TestGuardKeepsLogSegmentsWhenRefusedAfterTheSave lets a flush save its
// manifest and then refuses (the lease ran out right after the save): the
// log segments the flush covered stay, since another owner may be
// replaying them; a later allowed flush removes them.
func TestGuardKeepsLogSegmentsWhenRefusedAfterTheSave(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	var saved []byte // refuse once the MANIFEST differs from this
	refused := 0
	opts := testOptions(dir)
	opts.Guard = func() error {
		mu.Lock()
		defer mu.Unlock()
		if saved != nil && !bytes.Equal(readManifest(t, dir), saved) {
			refused++
			return errTestFenced
		}
		return nil
	}
	tb := openTablet(t, opts)
	apply(t, tb, "r1", set("a", "q", 1, "v1"))
	segments := func() []string {
		es, err := os.ReadDir(filepath.Join(dir, logDirName))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Name())
		}
		return out
	}
	beforeSegs := segments()
	mu.Lock()
	saved = readManifest(t, dir)
	mu.Unlock()
	if err := tb.Flush(bg); err != nil {
		t.Fatalf("a flush refused only after its save: %v", err)
	}
	mu.Lock()
	n := refused
	saved = nil
	mu.Unlock()
	if n == 0 {
		t.Fatal("the flush did not ask the guard after saving the manifest")
	}
	for _, s := range beforeSegs {
		if _, err := os.Stat(filepath.Join(dir, logDirName, s)); err != nil {
			t.Fatalf("log segment %s deleted after the guard refused: %v", s, err)
		}
	}
	apply(t, tb, "r2", set("a", "q", 1, "v2"))
	if err := tb.Flush(bg); err != nil {
		t.Fatal(err)
	}
	for _, s := range beforeSegs {
		if _, err := os.Stat(filepath.Join(dir, logDirName, s)); err == nil {
			t.Fatalf("log segment %s outlived a later allowed flush", s)
		}
	}
	if got := readRow(t, tb, "r1", nil) + " " + readRow(t, tb, "r2", nil); got != "a:q@1=v1 a:q@1=v2" {
		t.Fatalf("read %q", got)
	}
}
