// Package filecache keeps local copies of immutable files read from a
// slow FS (an object store), bounded in bytes: the first Open of a
// cacheable file downloads it whole into a local folder, later Opens read
// the local copy. Least recently opened files are evicted past the bound.
// Losing the folder loses nothing: it is only ever a copy.
//
// Only files that are never rewritten may be cached (SSTables: their names
// are unique per owner epoch and they are written once); the caller says
// which with Options.Cacheable. Everything else, and every write, goes to
// the underlying FS unchanged. Removing or renaming a name drops its copy.
//
// The cache sits under the engine's block cache: the block cache holds
// decompressed blocks in memory, this one whole files on local disk, so a
// block cache miss costs a local read instead of a ranged GET.
package filecache

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/tabuladb/tabula/vfs"
)

// Options configure a cache.
type Options struct {
	// Dir is the local folder of the copies (created; its old contents are
	// discarded at start, as nothing records what they were copies of).
	Dir string
	// MaxBytes bounds the copies' total size; a file larger than it is
	// never cached.
	MaxBytes int64
	// Cacheable says which names may be cached.
	Cacheable func(name string) bool
}

// FS is a caching vfs.FS over another.
type FS struct {
	vfs.FS
	opts Options

	mu      sync.Mutex
	entries map[string]*list.Element // by name; values *entry
	lru     *list.List               // front: most recently opened
	bytes   int64
	hits    int64
	misses  int64
	loading map[string]*sync.WaitGroup // downloads in flight, by name
}

type entry struct {
	name, path string
	size       int64
}

// New returns a cache over inner.
func New(inner vfs.FS, opts Options) (*FS, error) {
	if opts.Dir == "" || opts.MaxBytes <= 0 || opts.Cacheable == nil {
		return nil, errors.New("filecache: Dir, MaxBytes and Cacheable are required")
	}
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, fmt.Errorf("filecache: clearing %s: %w", opts.Dir, err)
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("filecache: %w", err)
	}
	return &FS{FS: vfs.Or(inner), opts: opts, entries: map[string]*list.Element{}, lru: list.New(),
		loading: map[string]*sync.WaitGroup{}}, nil
}

// Unwrap returns the FS the cache is over (for the store's own counters:
// vfs/backend.Requests).
func (f *FS) Unwrap() vfs.FS { return f.FS }

// Stats are the cache's counters.
type Stats struct {
	Hits, Misses int64 // Opens served locally, and downloads
	Files        int
	Bytes        int64
}

// Stats returns the counters.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Stats{Hits: f.hits, Misses: f.misses, Files: len(f.entries), Bytes: f.bytes}
}

// Open serves a cacheable name from its local copy, downloading it first
// if needed; other names come from the underlying FS.
func (f *FS) Open(name string) (vfs.Readable, error) {
	return f.open(name, 0)
}

// OpenSized is Open of a file written in one piece of size bytes: the
// underlying FS opens it without looking it up when it can
// (vfs.SizedFiles: no LIST on an object store), for the download or for
// reading it in place.
func (f *FS) OpenSized(name string, size int64) (vfs.Readable, error) {
	return f.open(name, size)
}

// openInner opens name on the underlying FS, without looking it up when
// its size is known and the FS can.
func (f *FS) openInner(name string, size int64) (vfs.Readable, error) {
	if s, ok := f.FS.(vfs.SizedFiles); ok && size > 0 {
		return s.OpenSized(name, size)
	}
	return f.FS.Open(name)
}

// open is Open, and OpenSized when size > 0.
func (f *FS) open(name string, size int64) (vfs.Readable, error) {
	if !f.opts.Cacheable(name) {
		return f.openInner(name, size)
	}
	for {
		f.mu.Lock()
		if el, ok := f.entries[name]; ok {
			e := el.Value.(*entry)
			if r, err := openLocal(e.path); err == nil {
				f.lru.MoveToFront(el)
				f.hits++
				f.mu.Unlock()
				return r, nil
			}
			// The copy went missing (someone cleaned the folder): forget it.
			f.dropLocked(el)
		}
		if wg, ok := f.loading[name]; ok {
			f.mu.Unlock()
			wg.Wait() // another Open is downloading it
			continue
		}
		wg := &sync.WaitGroup{}
		wg.Add(1)
		f.loading[name] = wg
		f.misses++
		f.mu.Unlock()
		r, err := f.download(name, size)
		f.mu.Lock()
		delete(f.loading, name)
		f.mu.Unlock()
		wg.Done()
		return r, err
	}
}

// download copies name into the cache and opens the copy; a file too large
// to cache, or a failed local write, is read from the underlying FS.
func (f *FS) download(name string, size int64) (vfs.Readable, error) {
	src, err := f.openInner(name, size)
	if err != nil {
		return nil, err
	}
	if src.Size() > f.opts.MaxBytes {
		return src, nil
	}
	path := filepath.Join(f.opts.Dir, key(name))
	tmp, err := os.CreateTemp(f.opts.Dir, "dl-*")
	if err != nil {
		return src, nil
	}
	err = copyChunks(tmp, src)
	if err == nil {
		err = tmp.Close()
	} else {
		tmp.Close()
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		// The local disk failed, or the store: either way the store is
		// where the file is read from now (a file opened by a wrong size
		// fails there too, and its reader opens it again by name).
		return src, nil
	}
	size = src.Size()
	src.Close()
	r, err := openLocal(path)
	if err != nil {
		os.Remove(path)
		return f.FS.Open(name)
	}
	f.mu.Lock()
	if el, ok := f.entries[name]; ok {
		f.dropLocked(el)
	}
	f.entries[name] = f.lru.PushFront(&entry{name: name, path: path, size: size})
	f.bytes += size
	f.evictLocked()
	f.mu.Unlock()
	return r, nil
}

// downloadChunk is how many bytes a download reads at once: one ranged
// GET on an object store. io.Copy read 32 KiB at a time, a GET each: 32
// GETs for a 1 MiB SSTable (docs/BENCHMARKS.md "Store requests per tablet
// load"). A load reads up to 16 tablets at once, so the buffers of the
// downloads in flight stay around 64 MiB.
const downloadChunk = 4 << 20

// copyChunks copies src whole into dst, downloadChunk bytes a read.
func copyChunks(dst io.Writer, src vfs.Readable) error {
	buf := make([]byte, min(src.Size(), downloadChunk))
	for off := int64(0); off < src.Size(); {
		n, err := src.ReadAt(buf[:min(int64(len(buf)), src.Size()-off)], off)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err != nil && !(errors.Is(err, io.EOF) && off == src.Size()) {
			if errors.Is(err, io.EOF) {
				return io.ErrUnexpectedEOF
			}
			return err
		}
		if n == 0 && err == nil {
			return io.ErrNoProgress
		}
	}
	return nil
}

// evictLocked removes least recently opened copies past the bound. A copy
// still open by a reader stays readable: unlinking does not close it.
func (f *FS) evictLocked() {
	for f.bytes > f.opts.MaxBytes && f.lru.Len() > 0 {
		f.dropLocked(f.lru.Back())
	}
}

func (f *FS) dropLocked(el *list.Element) {
	e := el.Value.(*entry)
	f.lru.Remove(el)
	delete(f.entries, e.name)
	f.bytes -= e.size
	os.Remove(e.path)
}

func (f *FS) forget(name string) {
	f.mu.Lock()
	if el, ok := f.entries[name]; ok {
		f.dropLocked(el)
	}
	f.mu.Unlock()
}

// Create drops any copy of name (a name is cached only once written, but
// a stale copy must never outlive a rewrite).
func (f *FS) Create(name string) (vfs.Writable, error) {
	f.forget(name)
	return f.FS.Create(name)
}

// Remove removes name and its copy.
func (f *FS) Remove(name string) error {
	f.forget(name)
	return f.FS.Remove(name)
}

// RemoveAll removes a tree and the copies of the files in it.
func (f *FS) RemoveAll(name string) error {
	prefix := filepath.Clean(name) + string(filepath.Separator)
	f.mu.Lock()
	for n, el := range f.entries {
		if n == name || len(n) > len(prefix) && n[:len(prefix)] == prefix {
			f.dropLocked(el)
		}
	}
	f.mu.Unlock()
	return f.FS.RemoveAll(name)
}

// Rename drops the copies of both names.
func (f *FS) Rename(oldname, newname string) error {
	f.forget(oldname)
	f.forget(newname)
	return f.FS.Rename(oldname, newname)
}

// Truncate drops the copy.
func (f *FS) Truncate(name string, size int64) error {
	f.forget(name)
	return f.FS.Truncate(name, size)
}

// key names a copy: a hash, so any name is a safe file name.
func key(name string) string {
	h := sha256.Sum256([]byte(name))
	return hex.EncodeToString(h[:16])
}

// openLocal opens a copy on the local disk.
func openLocal(path string) (vfs.Readable, error) { return vfs.Local{}.Open(path) }
