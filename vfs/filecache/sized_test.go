package filecache

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tabuladb/tabula/vfs"
)

// sized is an underlying FS that opens files by their size (as an object
// store does, without a LIST) and counts its opens of each kind and the
// reads of the files it opened (a ranged GET each on a store).
type sized struct {
	vfs.FS
	opens, sizedOpens, reads atomic.Int64
}

func (s *sized) Open(name string) (vfs.Readable, error) {
	s.opens.Add(1)
	r, err := s.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &countedReads{Readable: r, n: &s.reads}, nil
}

func (s *sized) OpenSized(name string, size int64) (vfs.Readable, error) {
	s.sizedOpens.Add(1)
	r, err := s.FS.Open(name)
	if err != nil {
		return nil, err
	}
	if r.Size() != size {
		r.Close()
		return nil, fmt.Errorf("%s is %d bytes, not %d", name, r.Size(), size)
	}
	return &countedReads{Readable: r, n: &s.reads}, nil
}

type countedReads struct {
	vfs.Readable
	n *atomic.Int64
}

func (c *countedReads) ReadAt(p []byte, off int64) (int, error) {
	c.n.Add(1)
	return c.Readable.ReadAt(p, off)
}

// TestOpenSizedDownloadsInOneRead: a cacheable file opened by its size is
// opened on the store by its size too (no LIST there) and downloaded in
// one read (one GET) up to downloadChunk bytes, a read per chunk past it;
// io.Copy made a read per 32 KiB. The copy is whole, and later opens
// (sized or not) are local.
func TestOpenSizedDownloadsInOneRead(t *testing.T) {
	inner := &sized{FS: vfs.Default}
	c, err := New(inner, Options{Dir: t.TempDir(), MaxBytes: 64 << 20, Cacheable: sst})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, size := range []int{1 << 20, downloadChunk + 1000} {
		name := filepath.Join(dir, fmt.Sprintf("%d.sst", size))
		data := bytes.Repeat([]byte{byte(size)}, size)
		data[size-1] = 'x'
		put(t, inner.FS, name, data)
		opens, sizedOpens, reads := inner.opens.Load(), inner.sizedOpens.Load(), inner.reads.Load()
		r, err := c.OpenSized(name, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		got := make([]byte, size)
		if _, err := r.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("reading the %d-byte file back: %v (equal: %v)", size, err, bytes.Equal(got, data))
		}
		r.Close()
		wantReads := int64((size + downloadChunk - 1) / downloadChunk)
		if o, so, rd := inner.opens.Load()-opens, inner.sizedOpens.Load()-sizedOpens, inner.reads.Load()-reads; o != 0 || so != 1 || rd != wantReads {
			t.Errorf("a %d-byte file opened by its size: %d opens, %d sized opens, %d reads of the store; want 0, 1, %d", size, o, so, rd, wantReads)
		}
		if s := c.Stats(); s.Misses == 0 {
			t.Fatalf("nothing was downloaded: %+v", s)
		}
		before := c.Stats().Hits
		if got := read(t, c, name); !bytes.Equal(got, data) {
			t.Fatalf("the local copy of the %d-byte file differs", size)
		}
		if c.Stats().Hits != before+1 {
			t.Errorf("a second open of the %d-byte file was not served locally", size)
		}
	}
}
