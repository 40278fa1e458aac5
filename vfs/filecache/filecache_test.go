package filecache

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/vfs"
	"github.com/tabuladb/tabula/vfs/vfstest"
)

// counting counts the Opens that reach the underlying FS.
type counting struct {
	vfs.FS
	opens atomic.Int64
}

func (c *counting) Open(name string) (vfs.Readable, error) {
	c.opens.Add(1)
	return c.FS.Open(name)
}

func sst(name string) bool { return strings.HasSuffix(name, ".sst") }

func newCache(t *testing.T, max int64) (*FS, *counting, string) {
	t.Helper()
	inner := &counting{FS: vfs.Default}
	c, err := New(inner, Options{Dir: t.TempDir(), MaxBytes: max, Cacheable: sst})
	if err != nil {
		t.Fatal(err)
	}
	return c, inner, t.TempDir()
}

func put(t *testing.T, fsys vfs.FS, name string, b []byte) {
	t.Helper()
	w, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, fsys vfs.FS, name string) []byte {
	t.Helper()
	b, err := vfs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSecondOpenIsLocal(t *testing.T) {
	c, inner, root := newCache(t, 1<<20)
	name := filepath.Join(root, "000001.sst")
	data := bytes.Repeat([]byte("x"), 1000)
	put(t, c, name, data)
	for i := range 3 {
		if got := read(t, c, name); !bytes.Equal(got, data) {
			t.Fatalf("read %d: %d bytes", i, len(got))
		}
	}
	if n := inner.opens.Load(); n != 1 {
		t.Fatalf("the underlying FS was opened %d times, want 1", n)
	}
	if s := c.Stats(); s.Hits != 2 || s.Misses != 1 || s.Files != 1 || s.Bytes != 1000 {
		t.Fatalf("stats %+v", s)
	}
	// Not cacheable: every open goes through.
	log := filepath.Join(root, "000001.log")
	put(t, c, log, data)
	read(t, c, log)
	read(t, c, log)
	if n := inner.opens.Load(); n != 3 {
		t.Fatalf("opens = %d, want 3 (the log twice)", n)
	}
}

func TestEvictionAndRemoval(t *testing.T) {
	c, inner, root := newCache(t, 2500)
	var names []string
	for i := range 3 {
		n := filepath.Join(root, fmt.Sprintf("%d.sst", i))
		put(t, c, n, bytes.Repeat([]byte{byte('a' + i)}, 1000))
		read(t, c, n)
		names = append(names, n)
	}
	if s := c.Stats(); s.Files != 2 || s.Bytes != 2000 {
		t.Fatalf("after 3 files of 1000 bytes under a 2500-byte bound: %+v", s)
	}
	before := inner.opens.Load()
	read(t, c, names[0]) // evicted: downloaded again
	if inner.opens.Load() != before+1 {
		t.Fatal("the evicted file was not downloaded again")
	}
	// A removed or replaced name is never served from an old copy.
	if err := c.Remove(names[0]); err != nil {
		t.Fatal(err)
	}
	put(t, c, names[0], []byte("new"))
	if got := read(t, c, names[0]); string(got) != "new" {
		t.Fatalf("after remove and rewrite: %q", got)
	}
	// Too big to cache: read through.
	big := filepath.Join(root, "big.sst")
	put(t, c, big, bytes.Repeat([]byte("b"), 3000))
	read(t, c, big)
	if s := c.Stats(); s.Bytes > 2500 {
		t.Fatalf("over the bound: %+v", s)
	}
}

func TestConcurrentOpensDownloadOnce(t *testing.T) {
	c, inner, root := newCache(t, 1<<20)
	name := filepath.Join(root, "x.sst")
	put(t, c, name, bytes.Repeat([]byte("z"), 4096))
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got := read(t, c, name); len(got) != 4096 {
				t.Errorf("read %d bytes", len(got))
			}
		}()
	}
	wg.Wait()
	if n := inner.opens.Load(); n != 1 {
		t.Fatalf("16 concurrent opens downloaded %d times, want 1", n)
	}
}

// TestConformance: with every name cacheable the cache still behaves as a
// file system (renames, truncations and removals drop stale copies).
func TestConformance(t *testing.T) {
	c, err := New(vfs.Default, Options{Dir: t.TempDir(), MaxBytes: 1 << 20, Cacheable: func(string) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	vfstest.Run(t, c, t.TempDir())
}
