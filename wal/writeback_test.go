package wal

import (
	"sync"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// writebackFS records the StartWriteback calls on the files it creates.
type writebackFS struct {
	vfs.FS
	mu    sync.Mutex
	calls map[string][][2]int64 // by file: [off, n]
}

type writebackFile struct {
	vfs.Writable
	fs   *writebackFS
	name string
}

func (f *writebackFS) Create(name string) (vfs.Writable, error) {
	w, err := f.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return writebackFile{Writable: w, fs: f, name: name}, nil
}

func (f writebackFile) StartWriteback(off, n int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	f.fs.calls[f.name] = append(f.fs.calls[f.name], [2]int64{off, n})
	return nil
}

// A log that does not fsync as it writes starts the write-out of each
// segment's bytes every half MiB, contiguously from its start, so that
// the fsync closing the segment (under a tablet's commit mutex, at a
// flush) waits for its last half MiB only; a log that fsyncs every round
// has nothing to start.
func TestWritebackStartsEveryHalfMiB(t *testing.T) {
	rec := make([]byte, 1000)
	for _, c := range []struct {
		mode SyncMode
		want bool
	}{{SyncNone, true}, {SyncBuffered, true}, {SyncAlways, false}} {
		t.Run(c.mode.String(), func(t *testing.T) {
			fsys := &writebackFS{FS: vfs.Default, calls: map[string][][2]int64{}}
			// Rounds of at most 64 KiB (buffered): the last one, which
			// Close syncs, leaves at most that much unstarted beyond the
			// last half MiB.
			const round = 64 << 10
			l := mustOpen(t, Options{Dir: t.TempDir(), FS: fsys, SyncMode: c.mode, RecycleSegments: -1, BufferSize: round})
			n := 3000 // about 3 MB
			if !c.want {
				n = 700 // past one half MiB: fsyncs are slow
			}
			for range n {
				if err := l.Append(rec); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := l.Rotate(); err != nil {
				t.Fatal(err)
			}
			for range n / 2 {
				if err := l.Append(rec); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			fsys.mu.Lock()
			defer fsys.mu.Unlock()
			if !c.want {
				if len(fsys.calls) != 0 {
					t.Fatalf("write-out started on a log that fsyncs every round: %v", fsys.calls)
				}
				return
			}
			if len(fsys.calls) != 2 {
				t.Fatalf("write-out started on %d segments, want 2: %v", len(fsys.calls), fsys.calls)
			}
			for name, calls := range fsys.calls {
				var end int64
				for _, call := range calls {
					if call[0] != end || call[1] < writebackEvery {
						t.Fatalf("%s: write-out of [%d, +%d) after %d: want contiguous ranges of at least %d", name, call[0], call[1], end, writebackEvery)
					}
					end += call[1]
				}
				if min := int64(n/2*len(rec)) - writebackEvery - round - int64(len(rec)); end < min {
					t.Fatalf("%s: write-out started up to %d, want at least %d", name, end, min)
				}
			}
		})
	}
}
