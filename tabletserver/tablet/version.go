package tablet

import (
	"errors"
	"io/fs"
	"sort"
	"sync/atomic"

	"github.com/tabuladb/tabula/families"
	"github.com/tabuladb/tabula/manifest"
	"github.com/tabuladb/tabula/sstable"
)

// tableFile is one open SSTable of a version: the manifest's record of it
// and its reader. It is shared by every version that lists it and
// refcounted: when the last version holding it goes, the reader is closed,
// and if the file has become obsolete and lives in the tablet's own folder
// it is deleted.
type tableFile struct {
	ref  manifest.FileRef
	path string // absolute path
	own  bool   // inside the tablet's own folder (not a split reference)
	// majorOf is the family schema of the major compaction that wrote the
	// file, nil for any other file (see nothingToDrop).
	majorOf *families.Family
	// rows are the rows the file's entries span, nil if none (runs.go).
	rows     *rowSpan
	reader   *sstable.Reader
	refs     atomic.Int32
	obsolete atomic.Bool
	t        *Tablet
}

func (f *tableFile) unref() {
	if f.refs.Add(-1) != 0 {
		return
	}
	_ = f.reader.Close()
	if f.obsolete.Load() && f.own {
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

// lower and upper are the encoded-key bounds this tablet reads the file in.
func (f *tableFile) lower() []byte { return f.ref.Lower }
func (f *tableFile) upper() []byte { return f.ref.Upper }

// version is an immutable set of SSTables per family (newest first, by
// MaxSeq). Readers hold a reference for as long as they read its files.
type version struct {
	files map[string][]*tableFile
	// runs are each family's sorted runs (runs.go), newest first.
	runs map[string][]run
	refs atomic.Int32
}

func newVersion(files map[string][]*tableFile) *version {
	v := &version{files: files, runs: make(map[string][]run, len(files))}
	for name, fs := range files {
		for _, f := range fs {
			f.refs.Add(1)
		}
		v.runs[name] = sortedRuns(fs)
	}
	v.refs.Store(1)
	return v
}

func (v *version) ref() { v.refs.Add(1) }

func (v *version) unref() {
	if v.refs.Add(-1) != 0 {
		return
	}
	for _, fs := range v.files {
		for _, f := range fs {
			f.unref()
		}
	}
}

// refs returns the manifest records of every file, families by name,
// newest first within a family.
func (v *version) fileRefs() []manifest.FileRef {
	names := make([]string, 0, len(v.files))
	for n := range v.files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []manifest.FileRef
	for _, n := range names {
		for _, f := range v.files[n] {
			out = append(out, f.ref)
		}
	}
	return out
}

// edit returns a copy of the files map with fn applied to one family's list.
func (v *version) edit(family string, fn func([]*tableFile) []*tableFile) map[string][]*tableFile {
	out := make(map[string][]*tableFile, len(v.files)+1)
	for k, fs := range v.files {
		out[k] = fs
	}
	fs := fn(append([]*tableFile(nil), v.files[family]...))
	sortNewestFirst(fs)
	if len(fs) == 0 {
		delete(out, family)
	} else {
		out[family] = fs
	}
	return out
}

func sortNewestFirst(fs []*tableFile) {
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].ref.MaxSeq > fs[j].ref.MaxSeq })
}
