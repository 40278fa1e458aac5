package tablet

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/sstable"
)

// SSTables opened on first use.
//
// A load places every file of the manifest from its record alone (its key
// range, entry count, size and sequence numbers: manifest.FileRef.HasKeys)
// and opens none: the version's sorted runs, the compaction picker and a
// split's references need nothing more. A file is opened, one tail read
// (on an object store one GET: footer, properties, filter, index), when a
// read, a compaction, a range drop or SplitKey first needs its blocks or
// filter. So a tablet of any number of SSTables loads in the requests of
// its manifest and seal (TestLoadOnAnObjectStoreCostsTheSameWithAnySSTables),
// and a read of one family never waits for the files of another.
//
// One open at a time per file: callers that come while it is under way
// wait for it and share its outcome (a singleflight; pebble's table cache
// does the same). A failed open is not kept: the next caller tries again,
// as the next load did when the open was part of the load, so a store's
// passing error does not fail the file for good. Its error is the one the
// load returned before ("tablet: open sstable of family F: ..." wrapping
// the sstable's corruption error or fs.ErrNotExist), so a missing or
// damaged file is reported with the same error and status code as before,
// to the calls that need it (TestLazyOpenOfABadSSTableFailsAsTheLoadDid).
//
// A record without keys (a manifest of format version 1) is opened at load
// as before, and its keys are taken from the file's properties, so that
// the next manifest the tablet saves records them.

// tableFile is one SSTable of a version: the manifest's record of it and,
// once opened, its reader. It is shared by every version that lists it and
// refcounted: when the last version holding it goes, the reader is closed,
// and if the file has become obsolete and lives in the tablet's own folder
// it is deleted.
type tableFile struct {
	ref  manifest.FileRef // with its keys (HasKeys) or NumEntries 0 (an empty file)
	path string           // absolute path
	own  bool             // inside the tablet's own folder (not a split reference)
	// majorOf is the family schema of the major compaction that wrote the
	// file, nil for any other file (see nothingToDrop).
	majorOf *families.Family
	// rows are the rows the file's entries span, nil if none (runs.go).
	rows     *rowSpan
	refs     atomic.Int32
	obsolete atomic.Bool
	t        *Tablet

	// r is the reader once the file is open; read without the lock on
	// every use.
	r atomic.Pointer[sstable.Reader]
	// mu protects the fields below; never held over the open's I/O.
	mu struct {
		sync.Mutex
		opening *openCall // the open under way, nil if none
		closed  bool      // the last reference went: no more opens
	}
}

// openCall is one open of a file under way; done is closed when it ends,
// with err its failure.
type openCall struct {
	done chan struct{}
	err  error
}

// errFileClosed is a bug: a file opened after its last version let it go.
var errFileClosed = errors.New("tablet: sstable opened after it was closed")

// newTableFile returns the file of a manifest record, not opened.
func (t *Tablet) newTableFile(ref manifest.FileRef) *tableFile {
	return &tableFile{ref: ref, path: filepath.Join(t.dir, filepath.FromSlash(ref.Path)), own: manifest.IsOwnPath(ref.Path), t: t}
}

// openFile returns the file a manifest record names, placed by its keys.
// A record without them is opened now, and its keys are taken from the
// file's properties (see above); one with them is opened on first use.
func (t *Tablet) openFile(ref manifest.FileRef) (*tableFile, error) {
	f := t.newTableFile(ref)
	if !ref.HasKeys() {
		r, err := f.reader()
		if err != nil {
			return nil, err
		}
		setKeys(&f.ref, r.Properties())
	}
	f.rows = fileRowSpan(f.ref)
	return f, nil
}

// setKeys records p's entry count and key range in ref, if p has entries
// and keys a manifest accepts.
func setKeys(ref *manifest.FileRef, p *sstable.Properties) {
	if p.NumEntries == 0 || len(p.SmallestKey) == 0 || len(p.LargestKey) == 0 {
		return
	}
	ref.NumEntries, ref.SmallestKey, ref.LargestKey = p.NumEntries, p.SmallestKey, p.LargestKey
}

// reader returns the file's reader, opening the file if it is not open
// yet (see above).
func (f *tableFile) reader() (*sstable.Reader, error) {
	if r := f.r.Load(); r != nil {
		return r, nil
	}
	f.mu.Lock()
	if r := f.r.Load(); r != nil {
		f.mu.Unlock()
		return r, nil
	}
	if f.mu.closed {
		f.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", errFileClosed, f.path)
	}
	if c := f.mu.opening; c != nil {
		f.mu.Unlock()
		<-c.done
		if c.err != nil {
			return nil, c.err
		}
		return f.r.Load(), nil
	}
	c := &openCall{done: make(chan struct{})}
	f.mu.opening = c
	f.mu.Unlock()

	r, err := f.t.openReader(f.ref, f.path)

	f.mu.Lock()
	f.mu.opening = nil
	if err == nil && f.mu.closed { // cannot happen: the opener holds a reference
		_ = r.Close()
		r, err = nil, fmt.Errorf("%w: %s", errFileClosed, f.path)
	}
	if err == nil {
		f.r.Store(r)
	}
	c.err = err
	f.mu.Unlock()
	close(c.done)
	return r, err
}

// openReader opens the SSTable of ref at path.
func (t *Tablet) openReader(ref manifest.FileRef, path string) (*sstable.Reader, error) {
	// A file keeps the InMemory hint its family had when it was opened;
	// after a schema change, files written later (flush, compaction) get
	// the new one.
	fam := t.schema.Load().byName[ref.Family]
	inMemory := fam != nil && fam.InMemory
	// The size the manifest recorded spares an object store's LIST of the
	// file's parts (sstable.ReaderOptions.Size).
	r, err := sstable.Open(path, sstable.ReaderOptions{Cache: t.opts.Cache, InMemory: inMemory, FS: t.opts.FS, Size: int64(ref.Size)})
	if err != nil {
		return nil, fmt.Errorf("tablet: open sstable of family %s: %w", ref.Family, err)
	}
	return r, nil
}

// opened returns the reader if the file is open, else nil; it never opens.
func (f *tableFile) opened() *sstable.Reader { return f.r.Load() }

// metadataBytes is what the open file holds outside the block cache
// (sstable.Reader.MetadataBytes); 0 while it is not open.
func (f *tableFile) metadataBytes() int64 {
	if r := f.opened(); r != nil {
		return r.MetadataBytes()
	}
	return 0
}

// unload gives the open file's index and filter back until their next use
// (sstable.Reader.Unload), which loads them again; the file stays open. A
// file not open holds none: nothing to do.
func (f *tableFile) unload() {
	if r := f.opened(); r != nil {
		r.Unload()
	}
}

// close closes the reader, if the file was opened, and lets no open
// follow. The caller holds the last reference.
func (f *tableFile) close() {
	f.mu.Lock()
	f.mu.closed = true
	r := f.r.Swap(nil)
	f.mu.Unlock()
	if r != nil {
		_ = r.Close()
	}
}

func (f *tableFile) unref() {
	if f.refs.Add(-1) != 0 {
		return
	}
	f.close()
	if f.obsolete.Load() && f.own {
		// A snapshot's hold names it: kept until the hold is released.
		if f.t.holds.keep(f.path) {
			return
		}
		// Another owner's manifest may list the file (see guard.go): leave
		// it behind when the guard refuses.
		if !f.t.mayDelete("remove obsolete sstable") {
			return
		}
		if err := f.t.opts.FS.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.t.logger.Warn("removing obsolete sstable", "path", f.path, "err", err)
		}
	}
}

// keys returns the file's entry count and first and last keys: its
// record's, or, for a record without them, the open file's properties (a
// file whose record has no keys was opened when it was placed: openFile).
func (f *tableFile) keys() (entries uint64, smallest, largest []byte) {
	if f.ref.HasKeys() {
		return f.ref.NumEntries, f.ref.SmallestKey, f.ref.LargestKey
	}
	if r := f.opened(); r != nil {
		p := r.Properties()
		return p.NumEntries, p.SmallestKey, p.LargestKey
	}
	return 0, nil, nil
}

// lower and upper are the encoded-key bounds this tablet reads the file in.
func (f *tableFile) lower() []byte { return f.ref.Lower }
func (f *tableFile) upper() []byte { return f.ref.Upper }

// errIter is a source that failed before it read anything: a file whose
// open failed. It holds nothing and reports err.
type errIter struct{ err error }

func (e errIter) SeekGE([]byte) bool { return false }
func (e errIter) Next() bool         { return false }
func (e errIter) PrevRow() bool      { return false }
func (e errIter) Valid() bool        { return false }
func (e errIter) Key() []byte        { return nil }
func (e errIter) Value() []byte      { return nil }
func (e errIter) RowPrefix() []byte  { return nil }
func (e errIter) Err() error         { return e.err }
func (e errIter) Close() error       { return e.err }
