package tablet

import (
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// writebackFS records, for every SSTable it creates, the bytes written,
// the write-outs started (vfs.WritebackStarter) and how many bytes were
// never started when the file was fsynced.
type writebackFS struct {
	vfs.FS
	mu      sync.Mutex
	created []*writebackFile // SSTables, in creation order
}

type writebackFile struct {
	vfs.Writable
	fs                *writebackFS
	written, started  int64
	starts            int
	unstartedAtSync   int64
	synced            bool
	nonContiguousFrom int64 // -1: every start began where the last ended
}

func (f *writebackFS) Create(name string) (vfs.Writable, error) {
	w, err := f.FS.Create(name)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return w, err
	}
	wf := &writebackFile{Writable: w, fs: f, nonContiguousFrom: -1}
	f.mu.Lock()
	f.created = append(f.created, wf)
	f.mu.Unlock()
	return wf, nil
}

func (f *writebackFile) Write(p []byte) (int, error) {
	n, err := f.Writable.Write(p)
	f.fs.mu.Lock()
	f.written += int64(n)
	f.fs.mu.Unlock()
	return n, err
}

func (f *writebackFile) StartWriteback(off, n int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if off != f.started && f.nonContiguousFrom < 0 {
		f.nonContiguousFrom = off
	}
	f.started = off + n
	f.starts++
	return nil
}

func (f *writebackFile) Sync() error {
	f.fs.mu.Lock()
	f.synced, f.unstartedAtSync = true, f.written-f.started
	f.fs.mu.Unlock()
	return f.Writable.Sync()
}

// A major compaction's output has its write-out started as it is
// written, contiguously, so that the fsync that ends the compaction waits
// for its last MiB at most rather than the whole file (sstable's
// writeback; docs/BENCHMARKS.md, "Compaction growth").
func TestCompactionOutputWrittenBackIncrementally(t *testing.T) {
	seed := rand.Int63()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	fsys := &writebackFS{FS: vfs.Default}
	opts := testOptions(t.TempDir())
	opts.FS = fsys
	tb := openTablet(t, opts)
	value := make([]byte, 1000)
	for flush := range 2 {
		for i := range 3000 {
			rng.Read(value)
			apply(t, tb, fmt.Sprintf("row%06d", 2*i+flush), set("a", "q", 1, string(value)))
		}
		if err := tb.Flush(bg); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Compact(bg, true); err != nil {
		t.Fatal(err)
	}
	fsys.mu.Lock()
	defer fsys.mu.Unlock()
	out := fsys.created[len(fsys.created)-1] // the compaction's
	if !out.synced || out.written < 5<<20 {
		t.Fatalf("the compaction's output: %d bytes, synced %v; want about 6 MB, synced", out.written, out.synced)
	}
	if out.starts == 0 || out.nonContiguousFrom >= 0 {
		t.Fatalf("%d write-outs started, first gap at %d", out.starts, out.nonContiguousFrom)
	}
	if out.unstartedAtSync > 1<<20 {
		t.Errorf("the fsync found %d of %d bytes never started", out.unstartedAtSync, out.written)
	}
}
